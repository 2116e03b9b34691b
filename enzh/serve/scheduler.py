"""Dynamic batching across requests: one worker thread, token-budget batches, exact result routing.

Requests submit *units* (source id lists, normally one per sentence) from the event loop. A single worker
thread pools the units of every waiting request into batches of at most ``max_batch_tokens`` source tokens,
waiting at most ``max_queue_delay_ms`` after the oldest unit arrived for a batch to fill, runs the engine off
the event loop, and hands every request exactly its own results, in its own order.

Batch invariance: the engine's output for a unit depends only on that unit (its ids, its beam size and an
output bound derived from its own length), never on its batch neighbours, so a sentence translated in a
pooled batch equals its translation alone. Units with different beam sizes never share a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from enzh.runtime.errors import EnzhError, require

logger = logging.getLogger("enzh")

# engine(sources, beam_size, target) -> one decoded string per source, in order (target: the resolved target
# language, which the multilingual families force as the first token; the units of a batch share both).
Engine = Callable[[list[list[int]], int | None, str | None], list[str]]


@dataclass(frozen=True, kw_only=True)
class SchedulerOptions:
    """How the worker forms batches and how much it queues."""

    max_batch_tokens: int = 2048
    max_queue_delay_ms: float = 5.0
    max_queue_size: int = 2048
    batching: bool = True  # False: one request at a time (its own units still batched together)

    def __post_init__(self) -> None:
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

    def __init__(self, engine: Engine, options: SchedulerOptions, observer: Observer | None = None) -> None:
        self.engine = engine
        self.options = options
        self.observer: Observer = observer or _NullObserver()
        self._cond = threading.Condition()
        self._queue: deque[_Unit] = deque()
        self._queued_tokens = 0
        self._closing = False
        self._running: list[_Unit] = []
        self._seconds_per_unit = 0.05  # running estimate used for Retry-After
        self._thread: threading.Thread | None = None
        self.death: BaseException | None = None

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("scheduler already started")
        self._thread = threading.Thread(target=self._run, name="enzh-batch-worker", daemon=True)
        self._thread.start()

    def close(self, timeout: float | None = None) -> None:
        """Stop taking work, let the worker finish what is queued, and join it."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.death is None

    @property
    def queued_units(self) -> int:
        return len(self._queue)

    @property
    def queued_tokens(self) -> int:
        return self._queued_tokens

    @property
    def busy(self) -> bool:
        return bool(self._queue) or bool(self._running)

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
            if self._thread is None or not self._thread.is_alive():
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

    def _run(self) -> None:
        try:
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                self._execute(batch)
        except BaseException as exc:  # the worker is gone: fail everything that waits, report not ready
            self.death = exc
            logger.exception("the batching worker died")
            with self._cond:
                waiting = {id(u.job): u.job for u in [*self._running, *self._queue]}
                self._queue.clear()
                self._running = []
                self._queued_tokens = 0
            for job in waiting.values():
                job._resolve(WorkerDead("the batching worker has died"))

    def _next_batch(self) -> list[_Unit] | None:
        opts = self.options
        delay = opts.max_queue_delay_ms / 1000.0
        with self._cond:
            while True:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return None  # closing and nothing left
                if opts.batching and not self._closing and delay > 0:
                    # Let a batch fill: until the budget is reached or the oldest unit has waited `delay`.
                    while self._queue and self._queued_tokens < opts.max_batch_tokens and not self._closing:
                        left = self._queue[0].job.enqueued_at + delay - time.monotonic()
                        if left <= 0:
                            break
                        self._cond.wait(left)
                batch = self._take()
                if batch:
                    self._running = batch
                    return batch

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

    def _execute(self, batch: list[_Unit]) -> None:
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
            self._running = []
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
