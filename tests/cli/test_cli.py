"""The command line, end to end, in subprocesses like a user runs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from enzh import Translator
from enzh.cli.main import build_parser
from enzh.runtime.options import TranslateOptions


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "enzh", *args], input=stdin, capture_output=True, text=True, timeout=300, check=False
    )


def test_export_translate_validate(tiny_source, tmp_path):
    out = tmp_path / "model"
    result = run("export", str(tiny_source("base")), str(out))
    assert result.returncode == 0, result.stderr
    assert f"-> {out}" in result.stdout
    again = run("export", str(tiny_source("base")), str(out))
    assert again.returncode == 2 and "is not empty; pass --force" in again.stderr

    expected = Translator.load(out).translate(["the cat", "where is the station?"], beam_size=2, max_new_tokens=8)
    args = ("translate", "--model", str(out), "--beam-size", "2", "--max-new-tokens", "8")
    result = run(*args, "the cat", "where is the station?")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == expected
    piped = run(*args, stdin="the cat\nwhere is the station?\n")
    assert piped.stdout.splitlines() == expected

    report = run("validate", str(out), "--source", str(tiny_source("base")))
    assert report.returncode == 0, report.stdout + report.stderr
    assert "greedy, batched" in report.stdout and "RESULT: ok" in report.stdout

    # A quantized variant is not held to float32 tolerance: a one-line error with the remedy, not a FAIL report.
    int8 = tmp_path / "int8"
    assert run("quantize", str(out), str(int8), "--precision", "int8").returncode == 0
    report = run("validate", str(int8), "--source", str(tiny_source("base")))
    assert report.returncode == 2 and report.stdout == ""
    assert f"{int8} is an int8 variant" in report.stderr and f"enzh eval --model {int8}" in report.stderr


def test_errors_exit_2_with_a_message(tmp_path):
    result = run("translate", "--model", str(tmp_path), "hi")
    assert result.returncode == 2
    assert "has no manifest.json" in result.stderr and "enzh export" in result.stderr
    result = run("translate", "--model", str(tmp_path), "--beam-size", "0", "hi")
    assert result.returncode == 2 and "expected a positive integer, got 0" in result.stderr


def test_cli_flags_match_translate_options():
    """The CLI is a thin layer over TranslateOptions: every option has a flag of the same name."""
    parser = build_parser()
    translate = next(a for a in parser._subparsers._actions if a.dest == "command").choices["translate"]  # type: ignore[union-attr]
    flags = {a.dest for a in translate._actions}
    assert set(TranslateOptions.__dataclass_fields__) <= flags


def test_quantize_has_a_flag_per_setting():
    """`enzh quantize` is a thin layer over QuantizeSettings: a flag per field, except the ones named here."""
    from enzh.quantize.settings import QuantizeSettings

    parser = build_parser()
    quantize = next(a for a in parser._subparsers._actions if a.dest == "command").choices["quantize"]  # type: ignore[union-attr]
    flags = {a.dest for a in quantize._actions}
    # shortlist_ids: counted from --shortlist N --shortlist-corpus FILE; linear_op and embedding: Python API only
    # (the layouts docs/precision.md compares; the defaults are the measured best).
    indirect = {"shortlist_ids", "linear_op", "embedding"}
    assert set(QuantizeSettings.__dataclass_fields__) - indirect <= flags
    assert {"shortlist", "shortlist_corpus"} <= flags


@pytest.mark.parametrize("module", ["torch", "transformers"])
def test_runtime_never_imports_heavy_frameworks(tiny_export, module):
    code = (
        "import sys, enzh\n"
        f"t = enzh.Translator.load({str(tiny_export('base'))!r})\n"
        "t.translate(['the cat', ''], max_new_tokens=3)\n"
        "t.translate(['the cat'], beam_size=2, max_new_tokens=3)\n"
        f"print({module!r} in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "False"


def test_quantize_flags_match_quantize_settings():
    """`enzh quantize`/`export` offer exactly the precisions and caches enzh.quantize.settings accepts."""
    from enzh.quantize.settings import CACHES, PRECISIONS

    commands = next(a for a in build_parser()._subparsers._actions if a.dest == "command").choices  # type: ignore[union-attr]
    for name, precisions in (("quantize", set(PRECISIONS) - {"fp32"}), ("export", set(PRECISIONS))):
        actions = {a.dest: a for a in commands[name]._actions}
        assert set(actions["precision"].choices) == precisions
        assert tuple(actions["cache"].choices) == CACHES
    assert {"shortlist", "shortlist_corpus"} <= {a.dest for a in commands["quantize"]._actions}


def test_translate_scores_and_alignments_columns():
    """--scores and --alignments: tab-separated columns after each translation, equal to the Python API's."""
    import re

    from enzh.runtime.confidence import FLAGS
    from enzh.runtime.router import Translators

    texts = ["The weather is nice today.", "Hello world", "今天天气很好。", "123"]
    expected = Translators.load().translate_detailed(texts, alignments=True)
    result = run("translate", "--scores", "--alignments", *texts)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(texts)
    for line, translation in zip(lines, expected, strict=True):
        text, score, flags, pairs = line.split("\t")
        assert translation.confidence is not None and translation.alignment is not None
        assert text == translation.text
        assert re.fullmatch(r"-?\d+\.\d{4}", score) and float(score) == round(translation.confidence.score, 4)
        assert flags == (",".join(translation.confidence.flags) or "-")
        assert flags == "-" or set(flags.split(",")) <= set(FLAGS)
        assert re.fullmatch(r"(\d+-\d+( \d+-\d+)*)?", pairs) and pairs == translation.alignment.pharaoh()
    assert any(line.split("\t")[2] != "-" for line in lines)  # "Hello world" is out of the demo's domain
    only_scores = run("translate", "--scores", texts[0])
    assert only_scores.stdout.count("\t") == 2
    only_pairs = run("translate", "--alignments", stdin=texts[0] + "\n")
    assert only_pairs.stdout.rstrip("\n").split("\t")[1] == expected[0].alignment.pharaoh()  # type: ignore[union-attr]
    plain = run("translate", texts[0])
    assert plain.stdout == expected[0].text + "\n"
