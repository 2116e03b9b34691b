"""The state behind the routes: model loading and readiness, drain, and translating requests.

A request's texts are checked against the limits, split into lines and sentences, encoded into units, and
submitted to one :class:`enzh.serve.scheduler.Scheduler`, which pools the units of all waiting requests into
batches; the request then waits for its results, its client's disconnect or its deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from enzh.runtime.engine import Engine
from enzh.serve.errors import ApiError
from enzh.serve.metrics import Metrics
from enzh.serve.options import ServeOptions
from enzh.serve.scheduler import EngineFailed, Job, QueueFull, Scheduler, SchedulerClosed, WorkerDead

logger = logging.getLogger("enzh")

WARMUP_TEXT = "The weather is nice today."


@dataclass
class _Prepared:
    sources: list[list[int]]  # every model input of the request, in order
    texts: list[Any]  # per text: the translator's PreparedText (sentences and layout)
    sentences: int


@dataclass(frozen=True)
class Answer:
    """One translation request's result, as the routes report it."""

    translations: list[str]
    sentences: int
    timing_ms: dict[str, float]
    beam_size: int


class Service:
    """State shared by the routes: model, scheduler, readiness, drain, metrics.

    ``translator``: a loaded :class:`enzh.runtime.engine.Engine` (a :class:`enzh.runtime.translator.Translator`
    or a stand-in); None: loaded from ``options.model_dir`` by :meth:`start`.
    """

    def __init__(self, options: ServeOptions, translator: Engine | None = None) -> None:
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
            self.model_name = self.engine.info.label
            self.default_beam = self.options.default_beam_size or self.engine.info.default_beam_size
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

    def _load(self) -> Engine:
        from enzh.runtime.translator import Translator

        return Translator.load(
            self.options.model_dir,
            intra_op_threads=self.options.threads,
            max_batch_tokens=self.options.max_batch_tokens,
        )

    def _engine(self, sources: list[list[int]], beam_size: int | None, target: str | None = None) -> list[str]:
        translator = self.engine
        hyps = translator.generate_ids(sources, beam_size=beam_size, target=target)
        return translator.decode([h.token_ids for h in hyps])

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

    async def handle(
        self, request: Request, texts: list[str], *, target: str, beam_size: int | None, arrived: float
    ) -> Answer:
        """A route's translation: admitted only when ready, counted in flight, due ``request_timeout_s`` after
        ``arrived`` (monotonic)."""
        self.admit()
        beam = beam_size or self.default_beam
        self.in_flight += 1
        try:
            deadline = arrived + self.options.request_timeout_s
            outputs, sentences, timing = await self.translate(
                texts, target=target, beam_size=beam, deadline=deadline, request=request
            )
        finally:
            self.in_flight -= 1
        timing["total"] = round((time.monotonic() - arrived) * 1000, 3)
        return Answer(outputs, sentences, timing, beam)

    def admit(self) -> None:
        status, detail = self.state()
        if status == "ready":
            return
        if status == "loading":
            raise ApiError(503, "not_ready", detail, {"Retry-After": "1"})
        if status == "draining":
            raise ApiError(503, "draining", detail, {"Retry-After": "5"})
        raise ApiError(503, status, detail, {"Retry-After": "30"})

    @property
    def engine(self) -> Engine:
        """The loaded translator (only once :meth:`start` has loaded it)."""
        if self.translator is None:
            raise RuntimeError("the model is not loaded yet")
        return self.translator

    def resolve_target(self, target: str | None) -> str | None:
        engine = self.engine
        if not engine.info.targets and target in (None, "zh-Hans"):
            return None  # a model without target tokens translates to its only target
        try:
            token: str | None = engine.resolve_target(target)
        except ValueError as exc:
            raise ApiError(422, "unsupported_target", str(exc)) from None
        return token

    def check_request_chars(self, texts: list[str]) -> int:
        """The characters of a request's texts together; 422 over ``max_request_chars``."""
        total = sum(len(t) for t in texts)
        if total > self.options.max_request_chars:
            raise ApiError(
                422,
                "request_too_long",
                f"the texts hold {total} characters together; the limit is {self.options.max_request_chars}",
            )
        return total

    def prepare(self, texts: list[str], token: str | None) -> _Prepared:
        """Segment every text the way the translator does (the one segmentation stage of every entry point) and
        collect the model inputs of all its sentences (CPU, no model)."""
        prepared = [self.engine.prepare_text(text, token) for text in texts]
        sources = [ids for text in prepared for piece in text.sources for ids in piece]
        sentences = sum(1 for text in prepared for piece in text.sources if piece)
        return _Prepared(sources, prepared, sentences)

    async def translate(
        self,
        texts: list[str],
        *,
        target: str | None,
        beam_size: int | None,
        deadline: float,
        request: Request | None = None,
    ) -> tuple[list[str], int, dict[str, float]]:
        """Translate ``texts`` through the scheduler; returns (translations, sentences, timing in ms)."""
        arrived = time.monotonic()
        assert self.scheduler is not None
        token = self.resolve_target(target)
        total_chars = self.check_request_chars(texts)
        if total_chars > 2000:  # keep the event loop free while a long document is tokenized
            prepared = await asyncio.get_running_loop().run_in_executor(None, self.prepare, texts, token)
        else:
            prepared = self.prepare(texts, token)
        job = self._submit(self.scheduler, prepared, beam_size, token)
        results = await self._results(self.scheduler, job, deadline, request)
        done = iter(results)
        outputs = [
            self.engine.assemble_text(text, [[next(done) for _ in piece] for piece in text.sources])
            for text in prepared.texts
        ]
        started = job.started_at if job.started_at is not None else time.monotonic()
        timing = {
            "queue": round(max(0.0, started - job.enqueued_at) * 1000, 3),
            "inference": round(job.inference_seconds * 1000, 3),
            "total": round((time.monotonic() - arrived) * 1000, 3),
        }
        return outputs, prepared.sentences, timing

    def _submit(self, scheduler: Scheduler, prepared: _Prepared, beam_size: int | None, target: str | None) -> Job:
        try:
            return scheduler.submit(prepared.sources, beam_size, target)
        except QueueFull as exc:
            self.metrics.rejections.labels(reason="queue_full").inc()
            raise ApiError(429, "queue_full", str(exc), {"Retry-After": str(exc.retry_after)}) from None
        except SchedulerClosed as exc:
            raise ApiError(503, "draining", str(exc), {"Retry-After": "5"}) from None
        except WorkerDead as exc:
            raise ApiError(503, "worker_dead", str(exc), {"Retry-After": "30"}) from None

    async def _results(self, scheduler: Scheduler, job: Job, deadline: float, request: Request | None) -> list[str]:
        """The job's results, unless its client leaves (499) or the deadline passes (504) first."""
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
            scheduler.cancel(job)
            if gone is not None and gone in done:
                self.metrics.rejections.labels(reason="client_gone").inc()
                raise ApiError(499, "client_gone", "the client closed the connection")
            self.metrics.rejections.labels(reason="timeout").inc()
            raise ApiError(504, "timeout", f"the translation did not finish within {self.options.request_timeout_s} s")
        try:
            return job.future.result()
        except WorkerDead as exc:
            raise ApiError(503, "worker_dead", str(exc), {"Retry-After": "30"}) from None
        except EngineFailed as exc:
            raise ApiError(500, "internal_error", str(exc)) from None


async def _wait_disconnect(request: Request) -> None:
    """Return when the client has gone (the body has already been read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
