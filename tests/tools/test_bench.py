"""`enzh bench`: the --quick smoke run end to end, its outputs, and the fixed-length check. No timing asserts."""

from __future__ import annotations

import importlib.util
import json
import math
import mmap
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from enzh.cli.bench import command_line, settings_from_args
from enzh.cli.main import build_parser
from enzh.demo import HF_MODEL_DIR
from enzh.tools.bench import machine
from enzh.tools.bench.cases import fixed_sources, make_cases
from enzh.tools.bench.engines import Runner
from enzh.tools.bench.report import check_report
from enzh.tools.bench.settings import BenchSettings, LengthError
from enzh.tools.bench.stats import merge_rounds
from enzh.tools.bench.worker import measure
from enzh.tools.stats import percentile

HAS_CT2 = importlib.util.find_spec("ctranslate2") is not None


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`enzh bench --quick` once, in a subprocess like a user runs it."""
    root = tmp_path_factory.mktemp("bench")
    pytest.importorskip("matplotlib")
    command = [
        sys.executable,
        "-m",
        "enzh",
        "bench",
        "--quick",
        "--out",
        str(root / "out"),
        "--markdown",
        str(root / "docs" / "benchmarks.md"),
        "--cache-dir",
        str(root / "cache"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((root / "out" / "bench.json").read_text(encoding="utf-8"))
    return {"root": root, "report": report, "stdout": result.stdout}


def test_quick_writes_markdown_json_and_png(quick_run):
    root, report = quick_run["root"], quick_run["report"]
    check_report(report)
    assert report["settings"]["quick"] is True
    assert (root / "out" / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (root / "out" / "bench.md").exists()  # --markdown puts it elsewhere
    text = (root / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks")
    assert "`enzh bench --quick" in text and "**Machine**" in text
    assert "| engine | batch 1 greedy | batch 1 beam 2 | batch 4 greedy | batch 4 beam 2 |" in text
    assert "## Load time and memory per engine" in text
    assert "](../out/bench.png)" in text  # the chart link is relative to the markdown file
    assert "| enzh int8 |" in quick_run["stdout"]


def test_quick_measures_every_engine_on_every_case(quick_run):
    report = quick_run["report"]
    cases = {c["id"] for c in report["cases"]}
    assert {c["group"] for c in report["cases"]} == {"fixed", "natural"}
    assert len(cases) == 8
    expected = ["enzh-fp32", "enzh-int8", "enzh-int4", "torch-fp32"] + (["ct2-float32", "ct2-int8"] if HAS_CT2 else [])
    for engine in expected:
        cells = [r for r in report["results"] if r["engine"] == engine]
        assert {r["case"] for r in cells} == cases
        assert all(r["status"] == "ok" for r in cells), [r.get("error") for r in cells]
        for r in cells:
            assert len(r["times_ms"]) == report["settings"]["repeats"]
            assert r["min_ms"] <= r["median_ms"] <= r["max_ms"] and r["q1_ms"] <= r["q3_ms"]
            assert r["tokens_per_s"] > 0 and r["peak_rss_mib"] > 0
            assert 0 < r["load_s"] <= r["first_translation_s"]
            assert (r["ratio_ct2_int8"] is not None) == HAS_CT2
            assert r["ratio_torch"] is not None
        info = next(e for e in report["engines"] if e["id"] == engine)["groups"]["fixed"]
        assert info["model_bytes"] > 0 and info["peak_rss_mib"] > 0
    torch = [r for r in report["results"] if r["engine"] == "torch-fp32"]
    assert all(r["ratio_torch"] == 1.0 for r in torch)
    if not HAS_CT2:
        assert all(r["status"] == "skipped" for r in report["results"] if r["engine"].startswith("ct2"))


def test_fixed_length_cases_generate_exactly_n_tokens_in_every_engine(quick_run):
    report = quick_run["report"]
    n = report["settings"]["new_tokens"]
    fixed = {c["id"]: c for c in report["cases"] if c["fixed_length"]}
    assert fixed and all(c["new_tokens"] == n for c in fixed.values())
    checked = set()
    for r in report["results"]:
        if r["case"] in fixed and r["status"] == "ok":
            assert r["exact_length"] is True
            # every repeat: sentences x N tokens (the worker fails the cell on any other length)
            assert r["tokens"] == [fixed[r["case"]]["sentences"] * n] * len(r["tokens"])
            checked.add(r["engine"])
    assert {"enzh-fp32", "enzh-int8", "torch-fp32"} <= checked
    if HAS_CT2:
        assert {"ct2-float32", "ct2-int8"} <= checked
    natural = [r for r in report["results"] if r["case"].startswith("natural") and r["engine"] == "enzh-fp32"]
    # the trained demo model through the fp32 export gives PyTorch's translations, text in and text out
    assert all(r["agreement_torch"] == 1.0 for r in natural)
    assert {c["group"]: c["text"] for c in report["cases"]} == {"fixed": False, "natural": True}


def test_from_json_rerenders_without_measuring(quick_run, tmp_path):
    source = quick_run["root"] / "out" / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "enzh", "bench", "--from-json", str(source), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "bench.json").read_text(encoding="utf-8")) == quick_run["report"]
    assert (tmp_path / "bench.png").is_file()
    again = (tmp_path / "bench.md").read_text(encoding="utf-8").splitlines()
    first = (quick_run["root"] / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert again[4] == f"Rendered from that run's JSON by `enzh bench --from-json {source} --out {tmp_path}`."
    assert again[:4] + again[6:] == first.replace("](../out/bench.png)", "](bench.png)").splitlines()


class _WrongLength(Runner):
    """Returns one token fewer than asked for in the last sentence."""

    def generate(self, call, beams, new_tokens, fixed):
        return [[5] * new_tokens for _ in call[:-1]] + [[5] * (new_tokens - 1)]


def test_a_wrong_length_fails_the_cell():
    case = {"id": "fixed-b2-greedy", "beams": 1, "new_tokens": 4, "fixed": True, "calls": [[[2, 9, 0], [2, 8, 0]]]}
    with pytest.raises(LengthError, match="1 of 2 outputs do not have exactly 4 tokens"):
        measure(_WrongLength(), case, repeats=1, warmup=0)
    # natural length: any length is fine
    result = measure(_WrongLength(), {**case, "fixed": False}, repeats=2, warmup=0)
    assert result["status"] == "ok" and result["tokens"] == [7, 7] and result["exact_length"] is None


class _Texts(Runner):
    def __init__(self):
        self.seen = []

    def translate(self, texts, beams, new_tokens):
        self.seen.append(list(texts))
        return [(text.upper(), len(text)) for text in texts]


def test_a_case_with_texts_is_translated_text_to_text():
    settings = BenchSettings(batch_sizes=(2,), beams=(1,))
    texts = ["a cat.", "the dog.", "hi."]
    ids = [(7, 1, 0), (7, 2, 3, 0), (7, 4, 0)]
    (case,) = make_cases("natural", ids, settings, texts=texts)
    assert case.texts == (("a cat.", "the dog."), ("hi.",)) and case.calls == ((ids[0], ids[1]), (ids[2],))
    (fixed,) = make_cases("fixed", ids, settings, texts=texts)
    assert fixed.texts is None  # fixed lengths are counted in ids
    runner = _Texts()
    job = {"id": case.id, "beams": 1, "new_tokens": 8, "fixed": False, "calls": [], "texts": case.texts}
    result = measure(runner, job, repeats=2, warmup=1)
    assert runner.seen == [["a cat.", "the dog."], ["hi."]] * 3
    assert result["outputs"] == ["A CAT.", "THE DOG.", "HI."] and result["tokens"] == [17, 17]


def test_check_report_rejects_a_bad_layout(quick_run):
    report = json.loads(json.dumps(quick_run["report"]))
    report["schema"] = "other/1"
    with pytest.raises(ValueError, match="schema"):
        check_report(report)
    report = json.loads(json.dumps(quick_run["report"]))
    ok = next(r for r in report["results"] if r["status"] == "ok")
    del ok["median_ms"]
    with pytest.raises(ValueError, match="lacks median_ms"):
        check_report(report)


def test_cli_options_become_settings_and_the_command_line():
    args = build_parser().parse_args(
        ["bench", "--quick", "--engines", "enzh-int8,ct2-int8", "--batch-sizes", "2,8", "--repeats", "3"]
    )
    settings = settings_from_args(args)
    assert settings.quick and settings.engines == ("enzh-int8", "ct2-int8")
    assert settings.batch_sizes == (2, 8) and settings.repeats == 3 and settings.new_tokens == 8
    assert command_line(args) == ("enzh bench --quick --engines enzh-int8,ct2-int8 --repeats 3 --batch-sizes 2,8")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--engines", "onnx-int8"])


def test_fixed_sources_have_the_asked_length():
    sources = fixed_sources(HF_MODEL_DIR, 3, 24, seed=1)
    assert len(sources) == 3 and {len(s) for s in sources} == {24}
    assert all(s[0] == 2 and s[-1] == 0 and 0 not in s[1:-1] for s in sources)  # >>cmn_Hans<< ... </s>
    assert fixed_sources(HF_MODEL_DIR, 3, 24, seed=1) == sources


def test_percentile():
    assert percentile([4.0], 0.25) == 4.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.25) == 2.0
    assert percentile([1.0, 2.0], 0.5) == 1.5
    assert percentile([3.0, 1.0, 2.0], 1.0) == 3.0 and percentile([3.0, 1.0, 2.0], 0.0) == 1.0
    assert math.isnan(percentile([], 0.5))


def test_worker_entry_point_only_takes_a_job():
    result = subprocess.run(
        [sys.executable, "-m", "enzh.tools.bench", "--quick"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2 and "enzh bench" in result.stderr


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux only")
def test_peak_rss_resets():
    assert machine.reset_peak_rss()
    # An anonymous mapping of its own, touched page by page and then unmapped: its memory surely leaves the
    # process (a freed bytearray may stay in the allocator's heap, depending on what ran before).
    block = mmap.mmap(-1, 64 * 1024 * 1024)
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    high = machine.peak_rss_mib()
    block.close()
    assert machine.reset_peak_rss()
    assert machine.peak_rss_mib() < high - 32


def test_rounds_pool_the_timed_runs():
    item = {"status": "ok", "exact_length": True, "rss_scope": "case", "load_s": 1.0, "first_translation_s": 1.5}
    rounds = [
        {**item, "times_s": [0.1, 0.3], "tokens": [8, 8], "peak_rss_mib": 50.0, "outputs": [[1]]},
        {**item, "times_s": [0.2, 0.4], "tokens": [8, 8], "peak_rss_mib": 70.0, "outputs": [[2]], "load_s": 3.0},
    ]
    merged = merge_rounds("fixed-b1-greedy", "enzh-int8", rounds)
    assert merged["rounds"] == 2 and merged["times_ms"] == [100.0, 300.0, 200.0, 400.0]
    assert merged["median_ms"] == pytest.approx(250.0) and merged["min_ms"] == pytest.approx(100.0)
    assert merged["peak_rss_mib"] == 70.0 and merged["load_s"] == 2.0 and merged["outputs"] == [[2]]
    failed = merge_rounds("c", "e", [rounds[0], {"status": "error", "error": "LengthError: ..."}])
    assert failed == {"case": "c", "engine": "e", "status": "error", "error": "LengthError: ..."}


def _cell(case: str, engine: str, median: float) -> dict:
    return {"case": case, "engine": engine, "status": "ok", "median_ms": median, "min_ms": median, "max_ms": median}


def test_targets_of_both_issues_are_judged_on_their_models():
    from enzh.tools.bench.targets import evaluate_targets

    cases = [
        {"id": f"{group}-{cell}", "group": group, "label": cell}
        for group in ("fixed", "natural")
        for cell in ("b1-greedy", "b16-greedy")
    ]
    results = [
        _cell("natural-b1-greedy", "enzh-fp32", 9.0),
        _cell("natural-b1-greedy", "ct2-float32", 10.0),
        _cell("natural-b16-greedy", "enzh-fp32", 12.0),
        _cell("natural-b16-greedy", "ct2-float32", 10.0),
        _cell("fixed-b16-greedy", "enzh-int8-source-shortlist", 105.0),
        _cell("fixed-b16-greedy", "enzh-int8-shortlist", 100.0),
        _cell("fixed-b16-greedy", "enzh-int8", 60.0),
        _cell("fixed-b16-greedy", "ct2-int8", 100.0),
    ]
    report = {
        "models": {"fixed": {"name": "opus-mt-en-zh-shaped"}, "natural": {"name": "demo"}},
        "cases": cases,
        "results": results,
        "engines": [],
    }
    got = {(t["target"], t["cell"]): (round(t["value"], 2), t["met"], t["issues"]) for t in evaluate_targets(report)}
    natural = "fp32 ≤ 1.0× CTranslate2 float32, natural length"
    assert got == {
        (natural, "b1-greedy"): (0.9, True, "#15"),
        (natural, "b16-greedy"): (1.2, False, "#15"),
        ("source-aware shortlist ≤ 1.1× the 8,000-token one", "b16-greedy"): (1.05, True, "#15"),
        ("int8 ≤ 0.5× CTranslate2 int8", "b16-greedy"): (0.6, False, "#6, #15"),
    }
    # Natural cells measured on another model are not the demo model's targets.
    report["models"]["natural"]["name"] = "another"
    assert all("natural" not in t["target"] for t in evaluate_targets(report))
