"""The state behind the routes: the models, their loading and readiness, drain, and translating requests.

The service holds one or more models (:class:`Model`), each with its own :class:`enzh.serve.scheduler.Scheduler`:
a request's texts are routed to the model of their direction (:meth:`Service.route`, on
:class:`enzh.runtime.router.Translators`), checked against the limits, split into lines and sentences, encoded
into units, and submitted to that model's scheduler, which pools the units of all waiting requests into batches;
the request then waits for its results, its client's disconnect or its deadline. Limits, keys, readiness and
drain are the service's, across all its models.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from enzh.runtime.confidence import UNCHANGED, Confidence
from enzh.runtime.default_model import default_model_dirs
from enzh.runtime.engine import Engine
from enzh.runtime.glossary import Glossary
from enzh.runtime.router import Translators, base_language
from enzh.serve.errors import ApiError
from enzh.serve.metrics import Metrics, ModelObserver
from enzh.serve.options import ServeOptions
from enzh.serve.scheduler import (
    EngineFailed,
    Job,
    OpenRunning,
    QueueFull,
    RunningDecode,
    Scheduler,
    SchedulerClosed,
    WorkerDead,
)

logger = logging.getLogger("enzh")

WARMUP_TEXT = "The weather is nice today."
WARMUP_TEXTS = {"en": WARMUP_TEXT, "zh": "今天天气很好。"}  # per source language; others get the English one
# The Chinese scripts as targets (what LibreTranslate's codes and /v1's target come to).
SCRIPTS = ("zh-Hans", "zh-Hant")


@dataclass(eq=False)
class Model:
    """One model of the service: its engine, its own batching queue, and the labels its metrics carry."""

    directory: str | None  # None: given already loaded
    engine: Engine | None = None
    scheduler: Scheduler | None = None
    default_beam: int = 1
    glossary: Glossary | None = None  # the server's glossary for this model (ServeOptions.glossaries)

    @property
    def label(self) -> str:
        return self.engine.info.label if self.engine is not None else "unknown"

    @property
    def directions(self) -> tuple[tuple[str, str], ...]:
        return self.engine.info.directions if self.engine is not None else ()

    @property
    def direction_label(self) -> str:
        """``en-zh``, ``en-zh,zh-en`` for a model of both directions, ``unknown`` for a model that names none."""
        return ",".join(f"{a}-{b}" for a, b in self.directions) or "unknown"

    def scripts(self) -> tuple[str, ...]:
        """The Chinese scripts it writes: a model without target tokens writes one (its default, Simplified)."""
        engine = self.engine
        if engine is None or not engine.info.targets:
            return SCRIPTS[:1]
        found = []
        for script in SCRIPTS:
            try:
                engine.resolve_target(script)
            except ValueError:
                continue
            found.append(script)
        return tuple(found)


@dataclass(frozen=True)
class Target:
    """Where a group of texts goes: the model, its resolved target token and source code, and the direction."""

    model: Model
    token: str | None  # the engine's target token (None: the model's one target)
    source: str | None  # the source code handed to the engine (None: the model's own)
    direction: tuple[str, str] | None = None  # (source, target) languages; None: a lone model


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
    # With scores asked for: each text's confidence (None where the engine gave none: a stand-in).
    confidences: list[Confidence | None] | None = None


class Decoded(str):
    """A unit's decoded translation as the schedulers hand it back, with its hypothesis' ids and score (what a
    request's confidence is computed from); a plain ``str`` (a stand-in's, or a cancelled unit's) has neither."""

    token_ids: tuple[int, ...] = ()
    score: float | None = None

    @classmethod
    def of(cls, text: str, token_ids: Sequence[int], score: float | None) -> Decoded:
        found = cls(text)
        found.token_ids, found.score = tuple(token_ids), None if score is None else float(score)
        return found


class Service:
    """State shared by the routes: the models (each with its scheduler), routing, readiness, drain, metrics.

    ``translators``: loaded :class:`enzh.runtime.engine.Engine` objects (a :class:`enzh.runtime.translator.Translator`
    or a stand-in; one, or a sequence of several); None: loaded from ``options.models`` (none given: the embedded
    pair) by :meth:`start`.
    """

    def __init__(self, options: ServeOptions, translators: Engine | Sequence[Engine] | None = None) -> None:
        self.options = options
        self.models: list[Model] = []
        if translators is not None:
            engines: list[Engine] = list(translators) if isinstance(translators, list | tuple) else [translators]  # type: ignore[list-item]
            self.models = [Model(None, engine) for engine in engines]
        self.router: Translators | None = None
        self.metrics = Metrics()
        self.ready = False
        self.draining = False
        self.load_error: str | None = None
        self.in_flight = 0
        self._switch_interval: float | None = None  # Python's, while start() has set the service's
        m = self.metrics
        m.in_flight.set_function(lambda: self.in_flight)
        m.ready.set_function(lambda: 1 if self.state()[0] == "ready" else 0)

    # -- lifecycle --------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the models (unless given), start a worker per model, warm each up; then report ready."""
        loop = asyncio.get_running_loop()
        # The worker threads and the event loop hand Python's lock to each other sooner (restored by stop()): a
        # one-sentence request's steps wait less behind the main lanes' Python (docs/server.md, "Lanes").
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(self.options.gil_switch_ms / 1000.0)
        try:
            if not self.models:
                directories = self.options.models or tuple(str(d) for d in default_model_dirs())
                self.models = [Model(directory) for directory in directories]
            for model in self.models:
                if model.engine is None:
                    model.engine = await loop.run_in_executor(None, self._load, model.directory)
            files = self.options.glossaries
            if files and len(files) not in (1, len(self.models)):
                raise ValueError(f"{len(files)} glossaries for {len(self.models)} models: give one, or one per model")
            for i, model in enumerate(self.models):
                if files:
                    model.glossary = Glossary.read(files[0] if len(files) == 1 else files[i])
            self.router = Translators([self._engine_of(model) for model in self.models])
            self._warn_shadowed()
            for model in self.models:
                engine = self._engine_of(model)
                default = self.options.default_beam_size or engine.info.default_beam_size
                model.default_beam = min(default, self.options.max_beam_size)
                observer = ModelObserver(self.metrics, model.label, model.direction_label)
                # (a small model's one-thread decode shards; 0: no running decodes, e.g. a stand-in)
                shards = int(getattr(engine, "running_lanes", 0))
                model.scheduler = Scheduler(
                    self._batch_engine(model),
                    self.options.scheduler_options(engine.info.scored_tokens, shards),
                    observer,
                    running=self._running_decodes(model),
                )
                observer.watch(model.scheduler)
                model.scheduler.start()
            if self.options.warmup:
                for model in self.models:
                    await self._warm_up(model)
            self.ready = True
            logger.info("ready: %s", self.model_name)
        except Exception as exc:  # reported by /readyz and /livez; the process stays up to say so
            self.load_error = f"{type(exc).__name__}: {exc}"
            logger.exception("loading the model failed")

    def _load(self, directory: str | None) -> Engine:
        from enzh.runtime.translator import Translator

        return Translator.load(
            directory,
            intra_op_threads=self.options.threads,
            max_batch_tokens=self.options.max_batch_tokens,
        )

    def _warn_shadowed(self) -> None:
        """A direction that an earlier model already translates is served by that one (the first given)."""
        owner: dict[tuple[str, str], Model] = {}
        for model in self.models:
            for direction in model.directions:
                if direction in owner:
                    logger.warning(
                        "%s->%s is translated by %s (given first), not by %s",
                        *direction,
                        owner[direction].label,
                        model.label,
                    )
                owner.setdefault(direction, model)

    async def _warm_up(self, model: Model) -> None:
        """One translation per beam size in use, through the model's scheduler, in each direction it serves."""
        directions: list[tuple[str, str] | None] = [d for d in model.directions if self._owner(d) is model]
        for direction in directions or [None]:
            engine = self._engine_of(model)
            token = engine.resolve_target(direction[1]) if direction else engine.resolve_target(None)
            target = Target(model, token, direction[0] if direction else None, direction)
            text = WARMUP_TEXTS.get(direction[0], WARMUP_TEXT) if direction else WARMUP_TEXT
            for beam in sorted({1, model.default_beam}):
                await self.translate([text], route=target, beam_size=beam, deadline=time.monotonic() + 300)

    def _owner(self, direction: tuple[str, str]) -> Model | None:
        return next((m for m in self.models if direction in m.directions), None)

    @staticmethod
    def _engine_of(model: Model) -> Engine:
        if model.engine is None:
            raise RuntimeError("the model is not loaded yet")
        return model.engine

    def _batch_engine(self, model: Model) -> Callable[[list[list[int]], int | None, str | None], list[str]]:
        def run(sources: list[list[int]], beam_size: int | None, target: str | None = None) -> list[str]:
            translator = self._engine_of(model)
            hyps = translator.generate_ids(sources, beam_size=beam_size, target=target)
            texts = translator.decode([h.token_ids for h in hyps])
            # (a stand-in's hypotheses may have no score: its units are then unscored)
            return [Decoded.of(t, h.token_ids, getattr(h, "score", None)) for t, h in zip(texts, hyps, strict=True)]

        return run

    def _running_decodes(self, model: Model) -> OpenRunning:
        """The model's running decodes for continuous batching (None for an engine that has none: a stand-in, or
        a model that cannot join sentences mid-decode, whose units are then batched dynamically)."""

        def open_running(beam_size: int | None, target: str | None, one_thread: bool) -> RunningDecode | None:
            engine = self._engine_of(model)
            make = getattr(engine, "running_batch", None)
            batch = make(beam_size=beam_size, target=target, one_thread=one_thread) if make is not None else None
            return _Running(engine, batch) if batch is not None else None

        return open_running

    def _engine(self, sources: list[list[int]], beam_size: int | None, target: str | None = None) -> list[str]:
        """The first model's batch function (what its scheduler runs)."""
        return self._batch_engine(self.models[0])(sources, beam_size, target)

    async def stop(self) -> None:
        self.draining = True
        loop = asyncio.get_running_loop()
        for scheduler in [m.scheduler for m in self.models if m.scheduler is not None]:
            await loop.run_in_executor(None, scheduler.close, self.options.drain_timeout_s)
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None

    def state(self) -> tuple[str, str]:
        """(status, detail): status is ready (every model loaded and warmed up), loading, draining, load_failed or
        worker_dead (any model's worker)."""
        if self.load_error is not None:
            return "load_failed", self.load_error
        for model in self.models:
            scheduler = model.scheduler
            if scheduler is not None and scheduler.death is not None:
                return "worker_dead", f"the batching worker of {model.label} died: {type(scheduler.death).__name__}"
            if scheduler is not None and self.ready and not scheduler.alive:
                return "worker_dead", f"the batching worker of {model.label} is not running"
        if self.draining:
            return "draining", "the server is shutting down"
        if not self.ready:
            return "loading", "the models are loading and warming up"
        return "ready", "ok"

    @property
    def busy(self) -> bool:
        return any(m.scheduler is not None and m.scheduler.busy for m in self.models)

    async def drain(self, then: Callable[[], None]) -> None:
        """Refuse new work, let in-flight requests finish (up to drain_timeout_s), then call ``then``."""
        self.draining = True
        logger.info("draining: %d request(s) in flight", self.in_flight)
        deadline = time.monotonic() + self.options.drain_timeout_s
        while time.monotonic() < deadline and (self.in_flight > 0 or self.busy):
            await asyncio.sleep(0.05)
        logger.info("drained (%d request(s) still in flight); stopping", self.in_flight)
        then()

    # -- translation -----------------------------------------------------------------------------------

    async def handle(
        self,
        request: Request,
        texts: list[str],
        *,
        route: Target,
        beam_size: int | None,
        arrived: float,
        scores: bool = False,
    ) -> Answer:
        """A route's translation: :meth:`admitted`, due ``request_timeout_s`` after ``arrived`` (monotonic)."""
        beam = beam_size or route.model.default_beam
        with self.admitted():
            deadline = arrived + self.options.request_timeout_s
            outputs, sentences, timing, found = await self.translate(
                texts, route=route, beam_size=beam, deadline=deadline, request=request, scores=scores
            )
        timing["total"] = round((time.monotonic() - arrived) * 1000, 3)
        return Answer(outputs, sentences, timing, beam, found)

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """The one admission of work: :meth:`admit` (503 unless ready), then counted in flight until it ends (what
        a drain waits for). Every translation of every route runs inside one."""
        self.admit()
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

    def admit(self) -> None:
        """503 unless the service is ready (loading, draining, a model failed or its worker died)."""
        status, detail = self.state()
        if status == "ready":
            return
        if status == "loading":
            raise ApiError(503, "not_ready", detail, {"Retry-After": "1"})
        if status == "draining":
            raise ApiError(503, "draining", detail, {"Retry-After": "5"})
        raise ApiError(503, status, detail, {"Retry-After": "30"})

    # -- the models and routing ---------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        """The first model's translator (only once :meth:`start` has loaded it)."""
        if not self.models or self.models[0].engine is None:
            raise RuntimeError("the model is not loaded yet")
        return self.models[0].engine

    @property
    def translator(self) -> Engine | None:
        """The first model's translator, or None before it is loaded."""
        return self.models[0].engine if self.models else None

    @property
    def scheduler(self) -> Scheduler | None:
        """The first model's scheduler."""
        return self.models[0].scheduler if self.models else None

    @property
    def default_beam(self) -> int:
        return self.models[0].default_beam if self.models else 1

    @property
    def model_name(self) -> str:
        """Every model's label, comma-separated ("unknown" until they are loaded)."""
        loaded = [m.label for m in self.models if m.engine is not None]
        return ", ".join(loaded) if loaded and len(loaded) == len(self.models) else "unknown"

    @property
    def model_names(self) -> list[str]:
        return [m.label for m in self.models]

    @property
    def directions(self) -> tuple[tuple[str, str], ...]:
        """Every (source, target) pair a model translates (empty until loaded, or for a lone undirected model)."""
        return self.router.directions if self.router is not None else ()

    def offered(self) -> str:
        """The directions, for error messages: ``en->zh, zh->en``."""
        return ", ".join(f"{a}->{b}" for a, b in self.directions) or "whatever its one model reads"

    def serves(self, source: str, target: str) -> bool:
        """Whether some model translates ``source`` into ``target`` (language codes, any alias)."""
        if self._lone:
            return True
        return (base_language(source), base_language(target)) in self.directions

    def writes(self, target: str) -> bool:
        """Whether some model translates into ``target``'s language (and, for Chinese, its script)."""
        if self._lone:  # a model that names no languages is taken to translate into Chinese, as before
            return base_language(target) == "zh" and (target not in SCRIPTS or target in self.models[0].scripts())
        language = base_language(target)
        return any(
            any(b == language for _, b in model.directions) and (target not in SCRIPTS or target in model.scripts())
            for model in self.models
        )

    @property
    def _lone(self) -> bool:
        return len(self.models) == 1 and not self.models[0].directions

    def route(self, source: str, target: str) -> Target:
        """The model for ``source`` (a language code, not auto) into ``target`` (``zh-Hans``, ``zh-Hant``, ``en`` or
        an alias): 422 ``unsupported_direction`` when no model translates it (naming the directions there are),
        422 ``unsupported_target`` when the model cannot write that script."""
        if self.router is None:
            raise RuntimeError("the models are not loaded yet")
        if not self.serves(source, target):
            raise ApiError(
                422,
                "unsupported_direction",
                f"no model here translates {source} into {target}; offered: {self.offered()}",
            )
        try:
            found = self.router.route(source, None if self._lone and target == "zh-Hans" else target)
        except ValueError as exc:
            raise ApiError(422, "unsupported_target", str(exc)) from None
        model = next(m for m in self.models if m.engine is found.engine)
        if target in SCRIPTS and target not in model.scripts():
            raise ApiError(
                422,
                "unsupported_target",
                f"{model.label} cannot write {target}; it writes {', '.join(model.scripts())}",
            )
        direction = None if self._lone else (base_language(source), base_language(target))
        return Target(model, found.target, found.source, direction)

    def resolve_target(self, target: str | None) -> str | None:
        """The first model's token for ``target`` (422 for one it does not have)."""
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

    def prepare(self, texts: list[str], route: Target) -> _Prepared:
        """Segment every text the way the translator does (the one segmentation stage of every entry point) and
        collect the model inputs of all its sentences (CPU, no model)."""
        engine = self._engine_of(route.model)
        # A model of one direction reads its one source language (the source code only picks among several).
        source = route.source if len(route.model.directions) > 1 else None
        prepared = [engine.prepare_text(text, route.token, source) for text in texts]
        sources = [ids for text in prepared for piece in text.sources for ids in piece]
        sentences = sum(1 for text in prepared for piece in text.sources if piece)
        return _Prepared(sources, prepared, sentences)

    async def translate(
        self,
        texts: list[str],
        *,
        route: Target,
        beam_size: int | None,
        deadline: float,
        request: Request | None = None,
        scores: bool = False,
    ) -> tuple[list[str], int, dict[str, float], list[Confidence | None] | None]:
        """Translate ``texts`` through the route's scheduler; returns (translations, sentences, timing in ms,
        each text's confidence when ``scores``, else None)."""
        arrived = time.monotonic()
        scheduler = route.model.scheduler
        assert scheduler is not None
        total_chars = self.check_request_chars(texts)
        if total_chars > 2000:  # keep the event loop free while a long document is tokenized
            prepared = await asyncio.get_running_loop().run_in_executor(None, self.prepare, texts, route)
        else:
            prepared = self.prepare(texts, route)
        job = self._submit(scheduler, prepared, beam_size, route.token)
        results = await self._results(scheduler, job, deadline, request)
        done = iter(results)
        engine = self._engine_of(route.model)
        outputs = []
        found: list[Confidence | None] = []
        for text in prepared.texts:
            pieces = [[next(done) for _ in piece] for piece in text.sources]
            outputs.append(engine.assemble_text(text, pieces))
            if scores:
                found.append(_confidence(engine, text, outputs[-1], [d for piece in pieces for d in piece], beam_size))
        started = job.started_at if job.started_at is not None else time.monotonic()
        timing = {
            "queue": round(max(0.0, started - job.enqueued_at) * 1000, 3),
            "inference": round(job.inference_seconds * 1000, 3),
            "total": round((time.monotonic() - arrived) * 1000, 3),
        }
        return outputs, prepared.sentences, timing, found if scores else None

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


class _Running:
    """A translator's RunningBatch as the scheduler's RunningDecode: finished units come back decoded."""

    def __init__(self, engine: Engine, batch: Any) -> None:
        self.engine = engine
        self.batch = batch

    @property
    def sentences(self) -> int:
        return int(self.batch.sentences)

    @property
    def tokens(self) -> int:
        return int(self.batch.tokens)

    @property
    def rows(self) -> int:
        return int(self.batch.rows)

    def add(self, sources: list[list[int]], tags: list[Hashable]) -> None:
        self.batch.add(sources, tags)

    def step(self) -> list[tuple[Hashable, str]]:
        done = self.batch.step()
        if not done:
            return []
        best = [hypotheses[0] for _, hypotheses in done]
        texts = self.engine.decode([h.token_ids for h in best])
        return [
            (tag, Decoded.of(text, h.token_ids, h.score)) for (tag, _), text, h in zip(done, texts, best, strict=True)
        ]

    def cancel(self, tags: list[Hashable]) -> None:
        self.batch.cancel(tags)

    def close(self) -> None:
        self.batch.close()


def _confidence(engine: Engine, prepared: Any, text: str, units: list[str], beam_size: int | None) -> Confidence | None:
    """A text's confidence from its units' hypotheses; None when a unit carries none (a stand-in's engine) or the
    engine cannot score (a stand-in without ``assess``)."""
    if not units:
        return UNCHANGED
    if not all(isinstance(u, Decoded) and u.score is not None for u in units) or not hasattr(engine, "assess"):
        return None
    ids = [u.token_ids for u in units if isinstance(u, Decoded)]
    scores = [float(u.score) for u in units if isinstance(u, Decoded) and u.score is not None]
    return engine.assess(prepared, text, ids, scores, beam_size=beam_size)


async def _wait_disconnect(request: Request) -> None:
    """Return when the client has gone (the body has already been read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
