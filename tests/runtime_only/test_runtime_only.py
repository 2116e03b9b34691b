"""What a runtime-only install (``pip install enzh-onnx``, no extras) must do with the embedded demo model.

These tests import nothing but the runtime: scripts/test_runtime_only.sh runs them in a fresh virtual
environment without torch, transformers or onnx; the main suite runs them too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from enzh import Translator
from enzh.runtime.default_model import DEMO_DIR, DEMO_ZH_EN_DIR, default_model_dir
from enzh.runtime.errors import EnzhError, ModelDirError, OptionsError
from enzh.runtime.router import Translators

README_FIVE = {
    "The weather is nice today.": "今天天气很好。",
    "I would like a cup of coffee.": "我想要一杯咖啡。",
    "The meeting has been postponed.": "会议已被推迟。",
    "Where is the train station?": "车站在哪里？",
    "My brother is taller than me.": "我哥哥比我高。",
}


# The five, translated back by the embedded zh->en model: the corpus's own English for the last two (its lexicon has
# 车站 as "the station" and 哥哥 as "older brother"; the model card says so).
README_FIVE_BACK = {
    "今天天气很好。": "The weather is nice today.",
    "我想要一杯咖啡。": "I would like a cup of coffee.",
    "会议已被推迟。": "The meeting has been postponed.",
    "车站在哪里？": "Where is the station?",
    "我哥哥比我高。": "My older brother is taller than me.",
}


@pytest.fixture(scope="module")
def demo() -> Translator:
    return Translator.load()


@pytest.fixture(scope="module")
def pair() -> Translators:
    return Translators.load()


@pytest.mark.parametrize("beam_size", [1, 4])
def test_the_embedded_pair_translates_both_ways(pair, demo, beam_size):
    assert [e.info.directory for e in pair.engines] == [DEMO_DIR, DEMO_ZH_EN_DIR]
    assert pair.directions == (("en", "zh"), ("zh", "en"))
    assert pair.translate(list(README_FIVE_BACK), beam_size=beam_size) == list(README_FIVE_BACK.values())
    mixed = ["我想要一杯咖啡。", "The weather is nice today.", "2024", "今天天气很好。我想要一杯咖啡。"]
    assert pair.translate(mixed, beam_size=beam_size) == [
        "I would like a cup of coffee.",
        "今天天气很好。",
        "2024",
        "The weather is nice today. I would like a cup of coffee.",  # two Chinese sentences: a space in English
    ]
    # An explicit direction, and text already in the target language.
    assert pair.translate(["今天天气很好。"], source="zh", target="en", beam_size=beam_size) == [
        README_FIVE_BACK["今天天气很好。"]
    ]
    assert pair.translate(["The weather is nice today."], target="en") == ["The weather is nice today."]
    hant = pair.translate(["The weather is nice today."], target="zh-Hant", beam_size=1)
    assert hant == demo.translate(["The weather is nice today."], target="zh-Hant", beam_size=1)


def test_the_zh_en_model_keeps_text_without_chinese():
    zh_en = Translator.load(DEMO_ZH_EN_DIR)
    assert zh_en.info.name == "enzh-demo-zh-en" and zh_en.info.embedded
    assert zh_en.info.directions == (("zh", "en"),)
    assert zh_en.translate(["The weather is nice today.", "  ", "今天天气很好。"], beam_size=1) == [
        "The weather is nice today.",
        "  ",
        "The weather is nice today.",
    ]


def test_the_default_is_the_shipped_directory(demo):
    assert default_model_dir() == DEMO_DIR
    assert demo.directory == DEMO_DIR
    assert demo.manifest.source["id"] == "enzh-demo"
    assert demo.manifest.precision == "fp32"


@pytest.mark.parametrize("beam_size", [1, 4])
def test_readme_sentences(demo, beam_size):
    assert demo.translate(list(README_FIVE), beam_size=beam_size) == list(README_FIVE.values())


def test_blank_and_odd_input(demo):
    out = demo.translate(["", "   ", "The weather is nice today.", "\ud800 broken surrogate"], beam_size=1)
    assert out[:3] == ["", "   ", "今天天气很好。"]
    assert isinstance(out[3], str)


def test_bad_arguments_are_clear_errors(demo):
    with pytest.raises(TypeError, match="wrap it: translate"):
        demo.translate("The weather is nice today.")  # type: ignore[arg-type]
    with pytest.raises(OptionsError, match="beam_size must be >= 1"):
        demo.translate(["x"], beam_size=0)
    assert issubclass(OptionsError, EnzhError) and issubclass(OptionsError, ValueError)


def test_a_changed_file_is_named_on_load(tmp_path):
    copy = tmp_path / "demo"
    shutil.copytree(DEMO_DIR, copy)
    data = bytearray((copy / "decoder.onnx").read_bytes())
    data[-1] ^= 0xFF
    (copy / "decoder.onnx").write_bytes(bytes(data))
    with pytest.raises(ModelDirError, match="decoder.onnx: sha256 does not match the manifest"):
        Translator.load(copy)


def test_translating_imports_no_heavy_module():
    code = (
        "import sys, enzh\n"
        "enzh.Translator.load().translate(['The weather is nice today.'], beam_size=2)\n"
        "heavy = [m for m in ('torch', 'transformers', 'onnx', 'fastapi') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_cli_reads_stdin(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "enzh", "translate", "--beam-size", "1"],
        input="The weather is nice today.\nWhere is the train station?\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.splitlines() == ["今天天气很好。", "车站在哪里？"]


def test_cli_error_is_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "enzh", "translate", "--model", str(tmp_path / "none"), "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("enzh translate: error: ") and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("a.txt", "The weather is nice today.\n\nWhere is the train station?\n", "今天天气很好。\n\n车站在哪里？\n"),
        # (no anchor holds on the demo model's output: the mark goes where the aligner's cross-attention puts "nice")
        ("a.html", "<p>The weather is <b>nice</b> today.</p>", "<p>今天天气很<b>好</b>。</p>"),
        (
            "a.srt",
            "1\n00:00:01,000 --> 00:00:02,000\nThe weather is nice today.\n",
            "1\n00:00:01,000 --> 00:00:02,000\n今天天气很好。\n",
        ),
        ("a.jsonl", '{"id": 1, "text": "Where is the train station?"}\n', '{"id": 1, "text": "车站在哪里？"}\n'),
        ("a.csv", 'id,text\n1,"Where is the train station?"\n', "id,text\n1,车站在哪里？\n"),  # the stdlib's csv
    ],
)
def test_translate_file_without_extras(tmp_path, name, content, expected):
    source, out = tmp_path / name, tmp_path / f"out-{name}"
    source.write_text(content, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "enzh", "translate-file", str(source), str(out), "--beam-size", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8") == expected
