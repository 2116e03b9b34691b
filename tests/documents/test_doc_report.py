"""``translate-file --report FILE``: the JSON sidecar of the lowest-scoring units, with where they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from enzh.cli.main import main
from enzh.documents.files import finish, prepare
from enzh.documents.report import LOWEST
from enzh.runtime.confidence import FLAGS
from enzh.runtime.translator import Translator

OUT_OF_DOMAIN = "The central bank raised interest rates by half a percentage point on Tuesday."


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def _check(report: dict, source: Path, translator: Translator) -> None:
    assert report["input"] == str(source) and report["model"] == translator.info.label
    lowest = report["lowest"]
    assert [u["score"] for u in lowest] == sorted(u["score"] for u in lowest)
    assert report["unscored"] == 0 and len(lowest) == min(report["units"], LOWEST)
    lines = source.read_text(encoding="utf-8").splitlines()
    for unit in lowest:
        assert unit["score"] == min(s["score"] for s in unit["sentences"])
        assert set(unit["flags"]) == {f for s in unit["sentences"] for f in s["flags"]} and set(unit["flags"]) <= set(
            FLAGS
        )
        for sentence in unit["sentences"]:
            found = translator.translate_detailed([sentence["source"]])[0]
            assert found.confidence is not None
            assert sentence["translation"] == found.text and sentence["score"] == round(found.confidence.score, 4)
        # the unit's first sentence begins on its line
        assert unit["line"] is not None and unit["sentences"][0]["source"][:16] in lines[unit["line"] - 1]


def test_txt_report_names_the_low_confidence_lines(tmp_path, translator):
    source = tmp_path / "in.txt"
    source.write_text(
        f"The weather is nice today.\n\n{OUT_OF_DOMAIN}\n"
        "Where is the school? My brother is taller than me.\n今天天气很好。\n",
        encoding="utf-8",
    )
    report_path = tmp_path / "report.json"
    assert main(["translate-file", str(source), str(tmp_path / "out.txt"), "--report", str(report_path)]) == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    _check(report, source, translator)
    assert report["units"] == 3 and report["sentences"] == 4 and report["format"] == "txt"
    worst = report["lowest"][0]
    assert worst["line"] == 3 and worst["sentences"][0]["source"] == OUT_OF_DOMAIN and "low_score" in worst["flags"]
    assert report["low_confidence_units"] >= 1
    # The output is the same with and without a report.
    assert main(["translate-file", str(source), str(tmp_path / "plain.txt")]) == 0
    assert (tmp_path / "plain.txt").read_bytes() == (tmp_path / "out.txt").read_bytes()


def test_srt_report_finds_the_cue_of_a_sentence_over_two_cues(tmp_path, translator):
    source = tmp_path / "in.srt"
    source.write_text(
        "1\n00:00:01,000 --> 00:00:02,000\nThe weather is nice today.\n\n"
        "2\n00:00:03,000 --> 00:00:04,000\nThe central bank raised interest\n\n"
        "3\n00:00:04,500 --> 00:00:05,000\nrates by half a percentage point on Tuesday.\n",
        encoding="utf-8",
    )
    prepared = prepare(source, tmp_path / "out.srt")
    finish(prepared, translator, progress=False, report=tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    _check(report, source, translator)
    assert report["units"] == 2 and report["lowest"][0]["line"] == 7  # the text line of cue 2


def test_report_is_refused_with_ray(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("Hi.\n", encoding="utf-8")
    code = main(["translate-file", str(source), str(tmp_path / "o.txt"), "--report", "r.json", "--ray", "local"])
    assert code == 2 and "--report is not available with --ray" in capsys.readouterr().err
