"""The service's Prometheus metrics (names prefixed ``enzh_``; docs/server.md lists them)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


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
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
            registry=r,
        )
        self.batch_tokens = Histogram(
            "enzh_batch_tokens",
            "Source tokens per batch",
            buckets=(16, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
            registry=r,
        )
        self.queue_wait_seconds = Histogram(
            "enzh_queue_wait_seconds",
            "Time from submission until a request's first sentence runs",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.inference = Histogram(
            "enzh_inference_seconds",
            "Engine time per batch",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.dropped_sentences = Counter(
            "enzh_dropped_sentences",
            "Queued sentences dropped: the client left, the deadline passed, or the request failed",
            registry=r,
        )
        self.sentences = Counter("enzh_translated_sentences", "Sentences translated", registry=r)
        self.queue_depth = Gauge("enzh_queue_depth", "Sentences waiting for the worker", registry=r)
        self.queue_tokens = Gauge("enzh_queue_tokens", "Source tokens waiting for the worker", registry=r)
        self.in_flight = Gauge("enzh_in_flight_requests", "Translation requests being handled", registry=r)
        self.ready = Gauge("enzh_ready", "1 when /readyz answers 200", registry=r)
        self.worker_alive = Gauge("enzh_worker_alive", "1 while the batching worker thread runs", registry=r)

    # scheduler Observer hooks (called from the worker thread)
    def batch(self, units: int, tokens: int, seconds: float) -> None:
        self.batch_size.observe(units)
        self.batch_tokens.observe(tokens)
        self.inference.observe(seconds)
        self.sentences.inc(units)

    def queue_wait(self, seconds: float) -> None:
        self.queue_wait_seconds.observe(seconds)

    def dropped(self, units: int) -> None:
        self.dropped_sentences.inc(units)
