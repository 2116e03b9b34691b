"""The lane benchmark reports (its timings are never asserted)."""

from __future__ import annotations

from enzh.serve.scheduler import main_lanes_for
from enzh.tools import lane_bench


def test_lane_bench_reports_every_row_count_and_both_ways(capsys, demo_translator):
    shards = demo_translator.running_lanes
    lanes = main_lanes_for(shards, 0)  # (the server's automatic main lanes)
    assert lane_bench.main(["--seconds", "0.2", "--rows", "8"]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [int(line.split("|")[1]) for line in table] == list(lane_bench.ROWS)
    assert all(float(line.split("|")[2]) > 0 for line in table)
    assert f"one running batch, {shards} shard(s) stepping together, 8 rows: " in out
    assert f"{lanes} one-thread running batch(es) on threads of their own, 8 rows in all: " in out
