"""``enzh translate-file``: one-line errors, atomic output, the resume journal (also across a SIGKILL)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from enzh.cli.main import main
from enzh.documents.files import JOURNAL_SUFFIX, finish, prepare, translate_file
from enzh.documents.sentences import CHUNK
from enzh.runtime.translator import Translator


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def cli(*args: str) -> int:
    return main(["translate-file", *args])


def test_translate_file_writes_output_and_leaves_nothing_else(tmp_path, capsys):
    source = tmp_path / "in.md"
    source.write_bytes(b"# Where is the school?\r\n\r\nIs my son resting?\r\n")
    assert cli(str(source), str(tmp_path / "out.md"), "--beam-size", "1") == 0
    assert (tmp_path / "out.md").read_bytes() == "# 学校在哪里？\r\n\r\n我儿子在休息吗？\r\n".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.md", "out.md"]


def test_format_option_overrides_the_extension(tmp_path):
    source = tmp_path / "subs.data"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\nWhere is the school?\n", encoding="utf-8")
    assert cli(str(source), str(tmp_path / "out.data"), "--format", "srt", "--beam-size", "1") == 0
    assert (tmp_path / "out.data").read_text(encoding="utf-8") == "1\n00:00:01,000 --> 00:00:02,000\n学校在哪里？\n"


def test_traditional_chinese_conversion(tmp_path):
    pytest.importorskip("opencc")
    source = tmp_path / "in.txt"
    source.write_text("Where is the school?\nGermany is bigger than Italy.\n", encoding="utf-8")
    outputs = {}
    for convert in ("none", "s2t", "s2tw", "s2twp", "s2hk"):
        out = tmp_path / f"{convert}.txt"
        assert cli(str(source), str(out), "--beam-size", "1", "--convert", convert) == 0
        outputs[convert] = out.read_text(encoding="utf-8")
    assert outputs == {
        "none": "学校在哪里？\n德国比意大利大。\n",
        "s2t": "學校在哪裏？\n德國比意大利大。\n",
        "s2tw": "學校在哪裡？\n德國比意大利大。\n",
        "s2twp": "學校在哪裡？\n德國比義大利大。\n",
        "s2hk": "學校在哪裏？\n德國比意大利大。\n",
    }
    hant = tmp_path / "hant.txt"
    assert cli(str(source), str(hant), "--beam-size", "1", "--target", "zh-Hant") == 0
    assert (
        hant.read_text(encoding="utf-8") == "学校在哪里？\n德国比意大利大。\n"
    )  # the demo model only writes Simplified


@pytest.mark.parametrize(
    ("name", "content", "extra", "message"),
    [
        ("missing.txt", None, [], "input file '.*missing.txt' does not exist"),
        ("report.pdf", b"%PDF", [], "PDF is not supported: .* convert it to .docx or .odt first"),
        (
            "notes.rtf",
            b"{\\rtf1}",
            [],
            "cannot tell the format of .*'.rtf'; accepted: .txt, .* or name it with --format",
        ),
        ("bin.txt", b"\x00\x01\x02", [], "looks binary"),
        ("latin1.txt", b"caf\xe9\n", [], "is not UTF-8: byte 0xe9 at offset 3 .* UTF-8, with or without a BOM"),
        ("a.jsonl", b'{"id": 1}\n', [], "line 1 has no field 'text'"),
        ("a.jsonl", b'{"text": "a"}\n', ["--field", "src"], "line 1 has no field 'src'"),
        ("a.tsv", b"id\ten\n", [], "no column named 'text'"),
        ("a.docx", b"not a zip", [], "not a Word .docx file"),
        ("a.txt", b"Hello\n", ["--field", "x"], "field applies to the jsonl, tsv and csv formats only"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, capsys, name, content, extra, message):
    source = tmp_path / name
    if content is not None:
        source.write_bytes(content)
    output = tmp_path / ("out" + Path(name).suffix)
    assert cli(str(source), str(output), *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("enzh translate-file: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert re.search(message, err), err
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ([name] if content is not None else [])


def test_output_must_differ_from_input_and_existing_output_survives_failure(tmp_path, capsys):
    source = tmp_path / "a.txt"
    source.write_text("Where is the school?\n", encoding="utf-8")
    assert cli(str(source), str(tmp_path / "." / "a.txt")) == 2
    assert "OUTPUT is INPUT" in capsys.readouterr().err
    assert source.read_text(encoding="utf-8") == "Where is the school?\n"
    assert cli(str(source), str(tmp_path / "no" / "b.txt")) == 2
    assert "does not exist" in capsys.readouterr().err
    old = tmp_path / "old.jsonl"
    old.write_text("previous\n", encoding="utf-8")
    (tmp_path / "bad.jsonl").write_text('{"text": 1}\n', encoding="utf-8")
    assert cli(str(tmp_path / "bad.jsonl"), str(old)) == 2
    assert old.read_text(encoding="utf-8") == "previous\n"


class Crash(Exception):
    pass


def test_journal_resume_in_process(tmp_path, translator):
    lines = [f"There are {n} books at the bookstore." for n in range(1, 3 * CHUNK + 10)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines * 2) + "\n", encoding="utf-8")
    reference = tmp_path / "reference.txt"
    translate_file(translator, source, reference, beam_size=1, progress=False)

    class Flaky(Translator):
        calls = 0

        def translate(self, texts, **kwargs):  # type: ignore[override]
            type(self).calls += 1
            if type(self).calls > 2:
                raise Crash
            return super().translate(texts, **kwargs)

    output = tmp_path / "out.txt"
    with pytest.raises(Crash):
        finish(prepare(source, output, beam_size=1), Flaky.load(translator.directory), progress=False)
    journal = output.with_name(output.name + JOURNAL_SUFFIX)
    assert not output.exists() and journal.exists()
    assert len(journal.read_bytes().splitlines()) == 1 + 2  # header and two chunks
    with journal.open("ab") as f:
        f.write(b'{"src": ["torn')  # a record cut short by a kill is dropped
    # Other options: the journal is not used (and is started over).
    done = finish(prepare(source, tmp_path / "other.txt", beam_size=2), translator, progress=False)
    assert done == len(lines)
    # Same options: the two journaled chunks are reused, the rest translated, the bytes are the same.
    done = finish(prepare(source, output, beam_size=1), translator, progress=False)
    assert done == len(lines) - 2 * CHUNK
    assert output.read_bytes() == reference.read_bytes()
    assert not journal.exists()


def test_killed_10000_line_run_resumes_to_the_same_bytes(tmp_path, translator):
    kinds = (
        "There are {} books at the bookstore.",
        "There are {} students in the classroom.",
        "My classmate is {} years old.",
    )
    distinct = [kind.format(n) for n in range(2, 701) for kind in kinds]
    lines = [distinct[(i * 7) % len(distinct)] for i in range(10_000)]  # 10,000 lines, 2,097 distinct
    source = tmp_path / "big.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "big.zh.txt"
    journal = output.with_name(output.name + JOURNAL_SUFFIX)
    command = [sys.executable, "-m", "enzh", "-v", "translate-file", str(source), str(output), "--beam-size", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and journal.read_bytes().count(b"\n") >= 1 + 3:  # the header and three chunks
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not output.exists()
    journaled = journal.read_bytes().count(b"\n") - 1
    assert journaled >= 3

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    counts = re.search(r"\((\d+) sentences translated, (\d+) from the journal\)", resumed.stderr)
    assert counts is not None, resumed.stderr
    assert int(counts.group(2)) >= journaled * CHUNK  # a chunk may have been written before the kill landed
    assert int(counts.group(1)) + int(counts.group(2)) == len(distinct)
    assert not journal.exists()

    reference = tmp_path / "reference.txt"
    translate_file(translator, source, reference, beam_size=1, progress=False)
    assert output.read_bytes() == reference.read_bytes()
    text = output.read_text(encoding="utf-8")
    assert text.count("\n") == 10_000 and "教室里有" in text
