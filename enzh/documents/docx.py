"""Word (.docx): every paragraph of the main document (body, tables, nested tables, text boxes), of the headers
and of the footers is translated; only the text of its ``w:t`` elements changes.

The package is read with :mod:`enzh.documents.packages` (zip bounds, XML without entity expansion or network)
and the parts are edited as XML with lxml: every element and attribute stays where it was (``w:tab``,
``w:br``, run properties, hyperlinks, bookmarks, fields); a ``w:t`` whose new text starts or ends with a space
gets ``xml:space="preserve"``, without which Word drops the space. The parts that are not translated ([Content_Types],
relationships, styles, media, docProps) are copied byte for byte, in the input's zip order.

A paragraph is cut at its tabs and line breaks (``w:tab``, ``w:br``, ``w:cr``) into segments; a segment with
English text is one block and each of its ``w:t`` elements a mark over its words, so a run's formatting (bold,
italic, font, colour, a hyperlink around it) stays on the words it covered: after placement each ``w:t`` gets
the translation of its share, in order (text between marks goes to the mark before it). A ``w:t`` that had
words never comes back empty: when the placement leaves one without text, it and its empty neighbours share
the text of the mark before them (or after), cut in proportion to their source lengths
(:func:`enzh.documents.shares.share_out`). A
``w:t`` of spaces alone may end up empty (Chinese needs no spaces between runs). Runs holding anything but text,
tabs and line breaks (drawings, footnote references, deleted text) and the runs of a complex field (its
instruction and result) are left untouched. Not translated: footnotes, endnotes, comments.

Bounds (:mod:`enzh.documents.limits`): the zip directory, and :data:`~enzh.documents.limits.MAX_PARAGRAPHS`
paragraphs in all the translated parts, counted while they are parsed; the work is linear in the XML.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.limits import MAX_PARAGRAPHS
from enzh.documents.markup import Tag, Text, arrange, tag_of
from enzh.documents.packages import Bound, Package, open_package, to_xml
from enzh.documents.shares import share_out
from enzh.runtime.segment import needs_translation

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _R, _T = f"{_W}p", f"{_W}r", f"{_W}t"
_TEXT_CHILDREN = {
    f"{_W}{name}" for name in ("rPr", "t", "tab", "br", "cr", "noBreakHyphen", "softHyphen", "lastRenderedPageBreak")
}
_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_SEPARATORS = {f"{_W}tab", f"{_W}br", f"{_W}cr"}  # a paragraph's segments end here
_MAIN = (
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
)
_HEADERS = (
    "application/vnd.openxmlformats-officedocument.wordprocessingml.header+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.footer+xml",
)
PARAGRAPHS = Bound(_P, MAX_PARAGRAPHS, "MAX_PARAGRAPHS", "paragraphs")


@dataclass
class _Layout:
    package: Package
    parts: list[tuple[str, Any]]  # (member name, its parsed root), the translated parts
    texts: list[list[Any]]  # per block: its w:t elements, in the order of the block's marks


@dataclass(frozen=True)
class DocxFormat:
    name: str = "docx"
    extensions: tuple[str, ...] = (".docx",)
    binary: bool = True

    def read(self, source: bytes, field: str | None = None) -> Units:
        package = open_package(source, "Word .docx", hint="an old .doc must be saved as .docx first")
        types = package.content_types()
        main = [part for part, kind in types.items() if kind in _MAIN]
        if len(main) != 1:
            raise DocumentError(
                f"the input is not a Word .docx file ({len(main)} main document parts in [Content_Types].xml, "
                "one expected); an old .doc must be saved as .docx first"
            )
        names = main + [part for part, kind in types.items() if kind in _HEADERS]
        parts = [(name[1:], package.xml(name[1:], PARAGRAPHS)) for name in names]
        blocks: list[Block] = []
        texts: list[list[Any]] = []
        for _, root in parts:
            for paragraph in root.iter(_P):
                for block, elements in _segments(paragraph):
                    if needs_translation(block.text):
                        blocks.append(block)
                        texts.append(elements)
        return Units(blocks, _Layout(package, parts, texts))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> bytes:
        layout: _Layout = units.layout
        for block, elements, done in zip(units.blocks, layout.texts, translated, strict=True):
            shares = [""] * len(elements)
            current = 0
            for event in arrange(block, done):
                if isinstance(event, Text):
                    if event.owner is not None:
                        current = tag_of(block.marks[event.owner]).index
                    shares[current] += event.text
            sources = [element.text for element in elements]
            for element, text in zip(elements, share_out(shares, sources), strict=True):
                element.text = text
                if text != text.strip() and element.get(_SPACE) is None:
                    element.set(_SPACE, "preserve")  # Word drops a w:t's edge spaces without it (Hello| world)
        replaced = {name: to_xml(root, layout.package.read(name)) for name, root in layout.parts}
        return layout.package.rebuild(replaced)


def _own_runs(paragraph: Any) -> Iterator[Any]:
    """The w:r of this paragraph (inside hyperlinks, smart tags, content controls, insertions too), not those of
    paragraphs nested in it (text boxes inside a run), in document order; each element is visited once."""
    stack = list(reversed(paragraph))
    while stack:
        element = stack.pop()
        if element.tag == _R:
            yield element
        elif element.tag != _P and isinstance(element.tag, str):
            stack.extend(reversed(element))


def _segments(paragraph: Any) -> Iterator[tuple[Block, list[Any]]]:
    """The paragraph's text between its tabs and line breaks: one block per segment, a mark per w:t."""
    text = ""
    marks: list[Mark] = []
    elements: list[Any] = []
    in_field = 0
    for run in _own_runs(paragraph):
        for char in run.iter(f"{_W}fldChar"):
            kind = char.get(f"{_W}fldCharType")
            in_field += 1 if kind == "begin" else -1 if kind == "end" else 0
        if in_field > 0 or not _plain_run(run):
            continue
        for child in run:
            if child.tag in _SEPARATORS and elements:
                yield Block(text, tuple(marks)), elements
                text, marks, elements = "", [], []
            elif child.tag == _T and child.text:
                marks.append(Mark(len(text), len(text) + len(child.text), Tag("run", index=len(elements))))
                elements.append(child)
                text += child.text
    if elements:
        yield Block(text, tuple(marks)), elements


def _plain_run(run: Any) -> bool:
    """A run that holds only text, tabs and plain line breaks (so rewriting its text loses nothing)."""
    for child in run:
        if child.tag not in _TEXT_CHILDREN:
            return False
        if child.tag == f"{_W}br" and child.get(f"{_W}type") not in (None, "textWrapping"):
            return False
    return True


FORMAT = DocxFormat()
