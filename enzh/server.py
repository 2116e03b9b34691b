"""The HTTP translation service: ``create_app(ServeOptions())`` and ``enzh serve``.

* The model is loaded and warmed up in the background after start-up; ``/readyz`` answers 503 until then,
  while draining (SIGTERM) and if the batching worker has died.
* Every translation request is split into sentences (paragraphs kept) whose units go to one
  :class:`enzh.scheduler.Scheduler`, which pools the sentences of all waiting requests into batches.
* Every error is JSON ``{"error": {"code", "message"}}``; bad input never gets a 5xx. Limits (body size,
  texts, characters, queue, deadline) are all in :class:`ServeOptions`. See docs/server.md.

Needs the ``serve`` extra (fastapi, uvicorn, prometheus-client).
"""

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import parse_qsl

from enzh import __version__
from enzh.scheduler import (
    EngineFailed,
    QueueFull,
    Scheduler,
    SchedulerClosed,
    SchedulerOptions,
    WorkerDead,
)
from enzh.segment import clean_text, join_parts, split_sentences

if TYPE_CHECKING:  # the web stack is imported only when an app is made, so `enzh --help` needs none of it
    from fastapi import FastAPI, Request
    from pydantic import BaseModel, ValidationError
    from starlette.responses import Response

logger = logging.getLogger("enzh.server")

STATIC_DIR = Path(__file__).resolve().parent / "static"
WARMUP_TEXT = "The weather is nice today."

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """Everything the service can be told; every limit is enforced and answered with a JSON error."""

    model_dir: str | None = None  # None: the embedded demo model
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1  # uvicorn worker processes, each with its own model and scheduler
    threads: int = 0  # ONNX Runtime intra-op threads per worker (0 = all cores)
    max_chars_per_text: int = 10_000  # 422 above
    max_texts_per_request: int = 64  # 422 above
    max_request_chars: int = 50_000  # all texts of one request together; 422 above
    max_body_bytes: int = 1 << 20  # 413 above (Content-Length or counted while streaming)
    max_queue_size: int = 1024  # sentences waiting for the worker; 429 + Retry-After above
    max_batch_tokens: int = 2048  # source tokens per batch
    max_queue_delay_ms: float = 5.0  # how long the oldest sentence may wait for a batch to fill
    request_timeout_s: float = 30.0  # deadline while queued and running; 504 after
    batching: bool = True  # False: requests are run one at a time (for the benchmark's baseline)
    default_beam_size: int | None = None  # None: the model's default (manifest.json)
    max_beam_size: int = 8
    drain_timeout_s: float = 30.0  # SIGTERM: how long in-flight work may take before the server stops
    warmup: bool = True
    handle_sigterm: bool = True  # drain on SIGTERM (only when serving from the main thread)

    def __post_init__(self) -> None:
        positive = (
            "workers",
            "max_chars_per_text",
            "max_texts_per_request",
            "max_request_chars",
            "max_body_bytes",
            "max_queue_size",
            "max_batch_tokens",
            "max_beam_size",
        )
        for name in positive:
            value = getattr(self, name)
            _check(isinstance(value, int) and value >= 1, f"{name} must be an integer >= 1, got {value!r}")
        _check(0 <= self.port <= 65535, f"port must be 0..65535, got {self.port}")
        _check(self.threads >= 0, f"threads must be >= 0 (0 = all cores), got {self.threads}")
        for name in ("max_queue_delay_ms", "drain_timeout_s"):
            value = getattr(self, name)
            _check(math.isfinite(value) and value >= 0, f"{name} must be a finite number >= 0, got {value!r}")
        _check(
            math.isfinite(self.request_timeout_s) and self.request_timeout_s > 0,
            f"request_timeout_s must be a finite number > 0, got {self.request_timeout_s!r}",
        )
        _check(
            self.default_beam_size is None or 1 <= self.default_beam_size <= self.max_beam_size,
            f"default_beam_size must be 1..max_beam_size ({self.max_beam_size}), got {self.default_beam_size}",
        )

    def scheduler_options(self) -> SchedulerOptions:
        return SchedulerOptions(
            max_batch_tokens=self.max_batch_tokens,
            max_queue_delay_ms=self.max_queue_delay_ms,
            max_queue_size=self.max_queue_size,
            batching=self.batching,
        )


# -- errors ------------------------------------------------------------------------------------------------


class ApiError(Exception):
    """An error answered as ``{"error": {"code", "message"}}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


class BodyTooLarge(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(413, "body_too_large", f"the request body is larger than {limit} bytes")


def _json_bytes(content: Any) -> bytes:
    text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: escape instead of failing
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> "Response":
    """JSON that is always valid UTF-8, whatever strings it holds."""
    from starlette.responses import Response

    return Response(_json_bytes(content), status_code=status, headers=headers, media_type="application/json")


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> "Response":
    return json_response({"error": {"code": code, "message": message}}, status, headers)


_STATUS_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "queue_full",
    500: "internal_error",
    503: "unavailable",
    504: "timeout",
}


# -- raw ASGI middleware -------------------------------------------------------------------------------------


# How much of an oversized body is read and thrown away around a 413. Closing a connection with unread request
# bytes makes the kernel reset it, and a reset can destroy the 413 the client has not read yet; past this many
# bytes, or when the client pauses this long, it is cut off instead (it may then see a reset, not the 413).
DRAIN_BYTES = 64 * 1024 * 1024
DRAIN_IDLE_S = 1.0


async def _drain(receive: Receive, message: Message) -> None:
    """Read and discard the rest of a request body (after ``message``) within the limits above."""
    budget = DRAIN_BYTES
    while message["type"] == "http.request" and message.get("more_body", False) and budget > 0:
        try:
            message = await asyncio.wait_for(receive(), DRAIN_IDLE_S)
        except TimeoutError:
            return
        budget -= len(message.get("body", b""))


class BodyLimitMiddleware:
    """413 for bodies over ``max_bytes``: from Content-Length before reading, else counted while streaming.

    The body is never buffered here; an oversized streamed body raises :class:`BodyTooLarge` from
    ``receive()`` inside the endpoint that reads it. The rest of an oversized body is read and discarded (see
    :data:`DRAIN_BYTES`) so that the client receives the 413 rather than a connection reset: after the 413 is
    written when Content-Length gave the size away, before it otherwise.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, on_reject: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = None
        expects_continue = False  # such a client waits for our answer before it sends the body: nothing to drain
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = None
            elif name == b"expect":
                expects_continue = value.lower() == b"100-continue"
        if declared is not None and declared > self.max_bytes:
            if self.on_reject:
                self.on_reject("body_too_large")
            response = error_response(413, "body_too_large", f"the request body is larger than {self.max_bytes} bytes")
            response.headers["connection"] = "close"
            if expects_continue:
                await response(scope, receive, send)
                return
            # The whole 413 goes out now; the response is completed (and the connection closed) only once the
            # body the client is already sending has been read and thrown away.
            await send({"type": "http.response.start", "status": 413, "headers": response.raw_headers})
            await send({"type": "http.response.body", "body": response.body, "more_body": True})
            await _drain(receive, {"type": "http.request", "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        received = 0
        limit = self.max_bytes

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    if self.on_reject:
                        self.on_reject("body_too_large")
                    await _drain(receive, message)
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, limited_receive, send)


class MetricsMiddleware:
    """Count every response by route and status, including those the router or the body limit made."""

    def __init__(self, app: ASGIApp, metrics: "Metrics", routes: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = path if path in self.routes else "other"
        start = time.perf_counter()
        status = 500

        async def counting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            self.metrics.requests.labels(endpoint=endpoint, status=str(status)).inc()
            self.metrics.request_seconds.labels(endpoint=endpoint).observe(time.perf_counter() - start)


# -- metrics -----------------------------------------------------------------------------------------------


class Metrics:
    """Prometheus metrics of one app (own registry, so several apps can live in one process)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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


# -- request and response models (limits come from ServeOptions) ----------------------------------------------


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _api_models(options: ServeOptions) -> SimpleNamespace:
    """Request and response models; request limits come from ``options`` (so the OpenAPI schema shows them)."""
    from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

    class ErrorDetail(BaseModel):
        code: str
        message: str

    class ErrorBody(BaseModel):
        error: ErrorDetail

    class Timing(BaseModel):
        total: float = Field(description="milliseconds from the request's arrival to its response")
        queue: float = Field(description="milliseconds waiting for the worker")
        inference: float = Field(description="this request's share of batch inference time, milliseconds")

    class TranslateResponse(BaseModel):
        translations: list[str]
        model: str
        target: str
        beam_size: int
        sentences: int = Field(description="sentences translated (after splitting)")
        timing_ms: Timing

    class LibreResponse(BaseModel):
        translatedText: str | list[str]  # LibreTranslate's field names
        detectedLanguage: dict[str, Any] | None = None

    class Language(BaseModel):
        code: str
        name: str
        targets: list[str]

    class Health(BaseModel):
        status: str
        model: str | None = None
        detail: str | None = None

    Text = Annotated[str, StringConstraints(max_length=options.max_chars_per_text)]
    Texts = Annotated[list[Text], Field(max_length=options.max_texts_per_request)]
    # JSON Schema counts 2.0 as an integer, so an integral float is one; 2.5, "2" and true are not.
    Int = Annotated[int, BeforeValidator(_integral)]
    Beam = Annotated[int, Field(ge=1, le=options.max_beam_size), BeforeValidator(_integral)]

    class TranslateRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, title="TranslateRequest")

        text: Text | Texts = Field(description="English text (sentences and paragraphs are kept) or a list of texts")
        target: Literal["zh-Hans", "zh-Hant"] = Field("zh-Hans", description="Simplified or Traditional")
        beam_size: Beam | None = Field(None, description="beam width (default: the model's)")

    class LibreRequest(BaseModel):
        model_config = ConfigDict(extra="allow", strict=True, title="LibreTranslateRequest")

        q: Text | Texts = Field(description="text or list of texts to translate")
        source: Literal["en", "auto"] = "en"
        target: Literal["zh", "zh-Hans", "zh-CN", "zh-Hant", "zh-TW", "zt"] = "zh-Hans"
        format: Literal["text"] = "text"
        api_key: str | None = Field(None, description="accepted and ignored")
        alternatives: Int | None = Field(None, description="accepted and ignored")

    return SimpleNamespace(
        ErrorBody=ErrorBody,
        TranslateResponse=TranslateResponse,
        LibreResponse=LibreResponse,
        Languages=list[Language],
        Health=Health,
        TranslateRequest=TranslateRequest,
        LibreRequest=LibreRequest,
    )


_LIBRE_TARGETS = {"zh": "zh-Hans", "zh-CN": "zh-Hans", "zh-TW": "zh-Hant", "zt": "zh-Hant"}
_NEWLINE = re.compile(r"(\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])")


# -- the service -------------------------------------------------------------------------------------------


@dataclass
class _Prepared:
    sources: list[list[int]]
    layouts: list[list[str | list[int]]]  # per text: literal separators and unit slots to join
    sentences: int


class Service:
    """State shared by the routes: model, scheduler, readiness, drain, metrics."""

    def __init__(self, options: ServeOptions, translator: Any = None) -> None:
        self.options = options
        self.translator = translator
        self.metrics = Metrics()
        self.scheduler: Scheduler | None = None
        self.ready = False
        self.draining = False
        self.load_error: str | None = None
        self.in_flight = 0
        self.model_name = "unknown"
        self.default_beam = 1
        m = self.metrics
        m.queue_depth.set_function(lambda: self.scheduler.queued_units if self.scheduler else 0)
        m.queue_tokens.set_function(lambda: self.scheduler.queued_tokens if self.scheduler else 0)
        m.in_flight.set_function(lambda: self.in_flight)
        m.ready.set_function(lambda: 1 if self.state()[0] == "ready" else 0)
        m.worker_alive.set_function(lambda: 1 if self.scheduler is not None and self.scheduler.alive else 0)

    # -- lifecycle --------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the model (unless given), start the worker, warm up; then report ready."""
        loop = asyncio.get_running_loop()
        try:
            if self.translator is None:
                self.translator = await loop.run_in_executor(None, self._load)
            translator = self.translator
            self.model_name = _model_name(translator)
            generation = getattr(getattr(translator, "adapter", None), "generation", {}) or {}
            self.default_beam = self.options.default_beam_size or int(generation.get("num_beams", 1))
            self.default_beam = min(self.default_beam, self.options.max_beam_size)
            self.scheduler = Scheduler(self._engine, self.options.scheduler_options(), observer=self.metrics)
            self.scheduler.start()
            if self.options.warmup:
                for beam in sorted({1, self.default_beam}):
                    await self.translate([WARMUP_TEXT], target=None, beam_size=beam, deadline=time.monotonic() + 300)
            self.ready = True
            logger.info("ready: %s", self.model_name)
        except Exception as exc:  # reported by /readyz and /livez; the process stays up to say so
            self.load_error = f"{type(exc).__name__}: {exc}"
            logger.exception("loading the model failed")

    def _load(self) -> Any:
        from enzh.translator import Translator

        return Translator.load(
            self.options.model_dir,
            intra_op_threads=self.options.threads,
            max_batch_tokens=self.options.max_batch_tokens,
        )

    def _engine(self, sources: list[list[int]], beam_size: int | None) -> list[str]:
        translator = self.translator
        hyps = translator.generate_ids(sources, beam_size=beam_size)
        texts: list[str] = translator.tokenizer.decode_batch([h.token_ids for h in hyps])
        return texts

    async def stop(self) -> None:
        self.draining = True
        if self.scheduler is not None:
            scheduler = self.scheduler
            await asyncio.get_running_loop().run_in_executor(None, scheduler.close, self.options.drain_timeout_s)

    def state(self) -> tuple[str, str]:
        """(status, detail): status is ready, loading, draining, load_failed or worker_dead."""
        if self.load_error is not None:
            return "load_failed", self.load_error
        if self.scheduler is not None and self.scheduler.death is not None:
            return "worker_dead", f"the batching worker died: {type(self.scheduler.death).__name__}"
        if self.scheduler is not None and self.ready and not self.scheduler.alive:
            return "worker_dead", "the batching worker is not running"
        if self.draining:
            return "draining", "the server is shutting down"
        if not self.ready:
            return "loading", "the model is loading and warming up"
        return "ready", "ok"

    async def drain(self, then: Callable[[], None]) -> None:
        """Refuse new work, let in-flight requests finish (up to drain_timeout_s), then call ``then``."""
        self.draining = True
        logger.info("draining: %d request(s) in flight", self.in_flight)
        deadline = time.monotonic() + self.options.drain_timeout_s
        while time.monotonic() < deadline and (
            self.in_flight > 0 or (self.scheduler is not None and self.scheduler.busy)
        ):
            await asyncio.sleep(0.05)
        logger.info("drained (%d request(s) still in flight); stopping", self.in_flight)
        then()

    # -- translation -----------------------------------------------------------------------------------

    def admit(self) -> None:
        status, detail = self.state()
        if status == "ready":
            return
        if status == "loading":
            raise ApiError(503, "not_ready", detail, {"Retry-After": "1"})
        if status == "draining":
            raise ApiError(503, "draining", detail, {"Retry-After": "5"})
        raise ApiError(503, status, detail, {"Retry-After": "30"})

    def resolve_target(self, target: str | None) -> str | None:
        adapter = self.translator.adapter
        if not adapter.language_tokens and target in (None, "zh-Hans"):
            return None  # a model without target tokens translates to its only target
        try:
            token: str | None = adapter.resolve_target(target)
        except ValueError as exc:
            raise ApiError(422, "unsupported_target", str(exc)) from None
        return token

    def prepare(self, texts: list[str], token: str | None) -> _Prepared:
        """Split every text into lines and sentences, and encode each sentence into units (CPU, no model)."""
        translator = self.translator
        sources: list[list[int]] = []
        layouts: list[list[str | list[int]]] = []
        sentences = 0
        for raw in texts:
            text = clean_text(raw)
            layout: list[str | list[int]] = []
            if text.strip():
                for piece in _NEWLINE.split(text):
                    if _NEWLINE.fullmatch(piece):
                        layout.append(piece)
                        continue
                    slots: list[int] = []
                    for sentence in split_sentences(piece):
                        sentences += 1
                        # the translator's own encoding: one unit, or several parts if the sentence is too long
                        for ids in translator._encode_parts(sentence, token):
                            slots.append(len(sources))
                            sources.append(ids)
                    layout.append(slots)
            layouts.append(layout)
        return _Prepared(sources, layouts, sentences)

    async def translate(
        self,
        texts: list[str],
        *,
        target: str | None,
        beam_size: int | None,
        deadline: float,
        request: "Request | None" = None,
    ) -> tuple[list[str], int, dict[str, float]]:
        """Translate ``texts`` through the scheduler; returns (translations, sentences, timing in ms)."""
        arrived = time.monotonic()
        assert self.scheduler is not None
        token = self.resolve_target(target)
        total_chars = sum(len(t) for t in texts)
        if total_chars > self.options.max_request_chars:
            raise ApiError(
                422,
                "request_too_long",
                f"the texts hold {total_chars} characters together; the limit is {self.options.max_request_chars}",
            )
        loop = asyncio.get_running_loop()
        if total_chars > 2000:  # keep the event loop free while a long document is tokenized
            prepared = await loop.run_in_executor(None, self.prepare, texts, token)
        else:
            prepared = self.prepare(texts, token)
        try:
            job = self.scheduler.submit(prepared.sources, beam_size)
        except QueueFull as exc:
            self.metrics.rejections.labels(reason="queue_full").inc()
            raise ApiError(429, "queue_full", str(exc), {"Retry-After": str(exc.retry_after)}) from None
        except SchedulerClosed as exc:
            raise ApiError(503, "draining", str(exc), {"Retry-After": "5"}) from None
        except WorkerDead as exc:
            raise ApiError(503, "worker_dead", str(exc), {"Retry-After": "30"}) from None

        waiters: set[asyncio.Future[Any]] = {job.future}
        gone: asyncio.Task[None] | None = None
        if request is not None:
            gone = asyncio.ensure_future(_wait_disconnect(request))
            waiters.add(gone)
        try:
            done, _ = await asyncio.wait(
                waiters, timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            if gone is not None:
                gone.cancel()
        if job.future not in done:
            self.scheduler.cancel(job)
            if gone is not None and gone in done:
                self.metrics.rejections.labels(reason="client_gone").inc()
                raise ApiError(499, "client_gone", "the client closed the connection")
            self.metrics.rejections.labels(reason="timeout").inc()
            raise ApiError(504, "timeout", f"the translation did not finish within {self.options.request_timeout_s} s")
        try:
            results = job.future.result()
        except WorkerDead as exc:
            raise ApiError(503, "worker_dead", str(exc), {"Retry-After": "30"}) from None
        except EngineFailed as exc:
            raise ApiError(500, "internal_error", str(exc)) from None
        outputs = [
            "".join(part if isinstance(part, str) else join_parts([results[s] for s in part]) for part in layout)
            for layout in prepared.layouts
        ]
        started = job.started_at if job.started_at is not None else time.monotonic()
        timing = {
            "queue": round(max(0.0, started - job.enqueued_at) * 1000, 3),
            "inference": round(job.inference_seconds * 1000, 3),
            "total": round((time.monotonic() - arrived) * 1000, 3),
        }
        return outputs, prepared.sentences, timing


async def _wait_disconnect(request: "Request") -> None:
    """Return when the client has gone (the body has already been read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def _model_name(translator: Any) -> str:
    manifest = getattr(translator, "manifest", None)
    if manifest is None:
        return type(translator).__name__
    from enzh.default_model import DEMO_SOURCE

    source = str(manifest.source.get("id") or "")
    name = "enzh-demo" if source and Path(source) == DEMO_SOURCE else (source or Path(translator.directory).name)
    return f"{name} ({manifest.precision})"


# -- body parsing ------------------------------------------------------------------------------------------


def _media_type(request: "Request") -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _is_json(media: str) -> bool:
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def _read_body(request: "Request") -> bytes:
    chunks = []
    async for chunk in request.stream():  # BodyLimitMiddleware raises BodyTooLarge past the limit
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_json(body: bytes) -> Any:
    if not body.strip():
        raise ApiError(400, "invalid_json", "the request body is empty; send a JSON object")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, absurd nesting
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise ApiError(400, "invalid_json", f"the request body is not valid JSON: {message}") from None


def _parse_form(body: bytes) -> dict[str, Any]:
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise ApiError(400, "invalid_form", "the form body is not valid UTF-8 url-encoded data") from None
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key == "alternatives":
            data[key] = int(value) if value.strip().lstrip("-").isdigit() else value
        elif key in data and key == "q":
            data[key] = [*data[key], value] if isinstance(data[key], list) else [data[key], value]
        else:
            data[key] = value
    return data


def _validation_error(exc: "ValidationError", options: ServeOptions) -> ApiError:
    """A readable 422 from pydantic errors (never echoing the input)."""
    errors = exc.errors(include_url=False, include_input=False)
    types = {e.get("type") for e in errors}
    fields = {str(e["loc"][0]) for e in errors if e.get("loc")}
    if fields & {"text", "q"} and "string_too_long" in types:
        return ApiError(422, "text_too_long", f"a text may hold at most {options.max_chars_per_text} characters")
    if fields & {"text", "q"} and "too_long" in types:
        return ApiError(422, "too_many_texts", f"a request may hold at most {options.max_texts_per_request} texts")
    parts = []
    for field in sorted(fields) or ["body"]:
        own = [e for e in errors if (str(e["loc"][0]) if e.get("loc") else "body") == field]
        if field in ("text", "q") and any(e.get("type") != "missing" for e in own):
            parts.append(f"{field}: must be a string or a list of strings")
        elif any(e.get("type") == "extra_forbidden" for e in own):
            parts.append(f"{field}: unknown field")
        else:
            indices = "".join(f"[{x}]" for x in own[0].get("loc", ())[1:] if isinstance(x, int))
            parts.append(f"{field}{indices}: {own[0].get('msg', 'invalid')}")
    return ApiError(422, "invalid_request", "; ".join(parts))


def _clean_strings(value: Any) -> Any:
    """Lone surrogates (legal in JSON escapes, not in UTF-8) become U+FFFD everywhere in a parsed body."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean_strings(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): _clean_strings(v) for k, v in value.items()}
    return value


def _validate(model: "type[BaseModel]", data: Any, options: ServeOptions) -> Any:
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", f"the body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(_clean_strings(data))
    except RecursionError:
        raise ApiError(422, "invalid_request", "the body is nested too deeply") from None
    except ValidationError as exc:
        raise _validation_error(exc, options) from None


def _error_responses(error_model: "type[BaseModel]", *statuses: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        400: "invalid JSON or form body",
        404: "no such path",
        413: "body larger than max_body_bytes",
        415: "unsupported Content-Type",
        422: "wrong types, unknown fields, or a limit exceeded (texts, characters, beam size, target)",
        429: "queue full; see Retry-After",
        500: "internal error (a bug; never caused by input)",
        503: "not ready, draining, or the worker has died; see Retry-After",
        504: "deadline passed while queued or running",
    }
    retry = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "string"}}}
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": error_model, "description": descriptions[status]}
        if status in (429, 503):
            entry["headers"] = retry
        out[status] = entry
    return out


def _json_body(model: "type[BaseModel]", *, form: bool = False) -> dict[str, Any]:
    schema = model.model_json_schema()
    content = {"application/json": {"schema": schema}}
    if form:
        content["application/x-www-form-urlencoded"] = {"schema": _form_schema(schema)}
    return {"requestBody": {"required": True, "content": content}}


def _form_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A form has no null and no lists: each field keeps its first scalar, non-null alternative."""
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        prop = dict(prop)
        options = prop.pop("anyOf", None)
        if options:
            scalar = next(o for o in options if o.get("type") not in ("null", "array"))
            prop.update(scalar)
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        properties[name] = prop
    return {**schema, "properties": properties}


# -- the app -----------------------------------------------------------------------------------------------


def create_app(options: ServeOptions | None = None, translator: Any = None) -> "FastAPI":
    """The ASGI app. ``translator``: an already loaded :class:`enzh.translator.Translator` (else loaded from
    ``options.model_dir`` in the background after start-up; /readyz says when it is ready)."""
    try:
        from fastapi import FastAPI, Request
        from fastapi.exceptions import RequestValidationError
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
        from starlette.exceptions import HTTPException as StarletteHTTPException
        from starlette.responses import HTMLResponse, Response
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RuntimeError(f"the server needs the serve extra: pip install 'enzh-onnx[serve]' ({exc})") from exc

    options = options or ServeOptions()
    service = Service(options, translator)
    models = _api_models(options)
    TranslateRequest, LibreRequest = models.TranslateRequest, models.LibreRequest
    loading: list[asyncio.Task[None]] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading.append(asyncio.create_task(service.start()))
        if options.handle_sigterm:
            _install_sigterm(service, asyncio.get_running_loop())
        try:
            yield
        finally:
            service.draining = True
            for task in loading:
                task.cancel()
            await service.stop()

    app = FastAPI(
        title="enzh translation service",
        version=__version__,
        description="English to Chinese translation with dynamic batching across requests. See docs/server.md.",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.service = service

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        if exc.status in (400, 413, 415, 422) or exc.code in ("draining", "not_ready", "worker_dead"):
            service.metrics.rejections.labels(reason=exc.code).inc()
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = _STATUS_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return error_response(exc.status_code, code, message, dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return error_response(422, "invalid_request", "invalid request parameters")

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        logger.exception("unhandled error on %s", request.url.path)
        return error_response(500, "internal_error", f"internal error: {type(exc).__name__}")

    async def read_payload(request: Request, *, form: bool) -> Any:
        media = _media_type(request)
        if _is_json(media):
            return _parse_json(await _read_body(request))
        if form and media == "application/x-www-form-urlencoded":
            return _parse_form(await _read_body(request))
        accepted = "application/json" + (" or application/x-www-form-urlencoded" if form else "")
        raise ApiError(415, "unsupported_media_type", f"Content-Type must be {accepted}, got {media or 'none'!r}")

    async def run_translation(
        request: Request, texts: list[str], target: str, beam_size: int | None, arrived: float
    ) -> tuple[list[str], int, dict[str, float], int]:
        service.admit()
        beam = beam_size or service.default_beam
        service.in_flight += 1
        try:
            outputs, sentences, timing = await service.translate(
                texts, target=target, beam_size=beam, deadline=arrived + options.request_timeout_s, request=request
            )
        finally:
            service.in_flight -= 1
        timing["total"] = round((time.monotonic() - arrived) * 1000, 3)
        return outputs, sentences, timing, beam

    @app.post(
        "/v1/translate",
        response_model=models.TranslateResponse,
        responses=_error_responses(models.ErrorBody, 400, 413, 415, 422, 429, 500, 503, 504),
        openapi_extra=_json_body(TranslateRequest),
        summary="Translate English text (or a list of texts) to Chinese",
        tags=["translate"],
    )
    async def translate_v1(request: Request) -> Response:
        arrived = time.monotonic()
        body = _validate(TranslateRequest, await read_payload(request, form=False), options)
        texts = [body.text] if isinstance(body.text, str) else list(body.text)
        outputs, sentences, timing, beam = await run_translation(request, texts, body.target, body.beam_size, arrived)
        payload = {
            "translations": outputs,
            "model": service.model_name,
            "target": body.target,
            "beam_size": beam,
            "sentences": sentences,
            "timing_ms": timing,
        }
        return json_response(payload)

    @app.post(
        "/translate",
        response_model=models.LibreResponse,
        response_model_exclude_none=True,
        responses=_error_responses(models.ErrorBody, 400, 413, 415, 422, 429, 500, 503, 504),
        openapi_extra=_json_body(LibreRequest, form=True),
        summary="LibreTranslate-compatible translation",
        tags=["libretranslate"],
    )
    async def translate_libre(request: Request) -> Response:
        arrived = time.monotonic()
        body = _validate(LibreRequest, await read_payload(request, form=True), options)
        texts = [body.q] if isinstance(body.q, str) else list(body.q)
        target = _LIBRE_TARGETS.get(body.target, body.target)
        outputs, _, _, _ = await run_translation(request, texts, target, None, arrived)
        payload: dict[str, Any] = {"translatedText": outputs[0] if isinstance(body.q, str) else outputs}
        if body.source == "auto":
            payload["detectedLanguage"] = {"confidence": 100.0, "language": "en"}
        return json_response(payload)

    @app.get("/languages", response_model=models.Languages, tags=["libretranslate"], summary="Supported languages")
    async def languages() -> Response:
        targets = ["zh-Hans", "zh-Hant"]
        if service.translator is not None:
            tokens = service.translator.adapter.language_tokens
            targets = [t for t in targets if not tokens or service.translator.adapter.resolve_target(t) in tokens]
        names = {"zh-Hans": "Chinese (Simplified)", "zh-Hant": "Chinese (Traditional)"}
        body = [{"code": "en", "name": "English", "targets": targets}]
        body += [{"code": t, "name": names[t], "targets": []} for t in targets]
        return json_response(body)

    @app.get("/livez", response_model=models.Health, responses=_error_responses(models.ErrorBody, 503), tags=["health"])
    async def livez() -> Response:
        status, detail = service.state()
        if status in ("load_failed", "worker_dead"):
            return json_response({"status": status, "detail": detail}, 503)
        return json_response({"status": "alive"})

    @app.get(
        "/readyz", response_model=models.Health, responses=_error_responses(models.ErrorBody, 503), tags=["health"]
    )
    async def readyz() -> Response:
        status, detail = service.state()
        if status != "ready":
            headers = {"Retry-After": "1" if status == "loading" else "5"}
            return json_response({"status": status, "detail": detail}, 503, headers)
        return json_response({"status": "ready", "model": service.model_name})

    @app.get(
        "/metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
        tags=["health"],
    )
    async def metrics() -> Response:
        return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> Response:
        return HTMLResponse((STATIC_DIR / "index.html").read_text(encoding="utf-8"))

    routes = frozenset(
        {"/", "/v1/translate", "/translate", "/languages", "/livez", "/readyz", "/metrics", "/docs", "/openapi.json"}
    )

    def reject(reason: str) -> None:
        service.metrics.rejections.labels(reason=reason).inc()

    # Outermost first: metrics see every response, including the body limit's 413.
    app.add_middleware(BodyLimitMiddleware, max_bytes=options.max_body_bytes, on_reject=reject)
    app.add_middleware(MetricsMiddleware, metrics=service.metrics, routes=routes)
    return app


def _install_sigterm(service: Service, loop: asyncio.AbstractEventLoop) -> None:
    """SIGTERM: flip readiness, refuse new work, let in-flight work finish, then hand the signal on."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def hand_on(sig: int, frame: FrameType | None) -> None:
        if callable(previous):
            previous(sig, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    def on_sigterm(sig: int, frame: FrameType | None) -> None:
        if service.draining:  # a second SIGTERM: stop now
            hand_on(sig, frame)
            return
        service.draining = True
        loop.call_soon_threadsafe(lambda: loop.create_task(service.drain(lambda: hand_on(sig, frame))))

    signal.signal(signal.SIGTERM, on_sigterm)


# -- command line ------------------------------------------------------------------------------------------


def add_serve_parser(sub: Any) -> None:
    """Add ``enzh serve`` to the CLI's subparsers."""
    defaults = ServeOptions()
    p = sub.add_parser("serve", help="run the HTTP translation service (needs the serve extra)")
    p.add_argument("--model", help="exported model directory (default: the embedded demo model)")
    p.add_argument("--host", default=defaults.host, help=f"default {defaults.host}")
    p.add_argument("--port", type=int, default=defaults.port, help=f"default {defaults.port}")
    p.add_argument("--workers", type=int, default=defaults.workers, help="worker processes, each with its own model")
    p.add_argument("--threads", type=int, default=defaults.threads, help="ONNX Runtime threads per worker (0 = all)")
    p.add_argument("--max-batch-tokens", type=int, default=defaults.max_batch_tokens)
    p.add_argument("--max-queue-delay-ms", type=float, default=defaults.max_queue_delay_ms)
    p.add_argument("--max-queue-size", type=int, default=defaults.max_queue_size, help="sentences waiting")
    p.add_argument("--max-chars-per-text", type=int, default=defaults.max_chars_per_text)
    p.add_argument("--max-texts-per-request", type=int, default=defaults.max_texts_per_request)
    p.add_argument("--max-request-chars", type=int, default=defaults.max_request_chars)
    p.add_argument("--max-body-bytes", type=int, default=defaults.max_body_bytes)
    p.add_argument("--request-timeout-s", type=float, default=defaults.request_timeout_s)
    p.add_argument("--beam-size", type=int, help="default beam width (default: the model's)")
    p.add_argument("--max-beam-size", type=int, default=defaults.max_beam_size)
    p.add_argument("--drain-timeout-s", type=float, default=defaults.drain_timeout_s)
    p.add_argument("--no-batching", action="store_true", help="run requests one at a time (benchmark baseline)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    return ServeOptions(
        model_dir=args.model,
        host=args.host,
        port=args.port,
        workers=args.workers,
        threads=args.threads,
        max_batch_tokens=args.max_batch_tokens,
        max_queue_delay_ms=args.max_queue_delay_ms,
        max_queue_size=args.max_queue_size,
        max_chars_per_text=args.max_chars_per_text,
        max_texts_per_request=args.max_texts_per_request,
        max_request_chars=args.max_request_chars,
        max_body_bytes=args.max_body_bytes,
        request_timeout_s=args.request_timeout_s,
        default_beam_size=args.beam_size,
        max_beam_size=args.max_beam_size,
        drain_timeout_s=args.drain_timeout_s,
        batching=not args.no_batching,
    )


_ENV_OPTIONS = "ENZH_SERVE_OPTIONS"


def app_from_env() -> "FastAPI":
    """uvicorn factory for worker processes: options come as JSON in $ENZH_SERVE_OPTIONS."""
    return create_app(ServeOptions(**json.loads(os.environ.get(_ENV_OPTIONS, "{}"))))


def serve(options: ServeOptions, log_level: str = "info") -> None:
    """Run the service with uvicorn (blocks until SIGTERM/SIGINT and the drain are over)."""
    import uvicorn

    if options.model_dir is None:
        from enzh.default_model import default_model_dir

        options = dataclasses.replace(options, model_dir=str(default_model_dir()))  # export once, before any worker
    from enzh.manifest import Manifest

    Manifest.load(Path(options.model_dir or ".")).verify_files(Path(options.model_dir or "."), check_hashes=False)
    common: dict[str, Any] = dict(
        host=options.host,
        port=options.port,
        log_level=log_level,
        timeout_graceful_shutdown=int(options.drain_timeout_s) + 5,
        access_log=False,
    )
    if options.workers > 1:
        os.environ[_ENV_OPTIONS] = json.dumps(dataclasses.asdict(options))
        uvicorn.run("enzh.server:app_from_env", factory=True, workers=options.workers, **common)
    else:
        uvicorn.run(create_app(options), **common)


def cmd_serve(args: argparse.Namespace) -> int:
    serve(options_from_args(args), log_level=args.log_level)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m enzh.server`` = ``enzh serve``."""
    parser = argparse.ArgumentParser(prog="enzh serve")
    add_serve_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["serve", *(argv if argv is not None else sys.argv[1:])])
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    return cmd_serve(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
