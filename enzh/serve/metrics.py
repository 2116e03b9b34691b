"""The service's Prometheus metrics (names prefixed ``enzh_``; docs/server.md lists them).

What each model's batching queue does is labelled by ``model`` (its label, ``enzh-demo (fp32)``) and
``direction`` (``en-zh``; ``en-zh,zh-en`` for a model of both); the HTTP and readiness metrics are the server's.
"""

from __future__ import annotations

from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

MODEL_LABELS = ("model", "direction")


class Queue(Protocol):
    """What the queue gauges read of a scheduler."""

    @property
    def queued_units(self) -> int: ...

    @property
    def queued_tokens(self) -> int: ...

    @property
    def alive(self) -> bool: ...


class Metrics:
    """Prometheus metrics of one app (own registry, so several apps can live in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "enzh_http_requests", "HTTP responses by endpoint and status", ["endpoint", "status"], registry=r
        )
        self.request_seconds = Histogram(
            "enzh_http_request_seconds",
            "HTTP request latency",
            ["endpoint"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )
        self.rejections = Counter("enzh_rejections", "Rejected requests by reason", ["reason"], registry=r)
        self.batch_size = Histogram(
            "enzh_batch_size",
            "Sentences per batch run by the worker",
            MODEL_LABELS,
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
            registry=r,
        )
        self.batch_tokens = Histogram(
            "enzh_batch_tokens",
            "Source tokens per batch",
            MODEL_LABELS,
            buckets=(16, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
            registry=r,
        )
        self.queue_wait_seconds = Histogram(
            "enzh_queue_wait_seconds",
            "Time from submission until a request's first sentence runs",
            MODEL_LABELS,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.inference = Histogram(
            "enzh_inference_seconds",
            "Engine time per batch",
            MODEL_LABELS,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.dropped_sentences = Counter(
            "enzh_dropped_sentences",
            "Queued sentences dropped: the client left, the deadline passed, or the request failed",
            MODEL_LABELS,
            registry=r,
        )
        self.sentences = Counter("enzh_translated_sentences", "Sentences translated", MODEL_LABELS, registry=r)
        self.queue_depth = Gauge("enzh_queue_depth", "Sentences waiting for the worker", MODEL_LABELS, registry=r)
        self.queue_tokens = Gauge("enzh_queue_tokens", "Source tokens waiting for the worker", MODEL_LABELS, registry=r)
        self.in_flight = Gauge("enzh_in_flight_requests", "Translation requests being handled", registry=r)
        self.ready = Gauge("enzh_ready", "1 when /readyz answers 200", registry=r)
        self.worker_alive = Gauge(
            "enzh_worker_alive", "1 while the batching worker thread runs", MODEL_LABELS, registry=r
        )


class ModelObserver:
    """The scheduler hooks of one model (called from its worker thread): its metrics, with its labels."""

    def __init__(self, metrics: Metrics, model: str, direction: str) -> None:
        self.metrics = metrics
        self.labels = {"model": model, "direction": direction}

    def _of(self, metric: Any) -> Any:
        return metric.labels(**self.labels)

    def watch(self, queue: Queue) -> None:
        """Report ``queue``'s depth, tokens and worker on the model's gauges."""
        m = self.metrics
        self._of(m.queue_depth).set_function(lambda: queue.queued_units)
        self._of(m.queue_tokens).set_function(lambda: queue.queued_tokens)
        self._of(m.worker_alive).set_function(lambda: 1 if queue.alive else 0)

    def batch(self, units: int, tokens: int, seconds: float) -> None:
        m = self.metrics
        self._of(m.batch_size).observe(units)
        self._of(m.batch_tokens).observe(tokens)
        self._of(m.inference).observe(seconds)
        self._of(m.sentences).inc(units)

    def queue_wait(self, seconds: float) -> None:
        self._of(self.metrics.queue_wait_seconds).observe(seconds)

    def dropped(self, units: int) -> None:
        self._of(self.metrics.dropped_sentences).inc(units)
