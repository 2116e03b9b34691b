"""``--glossary FILE`` of ``enzh translate`` and ``enzh translate-file``, in subprocesses like a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from enzh.runtime.default_model import default_model_dirs
from enzh.runtime.translator import Translator

TERMS = "# names\nMary\t玛莉\nBeijing\t北京市\n"
TEXTS = ["Mary was born in Chengdu in 1985.", "Sarah is from Beijing.", "Where is the school?"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "enzh", *args], capture_output=True, text=True, timeout=300, check=False
    )


def expected() -> list[str]:
    return Translator.load(default_model_dirs()[0]).translate(TEXTS, glossary={"Mary": "玛莉", "Beijing": "北京市"})


def test_translate_with_a_glossary(tmp_path: Path) -> None:
    glossary = tmp_path / "terms.tsv"
    glossary.write_text(TERMS, encoding="utf-8")
    result = run("translate", "--glossary", str(glossary), *TEXTS)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == expected()
    assert lines[0].count("玛莉") == 1 and lines[1].count("北京市") == 1 and lines[2] == "学校在哪里？"


def test_translate_file_with_a_glossary(tmp_path: Path) -> None:
    glossary = tmp_path / "terms.tsv"
    glossary.write_text(TERMS, encoding="utf-8")
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    result = run("translate-file", str(source), str(output), "--glossary", str(glossary))
    assert result.returncode == 0, result.stderr
    assert output.read_text(encoding="utf-8").splitlines() == expected()


def test_bad_glossary_files_exit_2_naming_the_line(tmp_path: Path) -> None:
    glossary = tmp_path / "bad.tsv"
    glossary.write_text("Mary\t玛莉\nBeijing 北京市\n", encoding="utf-8")
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("Sarah is from Beijing.\n", encoding="utf-8")
    message = f"{glossary}:2: expected 'source<TAB>target[<TAB>flags]', got 'Beijing 北京市' (no tab)"
    for args in (
        ("translate", "--glossary", str(glossary), "x"),
        ("translate-file", str(source), str(output), "--glossary", str(glossary)),
    ):
        result = run(*args)
        assert result.returncode == 2
        assert result.stderr.strip().endswith(message), result.stderr
        assert "Traceback" not in result.stderr
    assert not output.exists()
