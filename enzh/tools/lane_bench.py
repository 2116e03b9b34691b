"""Why continuous batching runs in lanes: ``python -m enzh.tools.lane_bench [--model DIR]``.

Three measurements on a model's running batches (:meth:`enzh.runtime.translator.Translator.running_batch`), on
held-out sentences of the demo model's test set, greedy, each finished sentence replaced by the next at once so
the row count holds:

1. the median decoder step at 1 to 256 rows: what a one-sentence request pays at each of its steps when it
   shares a running decode with that many rows;
2. the encoder pass of a sentence that joins (one thread, 16 sentences a run);
3. sentences per second of one running batch whose halves step together on the model's decode shards (they wait
   for each other at every step; a model of one shard: one batch on all the intra-op threads) against as many
   one-thread running batches as the service's automatic ``--main-lanes`` runs (or ``--lanes``), each stepping on a
   thread of its own (what the service's main lanes do).

Timings are printed, never asserted; print the CPU's flags with them (``grep -m1 flags /proc/cpuinfo``).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Sequence

from enzh.runtime.batching import pad_batch
from enzh.runtime.default_model import DEMO_DIR, DEMO_TEST_SET
from enzh.runtime.running import RunningBatch
from enzh.runtime.translator import Translator
from enzh.serve.scheduler import main_lanes_for

ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _sources(translator: Translator, count: int) -> list[list[int]]:
    """The source ids of the first ``count`` held-out sentences (as the service encodes them)."""
    lines = DEMO_TEST_SET.read_text(encoding="utf-8").splitlines()
    texts = [line.split("\t")[0] for line in lines if line.strip()][:count]
    token = translator.resolve_target(None)
    return [list(ids) for text in texts for piece in translator.prepare_text(text, token).sources for ids in piece]


def keep_running(batch: RunningBatch, sources: Sequence[list[int]], rows: int, seconds: float) -> tuple[int, list]:
    """Step ``batch`` with ``rows`` sentences for ``seconds``, refilling as they finish: (sentences done, step
    times)."""
    batch.add([sources[i % len(sources)] for i in range(rows)], list(range(rows)))
    added, done, times = rows, 0, []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        finished = batch.step()
        times.append(time.perf_counter() - start)
        if finished:
            count = len(finished)
            done += count
            batch.add([sources[(added + i) % len(sources)] for i in range(count)], list(range(added, added + count)))
            added += count
    batch.close()
    return done, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.tools.lane_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="exported model directory (default: the embedded demo model)")
    parser.add_argument(
        "--seconds", type=float, default=5.0, help="per lane measurement (default 5; steps: 1 s a row count)"
    )
    parser.add_argument("--rows", type=int, default=64, help="rows running in the lane measurement (default 64)")
    parser.add_argument(
        "--lanes",
        type=int,
        default=0,
        help="one-thread running batches in the lane measurement (default: as the server's automatic --main-lanes)",
    )
    args = parser.parse_args(argv)
    translator = Translator.load(args.model or DEMO_DIR)
    sources = _sources(translator, 400)
    print("| rows | median step ms | per row ms |\n|---|---|---|")
    for rows in ROWS:
        batch = translator.running_batch(beam_size=1)
        if batch is None:
            raise SystemExit("this model cannot join sentences mid-decode (python -m enzh.export.upgrade DIR)")
        _, times = keep_running(batch, sources, rows, min(1.0, args.seconds))
        median = statistics.median(times) * 1000
        print(f"| {rows} | {median:.2f} | {median / rows:.3f} |")
    # (what a sentence's joining costs: its encoder pass, on the one-thread session, in a batch of 16)
    ids, mask = pad_batch(sources[:16], translator.adapter.pad_token_id)
    encoder = translator.sessions.one_thread()[1]
    start, runs = time.perf_counter(), 20
    for _ in range(runs):
        translator.sessions.encode(ids, mask, select=False, session=encoder)
    per_sentence = (time.perf_counter() - start) / runs / len(ids) * 1000
    print(f"\nencoder, one thread, 16 sentences a run: {per_sentence:.3f} ms a sentence")
    shards = translator.running_lanes
    lanes = args.lanes or main_lanes_for(shards, 0)
    together = translator.running_batch(beam_size=1)
    assert together is not None
    done, _ = keep_running(together, sources, args.rows, args.seconds)
    print(
        f"\none running batch, {shards} shard(s) stepping together, {args.rows} rows: "
        f"{done / args.seconds:.1f} sentences/s"
    )
    found: list[int] = []

    def lane() -> None:
        batch = translator.running_batch(beam_size=1, one_thread=True)
        assert batch is not None
        found.append(keep_running(batch, sources, max(1, args.rows // lanes), args.seconds)[0])

    threads = [threading.Thread(target=lane) for _ in range(lanes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(
        f"{lanes} one-thread running batch(es) on threads of their own, {args.rows} rows in all: "
        f"{sum(found) / args.seconds:.1f} sentences/s"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
