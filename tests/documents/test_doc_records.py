"""JSONL and TSV on the demo model: the named field translated, every other byte of each line kept."""

from __future__ import annotations

import json

import pytest

from enzh.documents.api import translate_document
from enzh.documents.errors import DocumentError
from enzh.runtime.translator import Translator


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def run(translator: Translator, data: str, fmt: str, field: str | None = None) -> str:
    out = translate_document(translator, data, format=fmt, field=field, beam_size=1)
    assert isinstance(out, str)
    return out


def test_jsonl_splices_the_field_into_the_line(translator):
    source = (
        '{"id": 1.0, "text": "Where is the school?", "tags": ["a" , "b"], "n": 1e3}\r\n'
        "\r\n"
        '{ "text" : "Is my son resting?\\n\\nThe weather is nice today.", "id":2 }\n'
        '{"id": 3, "text": "\\u6211\\u60f3\\u8981\\u4e00\\u676f\\u5496\\u5561\\u3002"}\n'
        '{"id": 4, "text": null}\n'
        '{"text": "I would like a cup of coffee.", "note": "caf\\u00e9"}'
    )
    expected = (
        '{"id": 1.0, "text": "学校在哪里？", "tags": ["a" , "b"], "n": 1e3}\r\n'
        "\r\n"
        '{ "text" : "我儿子在休息吗？\\n\\n今天天气很好。", "id":2 }\n'
        '{"id": 3, "text": "\\u6211\\u60f3\\u8981\\u4e00\\u676f\\u5496\\u5561\\u3002"}\n'
        '{"id": 4, "text": null}\n'
        '{"text": "\\u6211\\u60f3\\u8981\\u4e00\\u676f\\u5496\\u5561\\u3002", "note": "caf\\u00e9"}'
    )
    out = run(translator, source, "jsonl")
    assert out == expected
    assert [json.loads(line) for line in out.splitlines() if line.strip()][-1]["text"] == "我想要一杯咖啡。"


def test_jsonl_other_field(translator):
    source = '{"en": "Where is the school?", "text": "keep"}\n'
    assert run(translator, source, "jsonl", field="en") == '{"en": "学校在哪里？", "text": "keep"}\n'


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('{"id": 1}\n', "line 1 has no field 'text' \\(its fields: id\\); choose one with --field"),
        ('{"text": "a"}\n{"text": 5}\n', "field 'text' on line 2 is a JSON int, not a string"),
        ('{"text": "a"}\n[1, 2]\n', "line 2 is a JSON list"),
        ('{"text": "a"\n', "line 1 is not valid JSON"),
    ],
)
def test_jsonl_errors_name_the_line(translator, source, message):
    with pytest.raises(DocumentError, match=message):
        run(translator, source, "jsonl")


def test_tsv_by_name_keeps_header_and_other_columns(translator):
    source = (
        'id\ttext\tnote\r\n1\tWhere is the school?\t "quoted" \r\n\r\n2\t我想要一杯咖啡。\tx\r\n3\tIs my son resting?\t'
    )
    expected = 'id\ttext\tnote\r\n1\t学校在哪里？\t "quoted" \r\n\r\n2\t我想要一杯咖啡。\tx\r\n3\t我儿子在休息吗？\t'
    assert run(translator, source, "tsv") == expected


def test_tsv_by_index_translates_every_row(translator):
    source = "a\tWhere is the school?\nb\tIs my son resting?\n"
    assert run(translator, source, "tsv", field="1") == "a\t学校在哪里？\nb\t我儿子在休息吗？\n"


def test_tsv_errors(translator):
    with pytest.raises(DocumentError, match="no column named 'text' in the header \\(columns: 'id', 'en'\\)"):
        run(translator, "id\ten\n1\tHello\n", "tsv")
    with pytest.raises(DocumentError, match="line 2 has 1 column\\(s\\), so no column 1"):
        run(translator, "id\ttext\nshort\n", "tsv")


@pytest.mark.parametrize("fmt", ["jsonl", "tsv"])
def test_empty_records(translator, fmt):
    assert run(translator, "", fmt) == ""
    assert run(translator, "\n\n", fmt) == "\n\n"
