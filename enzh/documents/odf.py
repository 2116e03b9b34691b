"""OpenDocument text (.odt) and presentations (.odp): every paragraph and heading (``text:p``, ``text:h``) of
``content.xml`` (body, tables, frames, text boxes, footnotes, speaker notes), of the master pages' headers and
footers in ``styles.xml``, and the document's title in ``meta.xml``; every other member byte for byte.

The ODF XML is read with lxml directly (odfpy, the library the tests build their fixtures with, rewrites every
part when it saves). A paragraph is one block; its ``text:span``, ``text:a`` and ``text:meta`` are marks over
their words, so a span's style and a link's target stay on the words they covered. Spaces (``text:s``), tabs
and line breaks are points that stay where they are (the model reads a tab or a line end there, which is not
written back); every other
element inside a paragraph (fields, bookmarks, notes, frames, annotations) is a point written back untouched,
and the paragraphs inside notes and frames are blocks of their own. Elements are never added or removed: only
their text and the text after them (their ``tail``) change. An encrypted (password-protected) document is
refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.markup import Close, Open, Tag, Text, arrange
from enzh.documents.packages import open_package
from enzh.documents.parts import PartText, element_text, package_units, write_package, xml_part
from enzh.runtime.segment import needs_translation

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_PARAGRAPHS = (f"{_TEXT}p", f"{_TEXT}h")
_INLINE = frozenset({f"{_TEXT}span", f"{_TEXT}a", f"{_TEXT}meta"})
# What a space, tab or line break stands for in the model's input. Text nodes never hold these (their white space
# is read as spaces), so they come only from here and are dropped when the translation is written back.
_SEPARATORS = {f"{_TEXT}s": "\t", f"{_TEXT}tab": "\t", f"{_TEXT}line-break": "\n"}
_SPACE = str.maketrans("\t\n\r", "   ")  # ODF collapses white space in text: tabs and line ends are spaces
_DROPPED = str.maketrans("", "", "\t\n")


@dataclass
class _Reader:
    """One paragraph's text and marks; ``elements[i]`` is mark i's element, ``inline[i]`` whether it is a span."""

    text: str = ""
    marks: list[Mark] = field(default_factory=list)
    elements: list[Any] = field(default_factory=list)
    inline: list[bool] = field(default_factory=list)

    def add(self, value: str | None) -> None:
        if value:
            self.text += value.translate(_SPACE)

    def walk(self, element: Any, parent: int | None) -> None:
        self.add(element.text)
        for child in element:
            index = len(self.marks)
            self.elements.append(child)
            if child.tag in _INLINE:
                self.marks.append(Mark(len(self.text), len(self.text), Tag("span", parent=parent)))
                self.inline.append(True)
                self.walk(child, index)
                self.marks[index] = Mark(self.marks[index].start, len(self.text), self.marks[index].tag)
            else:
                self.marks.append(Mark(len(self.text), len(self.text), Tag("point", parent=parent)))
                self.inline.append(False)
                separator = _SEPARATORS.get(child.tag, "")
                if separator and not (separator == "\t" and self.text[-1:].isspace()):
                    self.text += separator
            self.add(child.tail)


def paragraph_block(paragraph: Any) -> tuple[Block, Any] | None:
    """A paragraph's block and its writer; None when it has nothing to translate."""
    reader = _Reader()
    reader.walk(paragraph, None)  # as deep as the XML nests: libxml2 stops at 256 levels (no huge trees)
    if not needs_translation(reader.text):
        return None
    elements, inline = reader.elements, reader.inline

    def write(block: Block, done: TranslatedBlock) -> bool:
        before = [(paragraph.text, [(e.text, e.tail) for e in elements])]
        paragraph.text = None
        for element, is_inline in zip(elements, inline, strict=True):
            if is_inline:
                element.text = None
            element.tail = None
        slot: tuple[Any, str] = (paragraph, "text")
        for event in arrange(block, done):
            if isinstance(event, Open) and inline[event.mark]:
                slot = (elements[event.mark], "text")
            elif isinstance(event, Close):
                slot = (elements[event.mark], "tail")
            elif isinstance(event, Text) and event.text:
                value = event.text.translate(_DROPPED)
                if value:
                    setattr(slot[0], slot[1], (getattr(slot[0], slot[1]) or "") + value)
        return before != [(paragraph.text, [(e.text, e.tail) for e in elements])]

    return Block(reader.text, tuple(reader.marks)), write


def _paragraphs(root: Any, part: PartText, within: str | None = None) -> None:
    """Every paragraph under ``root`` (only those inside a ``within`` element, when given) as a block."""
    for element in root.iter(*_PARAGRAPHS):
        if within is not None and not any(a.tag == within for a in element.iterancestors()):
            continue
        found = paragraph_block(element)
        if found is not None:
            part.add(*found)


@dataclass(frozen=True)
class OdfFormat:
    name: str
    extensions: tuple[str, ...]
    binary: bool = True

    def read(self, source: bytes, field: str | None = None) -> Units:
        kind = self.extensions[0]
        what = f"an OpenDocument {kind} file is expected (save it from LibreOffice as {kind})"
        package = open_package(source, kind, what)
        names = package.names
        mimetype = package.read("mimetype").decode("ascii", "replace") if "mimetype" in names else ""
        if not mimetype.startswith("application/vnd.oasis.opendocument.") or "content.xml" not in names:
            raise DocumentError(f"the input is not an OpenDocument file (no mimetype and content.xml); {what}")
        manifest = package.read("META-INF/manifest.xml") if "META-INF/manifest.xml" in names else b""
        if b"encryption-data" in manifest:
            raise DocumentError(f"the {kind} file is password-protected; save a copy without a password first")
        parts = []
        for name, within in (("content.xml", None), ("styles.xml", f"{_STYLE}master-page"), ("meta.xml", "")):
            if name not in names:
                continue
            root, part = xml_part(package, name)
            if within == "":
                for title in root.iter(f"{_DC}title"):
                    found = element_text(title)
                    if found is not None:
                        part.add(*found)
            else:
                _paragraphs(root, part, within)
            parts.append(part)
        return package_units(package, parts)

    def write(self, units: Units, translated: list[TranslatedBlock]) -> bytes:
        return write_package(units, translated)


ODT = OdfFormat("odt", (".odt",))
ODP = OdfFormat("odp", (".odp",))
