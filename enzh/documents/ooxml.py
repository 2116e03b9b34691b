"""PowerPoint (.pptx) and Excel (.xlsx): the text of slides, notes and cells translated in their XML parts, every
other member of the package copied byte for byte (:mod:`enzh.documents.parts`).

pptx: every DrawingML paragraph (``a:p``) of every slide and notes slide: text frames of shapes (grouped ones
too), placeholders, table cells and the speaker notes; chart titles and axis titles; SmartArt text (its data and
the drawing shown from it). Each text run (``a:r``) is a mark over its words, so its
formatting (``a:rPr``: bold, colour, size, hyperlink) stays on the words it covered; a line break (``a:br``) and
a field (``a:fld``: slide number, date) stay where they are and the text after them goes to the run after
them. Runs are never added or removed. Not translated: slide layouts and masters (template text), chart
categories and series names (cached cell values of the chart's workbook), comments.

xlsx: the shared strings (``xl/sharedStrings.xml``, where a cell's text lives) and inline strings of worksheets,
rich text runs (``r``) as marks; phonetic runs are left as they are. A cell's value type never changes:
formulas, their cached results, numbers, dates and booleans are in worksheet cells that are not read, so those
parts stay byte for byte. Sheet names are kept, unless the ``sheet_names`` option (``--sheet-names``) asks for
them: then every reference to a renamed sheet follows (:mod:`enzh.documents.sheets`). Not translated: comments,
charts, headers and footers.

The packages are read with lxml rather than python-pptx or openpyxl: those rebuild every part they load when
they save (openpyxl also drops what it does not model, such as shapes and charts), and the guarantee here is that
what is not translated comes out byte for byte. The tests build their fixtures with python-pptx and openpyxl and
read the output back with them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.markup import Open, Tag, Text, arrange
from enzh.documents.options import DocumentOptions
from enzh.documents.packages import open_package, to_xml
from enzh.documents.parts import PartText, package_units, refuse_ole, write_package, xml_part
from enzh.documents.sheets import REFERRING, SheetNames
from enzh.runtime.segment import needs_translation

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_PML = "application/vnd.openxmlformats-officedocument.presentationml."
_SML = "application/vnd.openxmlformats-officedocument.spreadsheetml."


# -- runs: a paragraph of text runs, line breaks and fields --------------------------------------------------------


@dataclass
class _Run:
    """A paragraph's item: a text run's text element (``t``), or a boundary (None: a line break or a field)."""

    t: Any
    separator: str = ""  # text the boundary stands for in the model's input ("\n" for a line break)


def runs_block(items: Iterable[_Run], preserve: bool) -> tuple[Block, Any] | None:
    """A block of the runs' text (each run a mark, each boundary a point; no mark for a lone run, so a workbook
    of plain strings has none to place) and its writer; None when there is nothing to translate.
    ``preserve``: set ``xml:space="preserve"`` on a text with spaces at its edges."""
    text = ""
    marks: list[Mark] = []
    runs: list[Any] = []
    for item in items:
        if item.t is None:
            marks.append(Mark(len(text), len(text), Tag("boundary")))
            text += item.separator
            continue
        value = item.t.text or ""
        if not value:
            continue
        marks.append(Mark(len(text), len(text) + len(value), Tag("run", index=len(runs))))
        runs.append(item.t)
        text += value
    if not runs or not needs_translation(text):
        return None
    if len(marks) == 1:
        marks = []  # one run and nothing else: it takes the whole translation, no mark to place

    def write(block: Block, done: TranslatedBlock) -> bool:
        texts = _run_texts(block, done, len(runs)) if block.marks else [done.text]
        changed = False
        for t, value in zip(runs, texts, strict=True):
            if (t.text or "") != value:
                t.text = value
                changed = True
                if preserve and value != value.strip():
                    t.set(_XML_SPACE, "preserve")
        return changed

    return Block(text, tuple(marks)), write


def _run_texts(block: Block, done: TranslatedBlock, count: int) -> list[str]:
    """Each run's share of the translation: the text placed on it, and the text between marks given to the run
    before it, or after a boundary to the run after it (separators dropped)."""
    texts = [""] * count
    current: int | None = None  # the run that takes text outside marks (None: after a boundary, the next one)
    last = 0
    pending = ""
    for event in arrange(block, done):
        if isinstance(event, Open):
            tag = block.marks[event.mark].tag
            assert isinstance(tag, Tag)
            if tag.kind == "run":
                current = last = tag.index
                texts[current] += pending
                pending = ""
            else:
                current = None
        elif isinstance(event, Text):
            if current is None:
                pending += event.text
            else:
                texts[current] += event.text
    texts[last] += pending
    return _drop_separators(block, texts)


def _drop_separators(block: Block, texts: list[str]) -> list[str]:
    """Line ends that a boundary put into the text outside every run are not written into a run."""
    if not any(isinstance(m.tag, Tag) and m.tag.kind == "boundary" for m in block.marks):
        return texts
    sources = _sources(block)
    return [text if "\n" in source else text.replace("\n", "") for text, source in zip(texts, sources, strict=True)]


def _sources(block: Block) -> list[str]:
    return [block.text[m.start : m.end] for m in block.marks if isinstance(m.tag, Tag) and m.tag.kind == "run"]


# -- pptx ---------------------------------------------------------------------------------------------------------

_DML = "application/vnd.openxmlformats-officedocument.drawingml."
_SLIDE_TYPES = (
    f"{_PML}slide+xml",
    f"{_PML}notesSlide+xml",
    f"{_DML}chart+xml",  # titles and axis titles written as text (values and labels from cells are not text runs)
    f"{_DML}diagramData+xml",  # SmartArt: its text, and the drawing PowerPoint shows it from (below)
    "application/vnd.ms-office.drawingml.diagramDrawing+xml",
)
_PRESENTATIONS = (f"{_PML}presentation.main+xml", f"{_PML}slideshow.main+xml", f"{_PML}template.main+xml")


def _drawing_paragraph(paragraph: Any) -> list[_Run]:
    items = []
    for child in paragraph:
        if child.tag == f"{_A}r":
            t = child.find(f"{_A}t")
            if t is not None:
                items.append(_Run(t))
        elif child.tag == f"{_A}br":
            items.append(_Run(None, "\n"))
        elif child.tag == f"{_A}fld":
            items.append(_Run(None))
    return items


@dataclass(frozen=True)
class PptxFormat:
    name: str = "pptx"
    extensions: tuple[str, ...] = (".pptx",)
    binary: bool = True

    def read(self, source: bytes, field: str | None = None) -> Units:
        what = "a PowerPoint .pptx file is expected (an old .ppt must be saved as .pptx first)"
        refuse_ole(source, ".pptx")
        package = open_package(source, ".pptx", what)
        types = package.content_types()
        if not any(kind in _PRESENTATIONS for kind in types.values()):
            raise DocumentError(f"the input is not a PowerPoint .pptx file (it has no presentation part); {what}")
        parts = []
        for name in package.names:
            if types.get("/" + name) in _SLIDE_TYPES:
                root, part = xml_part(package, name)
                for paragraph in root.iter(f"{_A}p"):
                    found = runs_block(_drawing_paragraph(paragraph), preserve=False)
                    if found is not None:
                        part.add(*found)
                parts.append(part)
        return package_units(package, parts)

    def write(self, units: Units, translated: list[TranslatedBlock]) -> bytes:
        return write_package(units, translated)


# -- xlsx ---------------------------------------------------------------------------------------------------------

_WORKBOOKS = (f"{_SML}sheet.main+xml", f"{_SML}template.main+xml")


def _string_items(string: Any) -> list[_Run]:
    """A shared or inline string (``si``/``is``): its plain ``t``, or its rich text runs (phonetic runs skipped)."""
    items = []
    for child in string:
        if child.tag == f"{_S}t":
            items.append(_Run(child))
        elif child.tag == f"{_S}r":
            t = child.find(f"{_S}t")
            if t is not None:
                items.append(_Run(t))
    return items


def _strings(part: PartText, strings: Iterable[Any]) -> None:
    for string in strings:
        found = runs_block(_string_items(string), preserve=True)
        if found is not None:
            part.add(*found)


@dataclass(frozen=True)
class XlsxFormat:
    name: str = "xlsx"
    extensions: tuple[str, ...] = (".xlsx",)
    binary: bool = True
    sheet_names: bool = False  # translate the sheets' names too (enzh.documents.sheets)

    def configure(self, options: DocumentOptions) -> XlsxFormat:
        return replace(self, sheet_names=options.sheet_names)

    def read(self, source: bytes, field: str | None = None) -> Units:
        what = "an Excel .xlsx file is expected (an old .xls must be saved as .xlsx first)"
        refuse_ole(source, ".xlsx")
        package = open_package(source, ".xlsx", what)
        types = package.content_types()
        workbooks = [name[1:] for name, kind in types.items() if kind in _WORKBOOKS]
        if not workbooks:
            raise DocumentError(f"the input is not an Excel .xlsx file (it has no workbook part); {what}")
        roots: dict[str, Any] = {}  # one tree per member, shared by the strings and the sheet names

        def root(name: str) -> Any:
            if name not in roots:
                roots[name] = package.xml(name)
            return roots[name]

        def serialized(name: str) -> Callable[[], bytes]:
            return lambda: to_xml(roots[name], package.read(name))

        parts = []
        for name in package.names:
            kind = types.get("/" + name)
            if kind == f"{_SML}sharedStrings+xml":
                part = PartText(name, serialized(name))
                _strings(part, root(name).iter(f"{_S}si"))
                parts.append(part)
            elif kind == f"{_SML}worksheet+xml" and b"inlineStr" in package.read(name):
                part = PartText(name, serialized(name))
                cells = (c for c in root(name).iter(f"{_S}c") if c.get("t") == "inlineStr")
                _strings(part, (s for c in cells for s in c.iterfind(f"{_S}is")))
                parts.append(part)
        if not self.sheet_names:
            return package_units(package, parts)
        referring = [name for name in package.names if types.get("/" + name) in REFERRING]
        sheets = SheetNames(workbooks[0], root, referring)
        parts.append(sheets.part(serialized(workbooks[0])))

        def after() -> dict[str, bytes]:
            return {name: serialized(name)() for name in sheets.apply()}

        return package_units(package, parts, after)

    def write(self, units: Units, translated: list[TranslatedBlock]) -> bytes:
        return write_package(units, translated)


PPTX = PptxFormat()
XLSX = XlsxFormat()
