"""Batching across requests: one worker thread, continuous or token-budget batches, exact result routing.

Requests submit *units* (source id lists, normally one per sentence) from the event loop. A single worker
thread runs them off the event loop and hands every request exactly its own results, in its own order, in one
of three ways (``SchedulerOptions.mode``):

* ``continuous`` (with a ``running`` opener, see :data:`OpenRunning`): the worker keeps one running decode per beam
  size and target (:class:`enzh.runtime.running.RunningBatch`). With ``lanes`` > 1 (a small model that decodes on
  several one-thread sessions at once, or any model on two cores: :func:`main_lanes_for`) there are as many workers,
  each with running decodes of its own on one thread; a waiting unit joins the least loaded. Before every decoder
  step, waiting units join it (FIFO, while the running sentences hold at most ``max_batch_tokens`` source tokens and
  ``max_running_rows`` rows, a beam search's sentence ``max_beam_rows``, each of several main lanes its part of
  them; while a lane runs, once ``gather_units`` wait or the oldest has waited ``max_queue_delay_ms``, so that
  they are encoded together); after it, finished units leave and are answered at once, and the units of cancelled
  jobs (client gone, deadline passed) stop. A short sentence never waits for a long batch to end. Units whose model
  cannot join mid-decode (the opener returns None) are batched as in ``dynamic``. Short requests (at most
  ``express_sentences`` units) go to an *express lane*: a second worker thread with running decodes of its own, at
  most ``express_rows`` rows, on one-thread sessions. Its steps are a few rows and run beside the main lane's (which
  holds everything else), so a one-sentence request's steps do not cost what a step of the whole load costs; when
  the express lane is full, short units join the main lane.
* ``dynamic``: the units of every waiting request are pooled into batches of at most ``max_batch_tokens``
  source tokens, waiting at most ``max_queue_delay_ms`` after the oldest unit arrived for a batch to fill; a
  batch runs to its end before the next starts.
* ``single``: one request at a time (its own units still batched together): the benchmark's baseline.

Batch invariance: the engine's output for a unit depends only on that unit (its ids, its beam size and an
output bound derived from its own length), never on its batch neighbours, so a sentence translated in a
pooled batch equals its translation alone. Units with different beam sizes never share a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from enzh.runtime.errors import EnzhError, require

logger = logging.getLogger("enzh")

# engine(sources, beam_size, target) -> one decoded string per source, in order (target: the resolved target
# language, which the multilingual families force as the first token; the units of a batch share both).
Engine = Callable[[list[list[int]], int | None, str | None], list[str]]

MODES = ("continuous", "dynamic", "single")

# Continuous batching's rows (sentences x beams) running at once in the main lanes: at most MAX_RUNNING_ROWS, and a
# beam search's sentence joins only while they stay within a budget that follows the model's vocabulary. Every
# running sentence waits for each step over all the rows, and a beam-search step costs about rows x scored tokens
# (the projection, its log-softmax and top-k) plus its reorders' cache copies, so a model with a large vocabulary
# lets fewer beam searches run: as many rows as keep a step under SCORES_PER_STEP scores, at least
# MIN_RUNNING_ROWS. Measured on the opus-mt-en-zh-shaped int8 model on an AVX2-only CPU (docs/server.md, "On an
# AVX2-only CPU"): at beam 4 with 256 rows an answered sentence cost 600-900 ms of CPU and 20 requests in two
# rounds ran past their deadline, with 64 rows 400-490 ms and at most one a round; at beam 1, where 16 clients
# never fill 256 rows, a 64-row bound cost a third of the throughput.
MAX_RUNNING_ROWS = 256
MIN_RUNNING_ROWS = 8
SCORES_PER_STEP = 64 * 65_001  # 64 rows of opus-mt-en-zh's vocabulary; the demo's 1,834 tokens get all 256


def beam_rows_for(scored_tokens: int) -> int:
    """The automatic ``max_beam_rows`` of a model whose decoder step scores ``scored_tokens`` target tokens a row
    (0: unknown, which gets :data:`MAX_RUNNING_ROWS`)."""
    if scored_tokens <= 0:
        return MAX_RUNNING_ROWS
    return max(MIN_RUNNING_ROWS, min(MAX_RUNNING_ROWS, SCORES_PER_STEP // scored_tokens))


def main_lanes_for(shards: int, threads: int) -> int:
    """The automatic number of continuous batching's main lanes for a model that decodes a batch in ``shards`` at
    once (small fp32 models: one lane per shard; 0: a model without running decodes, batched dynamically on one
    lane), on ``threads`` intra-op threads (0: all cores). A model of one shard gets two one-thread lanes on two
    cores: on an AVX2-only 2-core CPU the opus-mt-en-zh-shaped int8 model's 64-row step ran 1.7x faster on two
    threads than on one, where two one-thread lanes step twice as many rows (docs/server.md, "Lanes"). With more
    cores it keeps one lane on all of them (a lane steps on one thread)."""
    if shards != 1:
        return max(1, shards)
    cores = threads or os.cpu_count() or 1
    return 2 if cores == 2 else 1


class RunningDecode(Protocol):
    """A decode that units join and leave between steps (the service wraps a RunningBatch in one)."""

    @property
    def sentences(self) -> int: ...

    @property
    def tokens(self) -> int: ...

    @property
    def rows(self) -> int: ...

    def add(self, sources: list[list[int]], tags: list[Hashable]) -> None: ...

    def step(self) -> list[tuple[Hashable, str]]:
        """One step for every unit; the units done since the last call (by tag) with their decoded strings."""
        ...

    def cancel(self, tags: list[Hashable]) -> None: ...

    def close(self) -> None: ...


# running(beam_size, target, one_thread) -> a running decode for that beam size and target, or None when the model
# cannot join sentences mid-decode (its units are then batched dynamically); one_thread: its steps on one thread,
# beside other lanes' (the express lane, and each main lane when there are several).
OpenRunning = Callable[[int | None, str | None, bool], RunningDecode | None]


@dataclass(frozen=True, kw_only=True)
class SchedulerOptions:
    """How the worker forms batches and how much it queues."""

    max_batch_tokens: int = 2048
    max_queue_delay_ms: float = 5.0
    max_queue_size: int = 2048
    batching: bool = True  # False: one request at a time (its own units still batched together), whatever mode says
    mode: str = "continuous"  # continuous, dynamic or single (see the module docstring)
    max_running_rows: int = MAX_RUNNING_ROWS  # continuous: main lanes' decoder rows (sentences x beams) at once
    # continuous: a beam search's sentence joins the main lanes only while their rows stay within this many
    max_beam_rows: int = MAX_RUNNING_ROWS
    lanes: int = 1  # continuous: main workers, each with its own running decodes (> 1: each on one thread)
    express_rows: int = 8  # continuous: the express lane's rows (0: no express lane)
    express_sentences: int = 1  # continuous: requests of at most this many units go to the express lane
    lane_nice: int = 10  # continuous, with an express lane: the main lanes' threads this much nicer (0: as the rest)
    # continuous: while the main lanes run, waiting units join once this many wait (or the oldest has waited
    # max_queue_delay_ms), so that they are encoded together (1: at the next step)
    gather_units: int = 8

    def __post_init__(self) -> None:
        require(self.mode in MODES, f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        require(self.max_running_rows >= 1, f"max_running_rows must be >= 1, got {self.max_running_rows}")
        require(self.max_beam_rows >= 1, f"max_beam_rows must be >= 1, got {self.max_beam_rows}")
        require(self.express_rows >= 0, f"express_rows must be >= 0 (0: no express lane), got {self.express_rows}")
        require(self.express_sentences >= 1, f"express_sentences must be >= 1, got {self.express_sentences}")
        require(self.lanes >= 1, f"lanes must be >= 1, got {self.lanes}")
        require(0 <= self.lane_nice <= 19, f"lane_nice must be 0..19, got {self.lane_nice}")
        require(self.gather_units >= 1, f"gather_units must be >= 1 (1: no gathering), got {self.gather_units}")
        # (a beam search's bound never exceeds the bound of all rows: the admission reads one or the other)
        object.__setattr__(self, "max_beam_rows", min(self.max_beam_rows, self.max_running_rows))
        if not self.batching:
            object.__setattr__(self, "mode", "single")
        object.__setattr__(self, "batching", self.mode != "single")
        require(self.max_batch_tokens >= 1, f"max_batch_tokens must be >= 1, got {self.max_batch_tokens}")
        require(
            self.max_queue_delay_ms >= 0 and math.isfinite(self.max_queue_delay_ms),
            f"max_queue_delay_ms must be a finite number >= 0, got {self.max_queue_delay_ms}",
        )
        require(self.max_queue_size >= 1, f"max_queue_size must be >= 1, got {self.max_queue_size}")


class SchedulerError(EnzhError):
    """Base class of the reasons a submission fails."""


class QueueFull(SchedulerError):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the translation queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


class SchedulerClosed(SchedulerError):
    """The scheduler is stopping (drain or shutdown) and takes no new work."""


class WorkerDead(SchedulerError):
    """The worker thread has died; nothing queued will ever run."""


class EngineFailed(SchedulerError):
    """The engine raised on this request's input (a bug: the engine is meant to accept any unit)."""


class Observer(Protocol):
    """Metric hooks, called from the worker thread."""

    def batch(self, units: int, tokens: int, seconds: float) -> None: ...

    def queue_wait(self, seconds: float) -> None: ...

    def dropped(self, units: int) -> None: ...


class _NullObserver:
    def batch(self, units: int, tokens: int, seconds: float) -> None:
        pass

    def queue_wait(self, seconds: float) -> None:
        pass

    def dropped(self, units: int) -> None:
        pass


@dataclass(eq=False)
class Job:
    """One request's units; its future resolves to one string per unit, in submission order."""

    sources: list[list[int]]
    beam_size: int | None
    future: asyncio.Future[list[str]]
    target: str | None
    loop: asyncio.AbstractEventLoop
    enqueued_at: float
    results: list[str | None] = field(default_factory=list)
    remaining: int = 0
    cancelled: bool = False
    started_at: float | None = None
    inference_seconds: float = 0.0

    def __post_init__(self) -> None:
        self.results = [None] * len(self.sources)
        self.remaining = len(self.sources)

    @property
    def finished(self) -> bool:
        return self.cancelled or self.future.done()

    def _resolve(self, value: list[str] | BaseException) -> None:
        def apply() -> None:
            if self.future.done():
                return
            if isinstance(value, BaseException):
                self.future.set_exception(value)
            else:
                self.future.set_result(value)

        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            self.loop.call_soon_threadsafe(apply)


@dataclass(eq=False)
class _Unit:
    job: Job
    slot: int
    ids: list[int]


class Scheduler:
    """Pool units from concurrent requests into token-budget batches run by one worker thread."""

    def __init__(
        self,
        engine: Engine,
        options: SchedulerOptions,
        observer: Observer | None = None,
        running: OpenRunning | None = None,
    ) -> None:
        self.engine = engine
        self.options = options
        # Continuous batching needs a running decode; without one (a stand-in engine) the units batch dynamically.
        self.running = running if options.mode == "continuous" else None
        # The worker threads' lanes: the main ones (one unless continuous), then the express lane (if enabled).
        main = options.lanes if self.running is not None else 1
        self._lanes = [_Lane(express=False, one_thread=main > 1) for _ in range(main)]
        self._main = list(self._lanes)
        self._express_lane: _Lane | None = None
        if self.running is not None and options.express_rows > 0:
            self._express_lane = _Lane(express=True, one_thread=True)
            self._lanes.append(self._express_lane)
        self.observer: Observer = observer or _NullObserver()
        self._cond = threading.Condition()
        self._queue: deque[_Unit] = deque()
        self._queued_tokens = 0
        self._closing = False
        self._seconds_per_unit = 0.05  # running estimate used for Retry-After
        self._threads: list[threading.Thread] = []
        self.death: BaseException | None = None

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            raise RuntimeError("scheduler already started")
        for i, lane in enumerate(self._lanes):
            name = "enzh-express-worker" if lane.express else "enzh-batch-worker" + (f"-{i}" if i else "")
            self._threads.append(threading.Thread(target=self._run, args=(lane,), name=name, daemon=True))
        for thread in self._threads:
            thread.start()

    def close(self, timeout: float | None = None) -> None:
        """Stop taking work, let the worker finish what is queued, and join it."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    @property
    def alive(self) -> bool:
        return bool(self._threads) and all(t.is_alive() for t in self._threads) and self.death is None

    @property
    def queued_units(self) -> int:
        return len(self._queue)

    @property
    def queued_tokens(self) -> int:
        return self._queued_tokens

    @property
    def busy(self) -> bool:
        return bool(self._queue) or bool(self._running) or self._in_flight()

    @property
    def _running(self) -> list[_Unit]:
        """The units taken from the queue and not yet answered, every lane's."""
        return [u for lane in self._lanes for u in lane.running]

    def retry_after(self) -> int:
        """Seconds until the queue has likely drained (at least 1)."""
        backlog = len(self._queue) + len(self._running)
        return max(1, math.ceil(backlog * self._seconds_per_unit))

    # -- submission (event-loop side) ------------------------------------------------------------------

    def submit(self, sources: Sequence[Sequence[int]], beam_size: int | None = None, target: str | None = None) -> Job:
        """Queue one request's units; await ``job.future``. Call from the event loop thread.

        Raises QueueFull (admitting it would push the queue past ``max_queue_size`` units; a request
        arriving at an empty queue is always admitted), SchedulerClosed or WorkerDead.
        """
        loop = asyncio.get_running_loop()
        job = Job(
            sources=[list(s) for s in sources],
            beam_size=beam_size,
            future=loop.create_future(),
            target=target,
            loop=loop,
            enqueued_at=time.monotonic(),
        )
        if not job.sources:
            job.future.set_result([])
            return job
        with self._cond:
            if self.death is not None:
                raise WorkerDead("the batching worker has died")
            if self._closing:
                raise SchedulerClosed("the server is shutting down")
            if not self.alive:
                raise WorkerDead("the batching worker is not running")
            if self._queue and len(self._queue) + len(job.sources) > self.options.max_queue_size:
                raise QueueFull(self.retry_after())
            for slot, ids in enumerate(job.sources):
                self._queue.append(_Unit(job, slot, ids))
                self._queued_tokens += len(ids)
            self._cond.notify_all()
        return job

    def cancel(self, job: Job) -> None:
        """Drop a job's queued units (client gone or deadline passed); running units finish unseen."""
        if job.cancelled:
            return
        self._drop_queued(job)
        if not job.future.done():
            job.future.cancel()

    def _drop_queued(self, job: Job) -> None:
        with self._cond:
            job.cancelled = True
            kept: deque[_Unit] = deque()
            dropped = 0
            for unit in self._queue:
                if unit.job is job:
                    dropped += 1
                    self._queued_tokens -= len(unit.ids)
                else:
                    kept.append(unit)
            self._queue = kept
        if dropped:
            self.observer.dropped(dropped)

    # -- worker side ---------------------------------------------------------------------------------

    def _run(self, lane: _Lane) -> None:
        if self._express_lane is not None and not lane.express:
            _lower_priority(self.options.lane_nice)
        try:
            if self.running is not None:
                self._run_continuous(lane)
                return
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                self._execute(batch)
        except BaseException as exc:  # a worker is gone: fail everything that waits, report not ready
            self.death = exc
            logger.exception("the batching worker died")
            with self._cond:
                decodes = [d for each in self._lanes for d in each.decodes.values() if d is not None]
                running = [u for d in decodes for u in d.units.values()]
                waiting = {id(u.job): u.job for u in [*self._running, *running, *self._queue]}
                self._queue.clear()
                for each in self._lanes:
                    each.running = []
                self._queued_tokens = 0
                self._cond.notify_all()  # (the other lane's worker sees the death and stops)
            for job in waiting.values():
                job._resolve(WorkerDead("the batching worker has died"))
            for decode in lane.decodes.values():
                if decode is not None:
                    with contextlib.suppress(Exception):
                        decode.running.close()

    def _next_batch(self) -> list[_Unit] | None:
        with self._cond:
            while True:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return None  # closing and nothing left
                self._wait_to_fill()
                batch = self._take()
                if batch:
                    self._lanes[0].running = batch
                    return batch

    def _wait_to_fill(self) -> None:
        """Let a batch fill: until the budget is reached or the oldest unit has waited ``max_queue_delay_ms``
        (batching modes only). Caller holds the lock."""
        opts = self.options
        delay = opts.max_queue_delay_ms / 1000.0
        if not opts.batching or self._closing or delay <= 0:
            return
        while self._queue and self._queued_tokens < opts.max_batch_tokens and not self._closing:
            left = self._queue[0].job.enqueued_at + delay - time.monotonic()
            if left <= 0:
                break
            self._cond.wait(left)

    def _take(self) -> list[_Unit]:
        """Pop the next batch (FIFO, one beam size and target, token budget, at least one unit). Caller holds the
        lock."""
        opts = self.options
        first = self._queue[0]
        batch: list[_Unit] = []
        kept: deque[_Unit] = deque()
        tokens = 0
        full = False
        for unit in self._queue:
            take = (
                not full
                and unit.job.beam_size == first.job.beam_size
                and unit.job.target == first.job.target
                and (opts.batching or unit.job is first.job)
                and (not batch or tokens + len(unit.ids) <= opts.max_batch_tokens)
            )
            if take:
                batch.append(unit)
                tokens += len(unit.ids)
                full = tokens >= opts.max_batch_tokens
            else:
                kept.append(unit)
        self._queue = kept
        self._queued_tokens -= tokens
        return batch

    def _execute(self, batch: list[_Unit], lane: _Lane | None = None) -> None:
        lane = lane or self._lanes[0]
        now = time.monotonic()
        for job in {id(u.job): u.job for u in batch}.values():
            if job.started_at is None:
                job.started_at = now
                self.observer.queue_wait(now - job.enqueued_at)
        tokens = sum(len(u.ids) for u in batch)
        start = time.perf_counter()
        try:
            outputs: list[str | BaseException] = list(self._engine_checked([u.ids for u in batch], batch[0]))
        except Exception:
            logger.exception("engine failed on a batch of %d units; retrying them one by one", len(batch))
            outputs = []
            for unit in batch:
                try:
                    outputs.extend(self._engine_checked([unit.ids], unit))
                except Exception as exc:
                    outputs.append(exc)
        seconds = time.perf_counter() - start
        self.observer.batch(len(batch), tokens, seconds)
        self._seconds_per_unit = 0.8 * self._seconds_per_unit + 0.2 * (seconds / len(batch))
        with self._cond:
            ran = {id(u) for u in batch}
            lane.running = [u for u in lane.running if id(u) not in ran]
        share = seconds / len(batch)
        for unit, output in zip(batch, outputs, strict=True):
            job = unit.job
            job.inference_seconds += share
            if job.finished:
                continue
            if isinstance(output, BaseException):
                self._drop_queued(job)  # the request has failed: its other sentences need not run
                job._resolve(EngineFailed(f"translation failed: {type(output).__name__}"))
                continue
            job.results[unit.slot] = output
            job.remaining -= 1
            if job.remaining == 0:
                job._resolve([r if r is not None else "" for r in job.results])

    def _engine_checked(self, sources: list[list[int]], first: _Unit) -> list[str]:
        outputs = self.engine(sources, first.job.beam_size, first.job.target)
        if len(outputs) != len(sources):
            raise RuntimeError(f"engine returned {len(outputs)} results for {len(sources)} sources")
        return outputs

    # -- continuous batching (worker side) ------------------------------------------------------------------

    def _run_continuous(self, lane: _Lane) -> None:
        while True:
            with self._cond:
                while not self._work_for(lane):
                    if self.death is not None or (self._closing and not self._queue):
                        return  # the other worker died, or closing with nothing left
                    # (the queue holds the other lane's units: look again now and then, for a short unit joins the
                    # main lane when the express lane is full)
                    self._cond.wait(0.05 if self._queue or self._closing else None)
                if self.death is not None:
                    return
                joining, whole = self._admit(lane)
            if whole:
                self._execute(whole, lane)  # a model that cannot join mid-decode: one dynamic batch
            self._join(lane, joining)
            self._drop_cancelled(lane)
            for key, decode in list(lane.decodes.items()):
                if decode is not None and decode.units:
                    self._step(lane, key, decode)
            with self._cond:
                lane.running = [u for d in lane.decodes.values() if d is not None for u in d.units.values()]

    def _in_flight(self) -> bool:
        return any(lane.in_flight() for lane in self._lanes)

    def _express(self, unit: _Unit) -> bool:
        """Whether ``unit`` is the express lane's to take now: a short request's, and the lane has room (caller
        holds the lock)."""
        opts = self.options
        lane = self._express_lane
        if lane is None or len(unit.job.sources) > opts.express_sentences:
            return False
        beams = max(1, unit.job.beam_size or 1)
        if lane.decodes.get(_key(unit), True) is None:
            return False  # (that key cannot join a running decode)
        return lane.rows() + beams <= opts.express_rows

    def _work_for(self, lane: _Lane) -> bool:
        """Whether ``lane``'s worker has something to do: running units, or a queued unit it takes (caller holds
        the lock)."""
        if lane.in_flight():
            return True
        if lane.express:
            return any(self._express(u) for u in self._queue)
        return any(not self._express(u) for u in self._queue)

    def _decode_for(self, lane: _Lane, key: tuple[int | None, str | None]) -> _Decode | None:
        """The running decode of ``key`` in ``lane`` (opened on first use; None: its units cannot join one)."""
        if key not in lane.decodes:
            assert self.running is not None
            try:
                running = self.running(*key, lane.one_thread)
            except Exception:
                logger.exception("opening a running decode failed; batching beam %s dynamically", key[0])
                running = None
            if running is None:
                logger.info("beam %s is batched dynamically: this model cannot join sentences mid-decode", key[0])
            lane.decodes[key] = _Decode(running) if running is not None else None
        return lane.decodes[key]

    def _admit(self, lane: _Lane) -> tuple[list[_Unit], list[_Unit]]:
        """Pop the waiting units that join ``lane``'s running decodes now (FIFO while the budgets allow; a decode
        with nothing running takes at least one), or a dynamic batch of units that cannot join. The express lane
        takes the units :meth:`_express` gives it; the main lane the others. Caller holds the lock."""
        opts = self.options
        if lane.express:
            joining = []
            kept: deque[_Unit] = deque()
            for unit in self._queue:
                if self._express(unit) and self._decode_for(lane, _key(unit)) is not None:
                    joining.append(unit)
                    lane.pending_rows += max(1, unit.job.beam_size or 1)
                    lane.pending_tokens += len(unit.ids)
                else:
                    kept.append(unit)
            return self._taken(lane, kept, joining), []
        first = next((u for u in self._queue if not self._express(u)), None)
        if first is not None and self._decode_for(lane, _key(first)) is None:
            self._wait_to_fill()
            if not self._queue:
                return [], []
            batch = self._take()
            lane.running = [*lane.running, *batch]
            return [], batch
        # (the budgets are all main lanes' together; with several, each lane runs at most its part of the rows, so
        # that rows a lane's finished sentences leave are taken by that lane's next joiners instead of another
        # lane's while they step vacant, and takes units up to its fair share of the rows running and waiting)
        tokens = sum(each.tokens() for each in self._main)
        rows = sum(each.rows() for each in self._main)
        mine = [u for u in self._queue if not self._express(u)]
        if rows and mine and self._gathering(mine):
            return [], []
        waiting = sum(max(1, u.job.beam_size or 1) for u in mine)
        fair = -(-(rows + waiting) // len(self._main))
        mine_rows = lane.rows()
        joining = []
        kept = deque()
        full = False
        for unit in self._queue:
            if self._express(unit):
                kept.append(unit)
                continue
            key = _key(unit)
            decode = self._decode_for(lane, key)
            beams = max(1, unit.job.beam_size or 1)
            limit = opts.max_running_rows if beams == 1 else opts.max_beam_rows
            part = -(-limit // len(self._main))
            fits = (
                tokens + len(unit.ids) <= opts.max_batch_tokens and rows + beams <= limit and mine_rows + beams <= part
            )
            least = mine_rows + beams <= fair or not mine_rows
            if decode is None or full or not least or not (fits or (not lane.tokens() and not joining)):
                full = full or decode is not None
                kept.append(unit)
                continue
            joining.append(unit)
            tokens += len(unit.ids)
            rows += beams
            mine_rows += beams
            lane.pending_rows += beams
            lane.pending_tokens += len(unit.ids)
        if len(self._main) > 1 and kept:
            self._cond.notify_all()  # (another lane may take what this one left)
        return self._taken(lane, kept, joining), []

    def _gathering(self, waiting: list[_Unit]) -> bool:
        """Whether the main lanes, running, let the ``waiting`` units gather: fewer than ``gather_units`` wait and
        the oldest has waited less than ``max_queue_delay_ms``. (An encoder run costs much less a sentence on a
        few sentences than on one.) Caller holds the lock."""
        opts = self.options
        if len(waiting) >= opts.gather_units or self._closing:
            return False
        return min(u.job.enqueued_at for u in waiting) + opts.max_queue_delay_ms / 1000.0 > time.monotonic()

    def _taken(self, lane: _Lane, kept: deque[_Unit], joining: list[_Unit]) -> list[_Unit]:
        """Leave ``kept`` queued; ``joining`` now runs in ``lane``. Caller holds the lock."""
        self._queue = kept
        self._queued_tokens -= sum(len(u.ids) for u in joining)
        lane.running = [*lane.running, *joining]
        return joining

    def _join(self, lane: _Lane, units: list[_Unit]) -> None:
        """Add the units to their running decodes in ``lane`` (one add per decode: their sentences are encoded
        together)."""
        now = time.monotonic()
        groups: dict[tuple[int | None, str | None], list[_Unit]] = {}
        for unit in units:
            if unit.job.finished:
                continue
            groups.setdefault(_key(unit), []).append(unit)
            if unit.job.started_at is None:
                unit.job.started_at = now
                self.observer.queue_wait(now - unit.job.enqueued_at)
        for key, members in groups.items():
            decode = lane.decodes[key]
            assert decode is not None
            try:
                decode.running.add([u.ids for u in members], list(members))
            except Exception as exc:
                logger.exception("adding %d units to the running decode failed", len(members))
                self._fail({id(u.job): u.job for u in members}.values(), exc)
                continue
            decode.units.update({id(u): u for u in members})
        with self._cond:
            lane.pending_rows = lane.pending_tokens = 0  # (now counted in their decodes')

    def _drop_cancelled(self, lane: _Lane) -> None:
        """Stop the running units of jobs that are finished without them (cancelled, or failed elsewhere)."""
        for decode in lane.decodes.values():
            if decode is None:
                continue
            gone = [u for u in decode.units.values() if u.job.finished]
            if gone:
                for unit in gone:
                    del decode.units[id(unit)]
                if decode.units:
                    decode.running.cancel(list(gone))  # their rows leave after the next step
                else:
                    decode.running.close()  # nothing else runs: every row leaves now
                self.observer.dropped(len(gone))

    def _step(self, lane: _Lane, key: tuple[int | None, str | None], decode: _Decode) -> None:
        units = len(decode.units)
        tokens = decode.running.tokens
        start = time.perf_counter()
        try:
            done = decode.running.step()
        except Exception as exc:
            logger.exception("a step of the running decode failed; its %d units fail", units)
            jobs = {id(u.job): u.job for u in decode.units.values()}
            with contextlib.suppress(Exception):
                decode.running.close()
            lane.decodes.pop(key, None)
            self._fail(jobs.values(), exc)
            return
        seconds = time.perf_counter() - start
        self.observer.batch(units, tokens, seconds)
        # (a request's share of the engine: the main lanes are one engine stepping on several threads at once)
        share = seconds / max(1, units) / (1 if lane.express else len(self._main))
        for unit in decode.units.values():
            unit.job.inference_seconds += share
        # Retry-After's estimate: engine time per finished unit (the main lanes run at once).
        lane.busy_seconds += seconds
        if done:
            per_unit = lane.busy_seconds / len(done) / len(self._main)
            self._seconds_per_unit = 0.8 * self._seconds_per_unit + 0.2 * per_unit
            lane.busy_seconds = 0.0
        for tag, output in done:
            left = decode.units.pop(id(tag), None)
            if left is None:
                continue
            job = left.job
            if job.finished:
                continue
            job.results[left.slot] = output
            job.remaining -= 1
            if job.remaining == 0:
                job._resolve([r if r is not None else "" for r in job.results])

    def _fail(self, jobs: Iterable[Job], exc: BaseException) -> None:
        for job in list(jobs):
            if not job.finished:
                self._drop_queued(job)
                job._resolve(EngineFailed(f"translation failed: {type(exc).__name__}"))


@dataclass(eq=False)
class _Lane:
    """A worker thread's share of the work: the main lane, or the express lane of short requests (continuous
    batching)."""

    express: bool
    one_thread: bool  # its running decodes step on one thread (beside other lanes')
    decodes: dict[tuple[int | None, str | None], _Decode | None] = field(default_factory=dict)  # None: cannot join
    running: list[_Unit] = field(default_factory=list)  # taken from the queue, not yet answered
    pending_rows: int = 0  # rows of the units taken but not yet added to a decode
    pending_tokens: int = 0  # their source tokens
    busy_seconds: float = 0.0  # engine time since one of its units last finished

    def in_flight(self) -> bool:
        return any(d is not None and d.units for d in list(self.decodes.values()))

    def rows(self) -> int:
        """Decoder rows running or about to join."""
        return sum(d.running.rows for d in list(self.decodes.values()) if d is not None) + self.pending_rows

    def tokens(self) -> int:
        """Their source tokens."""
        return sum(d.running.tokens for d in list(self.decodes.values()) if d is not None) + self.pending_tokens


@dataclass(eq=False)
class _Decode:
    """A running decode and its units, by id."""

    running: RunningDecode
    units: dict[int, _Unit] = field(default_factory=dict)


def _lower_priority(nice: int) -> None:
    """Make the calling thread ``nice`` steps nicer (Linux schedules threads on their own), so that the express
    lane's steps and the event loop run first when the cores are busy; where the OS cannot, say so and go on."""
    if nice <= 0:
        return
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + nice))
    except (AttributeError, OSError) as exc:  # (no setpriority on Windows)
        logger.info("the main lanes keep the process's priority: %s", exc)


def _key(unit: _Unit) -> tuple[int | None, str | None]:
    return unit.job.beam_size, unit.job.target
