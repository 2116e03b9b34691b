"""Continuous batching's lanes with a fake running decode: several main lanes share the load, short requests take
the express lane (on one thread), and a full express lane or a wide beam sends them to the main lanes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Hashable

import pytest

from enzh.runtime.errors import OptionsError
from enzh.serve.options import ServeOptions
from enzh.serve.scheduler import Scheduler, SchedulerOptions, beam_rows_for, main_lanes_for


class FakeRunning:
    """A running decode where a unit of n ids takes n steps; records what joined it and on which thread it ran."""

    def __init__(self, beam: int | None, one_thread: bool, delay: float, gate: threading.Event) -> None:
        self.beams = max(1, beam or 1)
        self.one_thread = one_thread
        self.delay = delay
        self.gate = gate
        self.left: dict[Hashable, list] = {}  # tag -> [ids, steps left]
        self.joined: list[list[int]] = []
        self.adds: list[int] = []  # units per add() call
        self.threads: set[str] = set()
        self.most_rows = 0  # the most rows it ran at once

    @property
    def sentences(self) -> int:
        return len(self.left)

    @property
    def tokens(self) -> int:
        return sum(len(ids) for ids, _ in self.left.values())

    @property
    def rows(self) -> int:
        return len(self.left) * self.beams

    def add(self, sources: list[list[int]], tags: list[Hashable]) -> None:
        for ids, tag in zip(sources, tags, strict=True):
            self.left[tag] = [list(ids), len(ids)]
            self.joined.append(list(ids))
        self.adds.append(len(sources))
        self.most_rows = max(self.most_rows, self.rows)

    def step(self) -> list[tuple[Hashable, str]]:
        self.gate.wait(10)
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay)
        done = []
        for tag, entry in list(self.left.items()):
            entry[1] -= 1
            if entry[1] == 0:
                del self.left[tag]
                done.append((tag, "-".join(map(str, entry[0]))))
        return done

    def cancel(self, tags: list[Hashable]) -> None:
        for tag in tags:
            self.left.pop(tag, None)

    def close(self) -> None:
        self.left.clear()


class Opener:
    def __init__(self, delay: float = 0.002) -> None:
        self.delay = delay
        self.gate = threading.Event()
        self.gate.set()
        self.opened: list[FakeRunning] = []

    def __call__(self, beam: int | None, target: str | None, one_thread: bool) -> FakeRunning:
        running = FakeRunning(beam, one_thread, self.delay, self.gate)
        self.opened.append(running)
        return running


def unused_engine(sources: list[list[int]], beam: int | None, target: str | None = None) -> list[str]:
    raise AssertionError("every unit joins a running decode")


def started(opener: Opener, **options) -> Scheduler:
    scheduler = Scheduler(unused_engine, SchedulerOptions(**options), running=opener)
    scheduler.start()
    return scheduler


def answer(sources: list[list[int]]) -> list[str]:
    return ["-".join(map(str, ids)) for ids in sources]


def queued_then_run(opener: Opener, scheduler: Scheduler, jobs: list[list[list[int]]], beam: int) -> list[list[str]]:
    """Submit every job while nothing steps (``opener``'s gate closed), then let the lanes step; the answers."""
    opener.gate.clear()

    async def main():
        submitted = [scheduler.submit(sources, beam_size=beam) for sources in jobs]
        await asyncio.sleep(0.05)
        opener.gate.set()
        return await asyncio.gather(*(job.future for job in submitted))

    try:
        return asyncio.run(main())
    finally:
        scheduler.close(10)


def test_two_main_lanes_share_the_load_each_on_one_thread():
    opener = Opener()
    scheduler = started(opener, lanes=2, express_rows=0)
    jobs = [[[j, k, *range(j % 7)] for k in range(4)] for j in range(20)]
    assert queued_then_run(opener, scheduler, jobs, beam=1) == [answer(sources) for sources in jobs]
    lanes = {thread for running in opener.opened for thread in running.threads}
    assert lanes == {"enzh-batch-worker", "enzh-batch-worker-1"}
    assert all(running.one_thread for running in opener.opened)  # (two lanes at once: each on one thread)
    shares = sorted(len(running.joined) for running in opener.opened)
    assert len(shares) == 2 and sum(shares) == 80 and shares[0] >= 20, shares


def test_a_short_request_takes_the_express_lane_and_leaves_first():
    opener = Opener()
    scheduler = started(opener, lanes=1, express_rows=8)
    long_job = [[1] * 300 for _ in range(4)]  # 300 steps of 2 ms

    async def main():
        long = scheduler.submit(long_job, beam_size=4)
        await asyncio.sleep(0.05)
        short = scheduler.submit([[7, 8, 9]], beam_size=4)  # 4 rows: fits the express lane's 8
        first = await asyncio.wait({long.future, short.future}, return_when=asyncio.FIRST_COMPLETED)
        assert first[0] == {short.future}
        return await short.future, await long.future

    try:
        short, long = asyncio.run(main())
    finally:
        scheduler.close(10)
    assert short == ["7-8-9"] and long == answer(long_job)
    express = [r for r in opener.opened if r.joined == [[7, 8, 9]]]
    assert len(express) == 1 and express[0].one_thread and express[0].threads == {"enzh-express-worker"}
    main_lane = [r for r in opener.opened if r.joined == long_job]
    assert len(main_lane) == 1 and not main_lane[0].one_thread and main_lane[0].threads == {"enzh-batch-worker"}


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"express_rows": 0}, "no express lane"),
        ({"express_rows": 2}, "a beam of 4 does not fit 2 rows"),
        ({"express_rows": 8, "express_sentences": 1}, "two sentences are not a short request"),
    ],
)
def test_requests_the_express_lane_does_not_take_join_the_main_lane(options, why):
    opener = Opener()
    scheduler = started(opener, **options)
    sources = [[5, 6]] if "sentences" not in why else [[5, 6], [7]]

    async def main():
        return await scheduler.submit(sources, beam_size=4).future

    try:
        assert asyncio.run(main()) == answer(sources), why
    finally:
        scheduler.close(10)
    assert [r.one_thread for r in opener.opened] == [False], why
    assert {t for r in opener.opened for t in r.threads} == {"enzh-batch-worker"}, why


def test_a_full_express_lane_sends_short_requests_to_the_main_lane():
    opener = Opener(delay=0.005)
    scheduler = started(opener, express_rows=1)
    shorts = [[[i] * 40] for i in range(1, 4)]  # one row each, 40 steps: the express lane holds one at a time

    async def main():
        jobs = [scheduler.submit(sources, beam_size=1) for sources in shorts]
        return await asyncio.gather(*(job.future for job in jobs))

    try:
        assert asyncio.run(main()) == [answer(sources) for sources in shorts]
    finally:
        scheduler.close(10)
    by_lane = {r.one_thread: len(r.joined) for r in opener.opened}
    assert by_lane[True] >= 1 and by_lane[False] >= 1 and sum(by_lane.values()) == 3, by_lane


@pytest.mark.parametrize(
    ("gather", "delay_ms", "adds"), [(3, 60_000, [1, 3, 3]), (1, 60_000, [1] * 7), (8, 100, [1, 6])]
)
def test_while_the_main_lane_runs_waiting_units_gather_before_they_join(gather, delay_ms, adds):
    """Units that arrive while the main lane decodes join it gather_units at a time (encoded together), or once the
    oldest has waited max_queue_delay_ms."""
    opener = Opener()
    scheduler = started(opener, express_rows=0, gather_units=gather, max_queue_delay_ms=delay_ms)
    long_job = [[1] * 300]  # 300 steps of 2 ms: running while the others arrive

    async def main():
        long = scheduler.submit(long_job, beam_size=1)
        await asyncio.sleep(0.02)
        singles = []
        for i in range(6):
            singles.append(scheduler.submit([[2, i]], beam_size=1))
            await asyncio.sleep(0.005)
        return await asyncio.gather(long.future, *(job.future for job in singles))

    try:
        results = asyncio.run(main())
    finally:
        scheduler.close(10)
    assert results == [answer(long_job), *(answer([[2, i]]) for i in range(6))]
    (running,) = opener.opened
    assert running.adds == adds


def test_lane_options_are_validated():
    with pytest.raises(OptionsError, match=r"express_rows must be >= 0 \(0: no express lane\), got -1"):
        SchedulerOptions(express_rows=-1)
    with pytest.raises(OptionsError, match="express_sentences must be >= 1, got 0"):
        SchedulerOptions(express_sentences=0)
    with pytest.raises(OptionsError, match="lanes must be >= 1, got 0"):
        SchedulerOptions(lanes=0)
    with pytest.raises(OptionsError, match=r"gather_units must be >= 1 \(1: no gathering\), got 0"):
        SchedulerOptions(gather_units=0)


@pytest.mark.parametrize(
    ("options", "beam", "most_sentences"),
    [
        ({"max_running_rows": 8}, 4, 2),
        ({"max_running_rows": 12}, 4, 3),
        ({"max_beam_rows": 8}, 4, 2),
        ({"max_beam_rows": 8}, 1, 6),  # a greedy sentence is bound by max_running_rows only
        ({"max_running_rows": 3, "max_beam_rows": 8}, 1, 3),
        ({}, 4, 6),
    ],
)
def test_the_main_lane_runs_at_most_its_rows(options, beam, most_sentences):
    opener = Opener()
    scheduler = started(opener, express_rows=0, gather_units=1, **options)
    jobs = [[[i] * (30 + i)] for i in range(1, 7)]  # six one-sentence requests

    async def main():
        return await asyncio.gather(*(scheduler.submit(job, beam_size=beam).future for job in jobs))

    try:
        assert asyncio.run(main()) == [answer(job) for job in jobs]
    finally:
        scheduler.close(10)
    (running,) = opener.opened
    assert running.most_rows == beam * most_sentences
    assert sorted(running.joined) == sorted(job[0] for job in jobs)


def test_each_main_lane_runs_at_most_its_part_of_the_rows():
    """Two main lanes share max_beam_rows: each runs at most half, so rows a lane's finished sentence leaves are
    taken by that lane's next joiner (not by the other lane while they step vacant)."""
    opener = Opener()
    scheduler = started(opener, lanes=2, express_rows=0, gather_units=1, max_beam_rows=8)
    jobs = [[[i] * (5 + 3 * i)] for i in range(1, 9)]  # eight one-sentence requests of different lengths
    assert queued_then_run(opener, scheduler, jobs, beam=4) == [answer(job) for job in jobs]
    assert len(opener.opened) == 2
    assert [running.most_rows for running in opener.opened] == [4, 4]  # (one sentence of 4 beams each)
    assert sorted(ids for running in opener.opened for ids in running.joined) == sorted(job[0] for job in jobs)


def test_main_lanes_follow_the_shards_and_the_cores(monkeypatch):
    # A small fp32 model's decode shards each get a lane; a model of one shard two one-thread lanes on two cores
    # (given as --threads, or counted), one lane on all the threads otherwise; a model without running decodes
    # (batched dynamically) one lane; --main-lanes decides when given.
    assert [main_lanes_for(shards, threads) for shards, threads in ((2, 0), (4, 8), (1, 2), (1, 1), (1, 4))] == [
        2,
        4,
        2,
        1,
        1,
    ]
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert main_lanes_for(1, 0) == 2
    assert main_lanes_for(0, 0) == main_lanes_for(0, 2) == 1
    assert ServeOptions().scheduler_options(65_001).lanes == 2
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert main_lanes_for(1, 0) == 1
    assert ServeOptions().scheduler_options(65_001, shards=1).lanes == 1
    assert ServeOptions(threads=2).scheduler_options(65_001).lanes == 2
    assert ServeOptions(main_lanes=3, threads=2).scheduler_options(65_001, shards=2).lanes == 3
    with pytest.raises(OptionsError, match=r"main_lanes must be >= 0 \(0: automatic\), got -1"):
        ServeOptions(main_lanes=-1)


def test_beam_rows_follow_the_models_vocabulary():
    # 64 rows for opus-mt-en-zh's 65,001 tokens, all 256 for the demo's 1,834, 16 for NLLB-200's 256,206; never
    # fewer than 8, and 256 when the engine does not say.
    assert [beam_rows_for(v) for v in (65_001, 1_834, 256_206, 10**7, 0)] == [64, 256, 16, 8, 256]
    found = ServeOptions().scheduler_options(65_001)
    assert (found.max_running_rows, found.max_beam_rows) == (256, 64)
    assert ServeOptions().scheduler_options().max_beam_rows == 256
    assert ServeOptions(max_beam_rows=100).scheduler_options(65_001).max_beam_rows == 100
    with pytest.raises(
        OptionsError, match=r"max_beam_rows must be >= 0 \(0: automatic, by the model's vocabulary\), got -1"
    ):
        ServeOptions(max_beam_rows=-1)
    with pytest.raises(OptionsError, match="max_running_rows must be >= 1, got 0"):
        ServeOptions(max_running_rows=0)
