"""Plain text documents on the demo model: layout byte for byte, one sentence per model input."""

from __future__ import annotations

import pytest

from enzh.documents.api import translate_document
from enzh.documents.errors import DocumentError
from enzh.documents.formats import detect_format, resolve_format
from enzh.runtime.translator import Translator


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def txt(translator: Translator, data: str | bytes) -> str | bytes:
    return translate_document(translator, data, format="txt", beam_size=1)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "The weather is nice today.\r\n\r\n\r\n  Where is the school? Is my son resting?\t\r\n"
            "I would like a cup of coffee.",
            "今天天气很好。\r\n\r\n\r\n  学校在哪里？我儿子在休息吗？\t\r\n我想要一杯咖啡。",
        ),
        ("Where is the school?\rIs my son resting?\r", "学校在哪里？\r我儿子在休息吗？\r"),
        (
            "The meeting has been postponed.\n- My bicycle was stolen last night.\n",
            "会议已被推迟。\n这辆自行车昨天晚上被偷走了。\n",
        ),
        ("我想要一杯咖啡。\n\n123 — 456\n", "我想要一杯咖啡。\n\n123 — 456\n"),
        ("", ""),
        ("\n \n\t\n", "\n \n\t\n"),
    ],
    ids=["crlf-blank-lines-indent", "cr", "lines-are-units", "chinese-unchanged", "empty", "blank"],
)
def test_text_layout_is_kept(translator, source, expected):
    assert txt(translator, source) == expected


def test_bytes_in_bytes_out_bom_kept(translator):
    assert txt(translator, "\ufeffWhere is the school?\r\n".encode()) == "\ufeff学校在哪里？\r\n".encode()
    assert txt(translator, b"Where is the school?") == "学校在哪里？".encode()


def test_chinese_is_never_sent_to_the_model(demo_dir):
    calls: list[list[str]] = []

    class Spy(Translator):
        def translate(self, texts, **kwargs):  # type: ignore[override]
            calls.append(list(texts))
            return super().translate(texts, **kwargs)

    spy = Spy.load(demo_dir)
    assert txt(spy, "我想要一杯咖啡。\n12:30\n") == "我想要一杯咖啡。\n12:30\n"
    assert calls == []
    assert (
        txt(spy, "Where is the school?\nWhere is the school?\n我想要一杯咖啡。")
        == "学校在哪里？\n学校在哪里？\n我想要一杯咖啡。"
    )
    assert calls == [["Where is the school?"]]  # each distinct sentence once


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"ab\x00cd", "looks binary"),
        (b"caf\xe9", "not UTF-8: byte 0xe9 at offset 3"),
        ("\ufeffhi".encode("utf-16-le"), "UTF-16"),
    ],
)
def test_undecodable_input_names_the_expected_encoding(translator, data, message):
    with pytest.raises(DocumentError, match=message) as info:
        txt(translator, data)
    assert "UTF-8, with or without a BOM" in str(info.value)


def test_format_detection():
    assert [detect_format(n) for n in ("a.TXT", "b.md", "c.srt", "d.vtt", "e.docx", "f.jsonl", "g.tsv", "h.htm")] == [
        "txt",
        "md",
        "srt",
        "vtt",
        "docx",
        "jsonl",
        "tsv",
        "html",
    ]
    assert [detect_format(n) for n in ("a.pptx", "b.XLSX", "c.epub", "d.odt", "e.odp")] == [
        "pptx",
        "xlsx",
        "epub",
        "odt",
        "odp",
    ]
    with pytest.raises(DocumentError, match=r"'\.rtf'; accepted: \.txt, .*--format"):
        detect_format("report.rtf")
    with pytest.raises(DocumentError, match=r"^PDF is not supported: .*\(LibreOffice: soffice .*, or pdf2docx\)"):
        detect_format("report.pdf")
    with pytest.raises(DocumentError, match="no extension"):
        detect_format("README")
    with pytest.raises(DocumentError, match="unknown format 'doc'"):
        resolve_format("doc")
