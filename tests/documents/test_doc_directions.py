"""Documents in either direction: a Chinese document goes to the zh->en model, its markup kept, its English kept."""

from __future__ import annotations

import pytest

from enzh.cli.main import main
from enzh.documents.api import translate_document
from enzh.documents.files import prepare
from enzh.runtime.default_model import DEMO_ZH_EN_DIR
from enzh.runtime.translator import Translator

WEATHER, COFFEE = "今天天气很好。", "我想要一杯咖啡。"


@pytest.fixture(scope="module")
def zh_en() -> Translator:
    return Translator.load(DEMO_ZH_EN_DIR)


def english(zh_en: Translator, *texts: str) -> list[str]:
    return zh_en.translate(list(texts), beam_size=1)


def test_a_chinese_html_page_keeps_its_markup_and_its_english(zh_en):
    page = f"<h1>{WEATHER}</h1><p>{COFFEE} <b>ONNX Runtime</b></p><p>Already English.</p>"
    got = translate_document(zh_en, page, format="html", beam_size=1, source="zh")
    weather, coffee = english(zh_en, WEATHER, COFFEE)
    assert got.startswith(f"<h1>{weather}</h1>")
    assert "<b>ONNX Runtime</b>" in got and f"<p>{coffee}" in got  # the English mark is kept as it is
    assert "<p>Already English.</p>" in got  # no Han character: not sent to the model


@pytest.mark.parametrize(
    ("name", "text", "want"),
    [
        ("a.txt", f"{WEATHER}{COFFEE}\n\nHello.\n", "{0} {1}\n\nHello.\n"),
        ("a.srt", f"1\n00:00:01,000 --> 00:00:02,000\n{WEATHER}\n", "1\n00:00:01,000 --> 00:00:02,000\n{0}\n"),
        ("a.md", f"# {WEATHER}\n\n- {COFFEE}\n", "# {0}\n\n- {1}\n"),
    ],
)
def test_translate_file_tells_a_chinese_document_and_routes_it(tmp_path, zh_en, name, text, want):
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    assert main(["translate-file", str(source), str(tmp_path / f"out-{name}"), "--beam-size", "1"]) == 0
    expected = want.format(*english(zh_en, WEATHER, COFFEE))
    assert (tmp_path / f"out-{name}").read_text(encoding="utf-8") == expected
    # The explicit direction gives the same bytes.
    assert main(["translate-file", str(source), str(tmp_path / "explicit"), "--source", "zh", "--target", "en"]) == 0


def test_auto_detection_and_the_options_that_need_english(tmp_path):
    source = tmp_path / "a.txt"
    source.write_text(f"{WEATHER}\nONNX\n", encoding="utf-8")
    assert prepare(source, tmp_path / "o.txt", source="auto").options.source == "zh"
    source.write_text("The weather is nice today. 北京\n", encoding="utf-8")
    assert prepare(source, tmp_path / "o.txt", source="auto").options.source == "en"
    with pytest.raises(ValueError, match="unknown source 'fr'; accepted: en, zh"):
        prepare(source, tmp_path / "o.txt", source="fr")
    with pytest.raises(ValueError, match="convert turns Chinese output into Traditional characters"):
        prepare(source, tmp_path / "o.txt", source="zh", convert="s2t")


def test_a_chinese_document_into_chinese_comes_back_as_it_is(tmp_path, capsys):
    source = tmp_path / "a.txt"
    source.write_text(f"{WEATHER}\n", encoding="utf-8")
    assert main(["translate-file", str(source), str(tmp_path / "o.txt"), "--target", "zh-Hans"]) == 0
    assert (tmp_path / "o.txt").read_text(encoding="utf-8") == f"{WEATHER}\n"
