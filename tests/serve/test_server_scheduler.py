"""The dynamic-batching scheduler with a fake engine: pooling, budgets, routing, cancellation, failures."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

from enzh.runtime.errors import OptionsError
from enzh.serve.scheduler import QueueFull, Scheduler, SchedulerClosed, SchedulerOptions, WorkerDead


class FakeEngine:
    """Translates ids to a string naming them; records every batch; optionally slow or failing."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.batches: list[tuple[list[list[int]], int | None]] = []
        self.gate: threading.Event | None = None
        self.fail_on: int | None = None
        self.fatal = False

    def __call__(self, sources: list[list[int]], beam: int | None, target: str | None = None) -> list[str]:
        if self.gate is not None:
            self.gate.wait(10)
        if self.fatal:
            raise KeyboardInterrupt  # a BaseException: kills the worker thread
        self.batches.append(([list(s) for s in sources], beam))
        if self.fail_on is not None and any(self.fail_on in s for s in sources):
            raise ValueError("poison")
        time.sleep(self.delay)
        return [f"{beam}:{'-'.join(map(str, s))}" for s in sources]


def expected(sources: list[list[int]], beam: int | None) -> list[str]:
    return [f"{beam}:{'-'.join(map(str, s))}" for s in sources]


def run(coro):
    return asyncio.run(coro)


def make(engine: FakeEngine, **options) -> Scheduler:
    scheduler = Scheduler(engine, SchedulerOptions(**options))
    scheduler.start()
    return scheduler


def test_requests_are_pooled_and_each_gets_its_own_results():
    engine = FakeEngine(delay=0.01)
    scheduler = make(engine, max_batch_tokens=10_000, max_queue_delay_ms=30)
    rng = random.Random(0)
    requests = [
        [[rng.randint(1, 99) for _ in range(rng.randint(1, 9))] for _ in range(rng.randint(0, 6))] for _ in range(40)
    ]

    async def main():
        jobs = [scheduler.submit(r, 1) for r in requests]
        return await asyncio.gather(*(j.future for j in jobs))

    results = run(main())
    scheduler.close()
    assert results == [expected(r, 1) for r in requests]
    assert len(engine.batches) < 5  # 40 requests, a handful of batches
    assert sum(len(b) for b, _ in engine.batches) == sum(map(len, requests))


def test_token_budget_and_fifo():
    engine = FakeEngine()
    engine.gate = threading.Event()
    scheduler = make(engine, max_batch_tokens=10, max_queue_delay_ms=0)

    async def main():
        blocker = scheduler.submit([[0]], 1)  # occupies the worker until the gate opens
        await asyncio.sleep(0.05)
        jobs = [scheduler.submit([[i] * 4], 1) for i in range(1, 7)]  # 6 units of 4 tokens
        engine.gate.set()
        await blocker.future
        return await asyncio.gather(*(j.future for j in jobs))

    run(main())
    scheduler.close()
    sizes = [[len(s) for s in b] for b, _ in engine.batches[1:]]
    assert sizes == [[4, 4], [4, 4], [4, 4]]  # 8 <= 10 < 12 tokens
    order = [s[0] for b, _ in engine.batches[1:] for s in b]
    assert order == [1, 2, 3, 4, 5, 6]


def test_a_single_long_unit_still_runs():
    engine = FakeEngine()
    scheduler = make(engine, max_batch_tokens=4)
    result = run(_submit_and_wait(scheduler, [[7] * 50], 1))
    scheduler.close()
    assert result == expected([[7] * 50], 1)


async def _submit_and_wait(scheduler: Scheduler, sources, beam):
    return await scheduler.submit(sources, beam).future


def test_beam_sizes_never_share_a_batch():
    engine = FakeEngine()
    engine.gate = threading.Event()
    scheduler = make(engine, max_batch_tokens=1000, max_queue_delay_ms=0)

    async def main():
        blocker = scheduler.submit([[0]], 1)
        await asyncio.sleep(0.05)
        jobs = [scheduler.submit([[i]], 1 if i % 2 else 4) for i in range(1, 9)]
        engine.gate.set()
        await blocker.future
        return await asyncio.gather(*(j.future for j in jobs))

    results = run(main())
    scheduler.close()
    assert results == [expected([[i]], 1 if i % 2 else 4) for i in range(1, 9)]
    for batch, beam in engine.batches[1:]:
        assert {1 if s[0] % 2 else 4 for s in batch} == {beam}
    assert len(engine.batches) == 3


def test_without_batching_requests_run_one_at_a_time():
    engine = FakeEngine()
    engine.gate = threading.Event()
    scheduler = make(engine, batching=False)

    async def main():
        blocker = scheduler.submit([[0]], 1)
        await asyncio.sleep(0.05)
        jobs = [scheduler.submit([[i], [i, i]], 1) for i in range(1, 5)]
        engine.gate.set()
        await blocker.future
        return await asyncio.gather(*(j.future for j in jobs))

    run(main())
    scheduler.close()
    assert [[s[0] for s in b] for b, _ in engine.batches[1:]] == [[1, 1], [2, 2], [3, 3], [4, 4]]


def test_queue_delay_lets_a_batch_fill():
    engine = FakeEngine()
    scheduler = make(engine, max_batch_tokens=1000, max_queue_delay_ms=200)

    async def main():
        first = scheduler.submit([[1]], 1)
        await asyncio.sleep(0.05)
        second = scheduler.submit([[2]], 1)
        return await asyncio.gather(first.future, second.future)

    run(main())
    scheduler.close()
    assert len(engine.batches) == 1 and len(engine.batches[0][0]) == 2


def test_queue_full_rejects_with_retry_after():
    engine = FakeEngine()
    engine.gate = threading.Event()
    scheduler = make(engine, max_queue_size=3, max_queue_delay_ms=0)

    async def main():
        blocker = scheduler.submit([[0]], 1)
        await asyncio.sleep(0.05)
        big = scheduler.submit([[1], [2], [3], [4], [5]], 1)  # empty queue: always admitted
        with pytest.raises(QueueFull) as info:
            scheduler.submit([[6]], 1)
        assert info.value.retry_after >= 1
        engine.gate.set()
        await asyncio.gather(blocker.future, big.future)
        after = scheduler.submit([[7], [8], [9]], 1)
        return await after.future

    assert run(main()) == expected([[7], [8], [9]], 1)
    scheduler.close()


def test_cancel_drops_queued_units():
    engine = FakeEngine()
    engine.gate = threading.Event()
    dropped: list[int] = []

    class Observer:
        def batch(self, units, tokens, seconds):
            pass

        def queue_wait(self, seconds):
            pass

        def dropped(self, units):
            dropped.append(units)

    scheduler = Scheduler(engine, SchedulerOptions(max_queue_delay_ms=0), observer=Observer())
    scheduler.start()

    async def main():
        blocker = scheduler.submit([[0]], 1)
        await asyncio.sleep(0.05)
        gone = scheduler.submit([[1], [2], [3]], 1)
        kept = scheduler.submit([[4]], 1)
        scheduler.cancel(gone)
        assert gone.future.cancelled()
        engine.gate.set()
        await blocker.future
        return await kept.future

    assert run(main()) == expected([[4]], 1)
    scheduler.close()
    assert dropped == [3]
    assert [s for b, _ in engine.batches for s in b] == [[0], [4]]


def test_engine_error_is_isolated_to_its_request():
    engine = FakeEngine()
    engine.fail_on = 13
    scheduler = make(engine, max_queue_delay_ms=50)

    async def main():
        bad = scheduler.submit([[13]], 1)
        good = [scheduler.submit([[i]], 1) for i in range(1, 5)]
        outcome = await asyncio.gather(bad.future, return_exceptions=True)
        return outcome[0], await asyncio.gather(*(j.future for j in good))

    error, results = run(main())
    scheduler.close()
    assert type(error).__name__ == "EngineFailed"
    assert results == [expected([[i]], 1) for i in range(1, 5)]
    assert scheduler.death is None


def test_worker_death_fails_waiting_requests_and_refuses_new_ones():
    engine = FakeEngine()
    engine.fatal = True
    scheduler = make(engine)

    async def main():
        job = scheduler.submit([[1]], 1)
        with pytest.raises(WorkerDead):
            await job.future
        with pytest.raises(WorkerDead):
            scheduler.submit([[2]], 1)

    run(main())
    assert not scheduler.alive and isinstance(scheduler.death, KeyboardInterrupt)


def test_close_finishes_queued_work_then_refuses():
    engine = FakeEngine(delay=0.02)
    scheduler = make(engine, max_batch_tokens=2, max_queue_delay_ms=0)

    async def main():
        jobs = [scheduler.submit([[i, i]], 1) for i in range(5)]
        closer = threading.Thread(target=scheduler.close)
        closer.start()
        results = await asyncio.gather(*(j.future for j in jobs))
        closer.join()
        with pytest.raises(SchedulerClosed):
            scheduler.submit([[9]], 1)
        return results

    assert run(main()) == [expected([[i, i]], 1) for i in range(5)]


def test_options_are_validated():
    for bad in ({"max_batch_tokens": 0}, {"max_queue_delay_ms": -1}, {"max_queue_size": 0}):
        with pytest.raises(OptionsError):  # a ValueError
            SchedulerOptions(**bad)


def test_units_of_different_targets_never_share_a_batch():
    """The multilingual families force the target-language code for a whole batch: requests for two targets are
    batched apart (and each gets the engine call of its own target)."""
    calls: list[tuple[int, str | None]] = []

    def engine(sources, beam, target=None):
        calls.append((len(sources), target))
        time.sleep(0.01)
        return [f"{target}:{'-'.join(map(str, s))}" for s in sources]

    async def scenario() -> list[list[str]]:
        scheduler = Scheduler(engine, SchedulerOptions(max_queue_delay_ms=50))
        scheduler.start()
        try:
            jobs = [scheduler.submit([[i, 1]], 1, target) for i, target in enumerate(["zho_Hans", "eng_Latn"] * 3)]
            return [await job.future for job in jobs]
        finally:
            scheduler.close(5)

    results = run(scenario())
    assert results == [[f"{t}:{i}-1"] for i, t in enumerate(["zho_Hans", "eng_Latn"] * 3)]
    assert {target for _, target in calls} == {"zho_Hans", "eng_Latn"} and sum(n for n, _ in calls) == 6
