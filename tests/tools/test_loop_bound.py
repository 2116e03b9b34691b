"""python -m enzh.tools.loop_bound: what the enzh child counts, and the report's layout."""

import argparse
import os

from enzh.runtime.cpu import cpu_features
from enzh.tools.loop_bound import CELLS, CT2_CONFIGS, ENZH_CONFIGS, _enzh_child, _sources, report


def test_enzh_child_counts_steps_rows_and_the_onnx_runtime_share():
    sources = _sources(3)
    result = _enzh_child("enzh default", sources, repeats=2)
    assert list(result) == ["batch 1 greedy", "batch 1 beam 4", "batch 16 greedy", "batch 16 beam 4"]
    greedy, beam = result["batch 1 greedy"], result["batch 1 beam 4"]
    # Greedy at batch 1: one row per step, one returned token (eos included) per step.
    assert greedy["steps"] == greedy["rows"] == greedy["tokens"]
    # Beam 4 at batch 1: every step runs the sentence's 4 beams, and stops no earlier than the best hypothesis.
    assert beam["rows"] == 4 * beam["steps"] and beam["steps"] >= beam["tokens"]
    # The same sentences in one call of 16: fewer steps, the same rows as at batch 1 for greedy.
    assert result["batch 16 greedy"]["rows"] == greedy["rows"] and result["batch 16 greedy"]["steps"] < greedy["steps"]
    for cell in result.values():
        assert len(cell["call_ms"]) == len(cell["ort_ms"]) == 2
        assert all(0 < ort < call for ort, call in zip(cell["ort_ms"], cell["call_ms"], strict=True))


def test_report_has_a_row_per_cell_and_the_ratio_of_the_smallest_onnx_runtime_time():
    def cell(call, ort=None):
        values = {"call_ms": [call, call + 2.0], "steps": 10, "rows": 40, "tokens": 9}
        return values if ort is None else {**values, "ort_ms": [ort, ort]}

    names = [f"batch {b} {'greedy' if k == 1 else f'beam {k}'}" for b, k in CELLS]
    results = {c: {n: cell(20.0, ort=10.0 + i) for n in names} for i, c in enumerate(ENZH_CONFIGS)}
    results |= {c: {n: cell(8.0) for n in names} for c in CT2_CONFIGS}
    args = argparse.Namespace(sentences=32, repeats=2, rounds=1)
    lines = report(results, "python -m enzh.tools.loop_bound", args)
    # The figures name the CPU they were measured on (its name and the flags its kernels choose by).
    assert f"{os.cpu_count()} logical CPUs, {cpu_features().summary()}, onnxruntime" in lines[0]
    rows = [line.strip("|").split("|") for line in lines[4:]]
    assert [r[0].strip() for r in rows] == names
    # medians: calls 21.0, ORT only 10/11/12 by configuration, CTranslate2 9.0; smallest ORT only / CT2 = 10 / 9
    assert [v.strip() for v in rows[0][1:]] == ["21.0"] * 3 + ["10.0", "11.0", "12.0"] + ["9.0"] * 2 + [
        "10, 40",
        "9",
        "1.11",
    ]
