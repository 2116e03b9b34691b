"""Word documents on the demo model: text of paragraphs, tables and headers translated; styles and each run's
formatting kept on the words it covered."""

from __future__ import annotations

import io
import zipfile

import pytest

from enzh.documents.api import translate_document
from enzh.documents.errors import DocumentError
from enzh.runtime.translator import Translator

docx = pytest.importorskip("docx")


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def hyperlink(paragraph, text: str, url: str) -> None:
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    rid = paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), rid)
    run = OxmlElement("w:r")
    t = OxmlElement("w:t")
    t.text = text
    run.append(t)
    link.append(run)
    paragraph._p.append(link)


def field(paragraph, instruction: str, shown: str) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    def run_with(tag: str, **attrs: str):
        r = OxmlElement("w:r")
        child = OxmlElement(tag)
        for key, value in attrs.items():
            child.set(qn(key), value)
        if tag == "w:instrText":
            child.text = instruction
        if tag == "w:t":
            child.text = shown
        r.append(child)
        paragraph._p.append(r)

    run_with("w:fldChar", **{"w:fldCharType": "begin"})
    run_with("w:instrText")
    run_with("w:fldChar", **{"w:fldCharType": "separate"})
    run_with("w:t")
    run_with("w:fldChar", **{"w:fldCharType": "end"})


def sample() -> bytes:
    from docx.shared import Pt

    d = docx.Document()
    d.add_heading("The weather is nice today.", level=1)
    p = d.add_paragraph(style="List Bullet")
    p.add_run("The meeting has been postponed.").bold = True
    p.add_run(" ")
    italic = p.add_run("Where is the school?")
    italic.italic = True
    italic.font.size = Pt(14)
    table = d.add_table(rows=2, cols=2)
    table.style = "Table Grid"
    table.cell(0, 0).text = "Is my son resting?"
    table.cell(0, 1).paragraphs[0].add_run("I would like a cup of coffee.").underline = True
    merged = table.cell(1, 0).merge(table.cell(1, 1))
    merged.text = "My bicycle was stolen last night."
    inner = merged.add_table(rows=1, cols=1)
    inner.cell(0, 0).text = "He owes the students 50 yuan."
    link = d.add_paragraph("Anna goes to the station every day. ")
    hyperlink(link, "Where is the school?", "https://example.com/school")
    page = d.add_paragraph("Kate wants to find this key. ")
    field(page, "PAGE", "7")
    d.add_paragraph("我想要一杯咖啡。")
    d.sections[0].header.paragraphs[0].text = "Is my son resting?"
    d.sections[0].footer.paragraphs[0].text = "12"
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def runs(paragraph) -> list[tuple[str, object, object, object]]:
    return [(r.text, r.bold, r.italic, r.underline) for r in paragraph.runs]


def test_docx_text_styles_and_run_formatting(translator):
    source = sample()
    out = translate_document(translator, source, format="docx", beam_size=1)
    assert isinstance(out, bytes)
    d = docx.Document(io.BytesIO(out))
    body = d.paragraphs
    assert [p.style.name for p in body] == [p.style.name for p in docx.Document(io.BytesIO(source)).paragraphs]
    assert runs(body[0]) == [("今天天气很好。", None, None, None)]
    assert runs(body[1]) == [
        ("会议已被推迟。", True, None, None),
        ("", None, None, None),
        ("学校在哪里？", None, True, None),
    ]
    assert body[1].runs[2].font.size.pt == 14
    rows = d.tables[0].rows
    assert [c.text for c in rows[0].cells] == ["我儿子在休息吗？", "我想要一杯咖啡。"]
    assert rows[0].cells[1].paragraphs[0].runs[0].underline is True
    assert rows[1].cells[0].paragraphs[0].text == "我的自行车昨天晚上被偷走了。"
    assert rows[1].cells[0].tables[0].cell(0, 0).text == "他欠学生们50元。"
    # The hyperlink's run is translated inside the hyperlink; its target is kept.
    assert body[2].text == "安娜每天去车站。学校在哪里？"
    assert body[2].hyperlinks[0].address == "https://example.com/school"
    assert body[2].hyperlinks[0].text == "学校在哪里？"
    # A field's instruction and result are left alone.
    assert "PAGE" in body[3]._p.xml and body[3].text == "凯特想找到这把钥匙。7"
    assert body[4].text == "我想要一杯咖啡。"
    assert d.sections[0].header.paragraphs[0].text == "我儿子在休息吗？"
    assert d.sections[0].footer.paragraphs[0].text == "12"


def test_docx_output_is_deterministic(translator):
    source = sample()
    first = translate_document(translator, source, format="docx", beam_size=1)
    assert translate_document(translator, source, format="docx", beam_size=1) == first
    with zipfile.ZipFile(io.BytesIO(source)) as a, zipfile.ZipFile(io.BytesIO(first)) as b:
        assert {i.filename: i.date_time for i in b.infolist()} == {i.filename: i.date_time for i in a.infolist()}


def test_docx_without_text(translator):
    empty = io.BytesIO()
    docx.Document().save(empty)
    out = translate_document(translator, empty.getvalue(), format="docx")
    assert [p.text for p in docx.Document(io.BytesIO(out)).paragraphs] == []


def test_not_a_docx(translator):
    with pytest.raises(DocumentError, match="not a Word .docx file"):
        translate_document(translator, b"PK\x03\x04 broken", format="docx")
    with pytest.raises(DocumentError, match="needs bytes"):
        translate_document(translator, "text", format="docx")
