"""One segmentation stage for every entry point: the same text gives the same translation through the Python
API, the CLI, HTTP (v1 and LibreTranslate) and files, each sentence translated exactly as it is alone."""

from __future__ import annotations

import subprocess
import sys

import pytest
from server_harness import in_process

from enzh import Translator
from enzh.serve.options import ServeOptions

TWO = "Mr. Wang is taller than me. The price is 3.5 dollars."
PARAGRAPH = "The weather is nice today. Where is the train station?\n\nMy brother is taller than me."


@pytest.fixture(scope="module")
def demo() -> Translator:
    return Translator.load()


def alone(demo: Translator, sentence: str) -> str:
    return demo.translate([sentence], beam_size=1)[0]


def test_two_sentences_each_translated_as_alone(demo):
    first, second = "Mr. Wang is taller than me.", "The price is 3.5 dollars."
    assert demo.translate([TWO], beam_size=1) == [alone(demo, first) + alone(demo, second)]
    assert demo.translate_detailed([TWO], beam_size=1)[0].parts == 2


def test_paragraph_layout_kept(demo):
    expected = (
        alone(demo, "The weather is nice today.")
        + alone(demo, "Where is the train station?")
        + "\n\n"
        + alone(demo, "My brother is taller than me.")
    )
    assert demo.translate([PARAGRAPH], beam_size=1) == [expected]
    assert expected == "今天天气很好。车站在哪里？\n\n我哥哥比我高。"


def test_same_translation_through_cli_and_http(demo):
    expected = demo.translate([TWO], beam_size=1)[0]
    cli = subprocess.run(
        [sys.executable, "-m", "enzh", "translate", "--beam-size", "1", TWO],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert cli.stdout == expected + "\n"
    with in_process(ServeOptions(default_beam_size=1), demo) as client:
        v1 = client.post("/v1/translate", json={"text": [TWO, PARAGRAPH], "beam_size": 1}).json()
        assert v1["translations"] == demo.translate([TWO, PARAGRAPH], beam_size=1)
        assert v1["sentences"] == 5
        libre = client.post("/translate", json={"q": TWO, "source": "en", "target": "zh"}).json()
        assert libre["translatedText"] == expected


def test_same_translation_through_files_and_documents(demo, tmp_path):
    from enzh import translate_document

    source = tmp_path / "in.txt"
    source.write_text(f"{TWO}\n\n{PARAGRAPH}\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "enzh", "translate-file", str(source), str(tmp_path / "out.txt"), "--beam-size", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    expected = "\n\n".join(demo.translate([TWO, PARAGRAPH], beam_size=1)) + "\n"
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == expected
    assert translate_document(demo, source.read_text(encoding="utf-8"), format="txt", beam_size=1) == expected
