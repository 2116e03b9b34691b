"""Word (.docx, python-docx): every paragraph of the body, tables (nested ones too), text boxes, headers and
footers is translated; styles, paragraph properties and each run's formatting are kept.

A paragraph is one block and each of its text runs (also inside hyperlinks) is a mark over its words, so the
formatting of a run (bold, italic, underline, font, colour, size) stays on the words it covered: after
placement every run gets the translation of its share, in order (text between runs goes to the run before it);
runs are never added or deleted. Runs holding anything but text, tabs and line breaks (fields, drawings,
footnote references) and the runs of a complex field's result are left untouched. Not translated: footnotes,
endnotes, comments. The package is written with the input's member timestamps, so the same input and options
always give the same bytes.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.limits import check_zip
from enzh.documents.markup import Tag, Text, arrange, tag_of
from enzh.runtime.optional import import_optional
from enzh.runtime.segment import needs_translation

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_TEXT_CHILDREN = {f"{_W}{name}" for name in ("rPr", "t", "tab", "br", "cr", "noBreakHyphen", "lastRenderedPageBreak")}
_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class DocxFormat:
    name: str = "docx"
    extensions: tuple[str, ...] = (".docx",)
    binary: bool = True

    def read(self, source: bytes, field: str | None = None) -> Units:
        docx = import_optional("docx", "Word (.docx) translation")
        check_zip(source)  # members' declared sizes, count and ratio, before python-docx inflates anything
        try:
            document = docx.Document(io.BytesIO(source))
        except Exception as exc:  # python-docx raises zipfile, KeyError and its own errors for a bad package
            raise DocumentError(
                f"the input is not a Word .docx file ({type(exc).__name__}: {exc}); "
                "an old .doc must be saved as .docx first"
            ) from None
        blocks: list[Block] = []
        runs: list[list[Any]] = []
        for paragraph in _paragraphs(document):
            found = _paragraph_block(paragraph)
            if found is not None and needs_translation(found[0].text):
                blocks.append(found[0])
                runs.append(found[1])
        return Units(blocks, (document, runs, source))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> bytes:
        document, runs, source = units.layout
        for block, run_list, done in zip(units.blocks, runs, translated, strict=True):
            texts = [""] * len(run_list)
            current = 0
            for event in arrange(block, done):
                if isinstance(event, Text):
                    if event.owner is not None:
                        current = tag_of(block.marks[event.owner]).index
                    texts[current] += event.text
            for run, text in zip(run_list, texts, strict=True):
                if run.text != text:
                    run.text = text
        buffer = io.BytesIO()
        document.save(buffer)
        return _stable_zip(buffer.getvalue(), source)


def _paragraphs(document: Any) -> Iterator[Any]:
    """Every w:p of the body (tables, nested tables, text boxes) and of headers and footers, once each."""
    seen: set[int] = set()
    roots = [document.element.body]
    for section in document.sections:
        for part in (
            section.header,
            section.first_page_header,
            section.even_page_header,
            section.footer,
            section.first_page_footer,
            section.even_page_footer,
        ):
            if not part.is_linked_to_previous:
                roots.append(part._element)
    held: list[Any] = []  # lxml proxies are held so that their ids stay unique while seen is used
    for root in roots:
        for paragraph in root.iter(f"{_W}p"):
            if id(paragraph) not in seen:
                seen.add(id(paragraph))
                held.append(paragraph)
                yield paragraph


def _own_runs(paragraph: Any) -> Iterator[Any]:
    """The w:r of this paragraph (inside hyperlinks, smart tags, insertions too), not of paragraphs nested in
    it (text boxes), in document order."""
    for run in paragraph.iter(f"{_W}r"):
        parent = run.getparent()
        while parent is not None and parent.tag != f"{_W}p":
            parent = parent.getparent()
        if parent is paragraph:
            yield run


def _paragraph_block(paragraph: Any) -> tuple[Block, list[Any]] | None:
    text = ""
    marks: list[Mark] = []
    runs: list[Any] = []
    in_field = 0
    for run in _own_runs(paragraph):
        for char in run.iter(f"{_W}fldChar"):
            kind = char.get(f"{_W}fldCharType")
            in_field += 1 if kind == "begin" else -1 if kind == "end" else 0
        if in_field > 0 or not _plain_run(run):
            continue
        run_text = run.text
        if not run_text:
            continue
        marks.append(Mark(len(text), len(text) + len(run_text), Tag("run", index=len(runs))))
        runs.append(run)
        text += run_text
    return (Block(text, tuple(marks)), runs) if runs else None


def _plain_run(run: Any) -> bool:
    """A run that holds only text, tabs and plain line breaks (so rewriting its text loses nothing)."""
    for child in run:
        if child.tag not in _TEXT_CHILDREN:
            return False
        if child.tag == f"{_W}br" and child.get(f"{_W}type") not in (None, "textWrapping"):
            return False
    return True


def _stable_zip(data: bytes, source: bytes) -> bytes:
    """``data`` re-packed with each member's timestamp from ``source`` (a fixed one for new members)."""
    with zipfile.ZipFile(io.BytesIO(source)) as original:
        stamps = {info.filename: info.date_time for info in original.infolist()}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as written, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as packed:
        for info in written.infolist():
            stable = zipfile.ZipInfo(info.filename, date_time=stamps.get(info.filename, _EPOCH))
            stable.compress_type = zipfile.ZIP_DEFLATED
            stable.external_attr = info.external_attr
            packed.writestr(stable, written.read(info.filename))
    return out.getvalue()


FORMAT = DocxFormat()
