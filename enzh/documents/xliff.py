"""XLIFF 1.2 and 2.0 (lxml): every untranslated source gets its target, with the inline codes of the source.

XLIFF 1.x (``<trans-unit>``: ``<source>``, ``<target>``) and 2.x (``<unit>``, ``<segment>``: ``<source>``,
``<target>``) are told apart by the root's ``version``. A source is translated when its unit is not
``translate="no"`` (on it or a group or file around it) and it has no target with content (``retranslate``:
those too). A 1.x ``<seg-source>`` is translated in place of its ``<source>``: its ``<mrk mtype="seg">``
sentence markers come back in the target, each around its sentence's translation. The target is written where
XLIFF puts it (1.x: after ``<source>`` or ``<seg-source>``; 2.x: after ``<source>`` in its segment), indented
like the source, and marked as machine output: 1.x
``state="needs-review-translation" state-qualifier="mt-suggestion"``, 2.x ``state="translated"
subState="enzh:mt"`` (``fuzzy`` off: ``state="translated"`` alone). An existing empty target keeps its
attributes. The target language is set when absent (1.x ``target-language`` of each ``<file>``, 2.x ``trgLang``)
and refused when it names another language.

Inline codes: the paired ones with text (1.x ``<g>``, ``<mrk>``; 2.x ``<pc>``, ``<mrk>``) are marks over their
words, copied into the target around the words they cover (:mod:`enzh.documents.inline` places them); the
standalone ones (1.x ``<x/>``, ``<bx/>``, ``<ex/>``, ``<ph>``, ``<bpt>``, ``<ept>``, ``<it>``; 2.x ``<ph/>``,
``<sc/>``, ``<ec/>``, ``<sm/>``, ``<em/>``, ``<cp/>``, and comments) are points, copied whole with their native
code; protected text (1.x ``<mrk mtype="protected">``, 2.x ``<mrk translate="no">``) is read by the model and
copied as it was. A begin code and its end code side by side in one element (1.x ``<bx>``/``<ex>`` and
``<bpt>``/``<ept>`` by ``rid`` or the same ``id``, 2.x ``<sc id>``/``<ec startRef>``, ``<sm id>``/``<em
startRef>``, not ``isolated="yes"``) are one mark over the words between them, so they go around the
translation of those words instead of two independent points.
Every code of the source comes back exactly once, in order, with its nesting.

Safety: a document with a DOCTYPE (where entity declarations live: an entity bomb) is refused before parsing;
lxml parses with entities unresolved, no DTD and no network. The tree is written back by lxml: comments,
processing instructions, whitespace, attribute order, namespace prefixes and CDATA are kept; what lxml
normalises is attribute quoting (double quotes), character references (written as characters) and the
XML declaration (double-quoted, kept when present, with the input's encoding).
"""

from __future__ import annotations

import codecs
import copy
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.locales import SIMPLIFIED, Locale, target_locale
from enzh.documents.markup import Close, Open, Tag, Text, arrange, tag_of
from enzh.documents.options import DocumentOptions
from enzh.runtime.optional import import_optional
from enzh.runtime.segment import needs_translation

_NS1 = "urn:oasis:names:tc:xliff:document:1.2"
_NS2 = "urn:oasis:names:tc:xliff:document:2.0"
_PAIRED = frozenset({"g", "mrk", "pc"})  # inline elements with translatable text inside
_BEGIN = {
    "bx": "ex",
    "bpt": "ept",
    "sc": "ec",
    "sm": "em",
}  # standalone codes that begin a span -> the code that ends it
_END = frozenset(_BEGIN.values())
_DOCTYPE = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
# What may come before and after the root element: the declaration, comments, processing instructions, spaces.
_AROUND = re.compile(rb"(?:\s+|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)


@dataclass(frozen=True)
class XliffFormat:
    name: str = "xliff"
    extensions: tuple[str, ...] = (".xlf", ".xliff")
    binary: bool = True
    fuzzy: bool = True
    retranslate: bool = False
    locale: Locale = SIMPLIFIED

    def configure(self, options: DocumentOptions) -> XliffFormat:
        return dataclasses.replace(
            self, fuzzy=options.fuzzy, retranslate=options.retranslate, locale=target_locale(options)
        )

    def read(self, source: bytes, field: str | None = None) -> Units:
        tree = _parse(source)
        root = tree.getroot()
        version = root.get("version", "")
        if _local(root) != "xliff" or version[:1] not in ("1", "2"):
            raise DocumentError(
                f"the input is not XLIFF 1.x or 2.x (its root is <{_local(root)}> version {version!r}); "
                "enzh translates XLIFF 1.2 and 2.0 files"
            )
        namespace = root.tag[1 : root.tag.index("}")] if root.tag.startswith("{") else ""
        q = (lambda name: f"{{{namespace}}}{name}") if namespace else (lambda name: name)
        if version.startswith("1"):
            for file in root.iter(q("file")):
                _set_language(file, "target-language", self.locale, "a <file>'s target-language")
            # A <seg-source> (the source with <mrk mtype="seg"> around each sentence) is what the target follows.
            sources = [
                (unit, unit.find(q("seg-source")) if unit.find(q("seg-source")) is not None else unit.find(q("source")))
                for unit in root.iter(q("trans-unit"))
                if not _skipped(unit) and unit.find(q("source")) is not None
            ]
        else:
            _set_language(root, "trgLang", self.locale, "the <xliff> trgLang")
            sources = [
                (segment, segment.find(q("source")))
                for unit in root.iter(q("unit"))
                if not _skipped(unit)
                for segment in unit.iter(q("segment"))
                if segment.find(q("source")) is not None
            ]
        blocks: list[Block] = []
        places: list[tuple[Any, Any]] = []
        templates: list[Any] = []
        for holder, element in sources:
            target = holder.find(q("target"))
            if target is not None and _has_content(target) and not self.retranslate:
                continue
            block = _block(element, templates)
            if needs_translation(block.text):
                blocks.append(block)
                places.append((holder, element))
        layout = (tree, places, templates, q, version.startswith("1"), source)
        return Units(blocks, layout)

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> bytes:
        tree, places, templates, q, old, source = units.layout
        for (holder, element), block, done in zip(places, units.blocks, translated, strict=True):
            target = holder.find(q("target"))
            if target is None:
                target = element.makeelement(q("target"), {})
                anchor = element  # the source or seg-source it translates
                previous = anchor.getprevious()
                indent = holder.text if previous is None else previous.tail  # the whitespace before the anchor
                anchor.addnext(target)
                target.tail = anchor.tail
                if indent is not None and not indent.strip():
                    anchor.tail = indent
            else:
                tail = target.tail
                for child in list(target):
                    target.remove(child)
                target.text = None
                target.tail = tail
            _fill(target, block, done, templates)
            state = target if old else holder
            if old:
                state.set("state", "needs-review-translation" if self.fuzzy else "translated")
                if self.fuzzy:
                    state.set("state-qualifier", "mt-suggestion")
                elif state.get("state-qualifier") == "mt-suggestion":
                    del state.attrib["state-qualifier"]
            else:
                state.set("state", "translated")
                if self.fuzzy:
                    state.set("subState", "enzh:mt")
                elif state.get("subState") is not None:
                    del state.attrib["subState"]
        return _serialize(tree, source)


def _serialize(tree: Any, source: bytes) -> bytes:
    """The tree as bytes in the input's encoding. A UTF-8 input keeps its BOM and everything around the root
    element (XML declaration, comments, whitespace) byte for byte."""
    etree = import_optional("lxml.etree", "XLIFF translation")
    encoding = tree.docinfo.encoding or "UTF-8"
    body = _strip_bom(source)
    prolog = _AROUND.match(body)
    if encoding.upper().replace("-", "") != "UTF8" or prolog is None:
        written: bytes = etree.tostring(tree, encoding=encoding, xml_declaration=body.startswith(b"<?xml"))
        return written
    root = tree.getroot()
    name = (f"{root.prefix}:" if root.prefix else "") + _local(root)
    close = body.rfind(f"</{name}".encode())
    epilog = _AROUND.fullmatch(body, body.find(b">", close) + 1) if close >= 0 else None
    output: bytes = etree.tostring(root, encoding="UTF-8", xml_declaration=False)
    return source[: len(source) - len(body)] + prolog.group() + output + (epilog.group() if epilog else b"")


def _strip_bom(data: bytes) -> bytes:
    return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data


def _parse(source: bytes) -> Any:
    """The document's tree, parsed without entities, DTD or network; a DOCTYPE is refused first."""
    etree = import_optional("lxml.etree", "XLIFF translation")
    if not isinstance(source, bytes | bytearray):
        raise DocumentError(f"the xliff format needs bytes, not {type(source).__name__}")
    head = bytes(source)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = head.decode("utf-16", errors="replace")
    else:
        text = head.decode("utf-8", errors="replace")
    if _DOCTYPE.search(text):
        raise DocumentError(
            "the XLIFF file has a DOCTYPE or entity declarations, which XLIFF does not use and which can expand "
            "without bound (an entity bomb); remove them"
        )
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, strip_cdata=False
    )
    try:
        tree = etree.ElementTree(etree.fromstring(head, parser))
    except etree.XMLSyntaxError as exc:
        raise DocumentError(f"the input is not well-formed XML: {' '.join(str(exc).split())}") from None
    if tree.docinfo.doctype:
        raise DocumentError("the XLIFF file has a DOCTYPE, which XLIFF does not use; remove it")
    return tree


def _local(element: Any) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _skipped(unit: Any) -> bool:
    """``translate="no"`` on the unit or an element around it (XLIFF inherits it from groups and files)."""
    node = unit
    while node is not None:
        if node.get("translate") == "no":
            return True
        node = node.getparent()
    return False


def _has_content(element: Any) -> bool:
    return bool((element.text or "").strip()) or len(element) > 0


def _set_language(element: Any, attribute: str, locale: Locale, where: str) -> None:
    found = element.get(attribute)
    if found:
        locale.check(found, where)
    else:
        element.set(attribute, locale.tag)


def _protected(element: Any) -> bool:
    return _local(element) == "mrk" and (element.get("mtype") == "protected" or element.get("translate") == "no")


def _pairs(element: Any) -> dict[int, int]:
    """Begin and end codes among ``element``'s children that belong together (1.x ``<bx>``/``<ex>`` and
    ``<bpt>``/``<ept>`` by ``rid`` or ``id``, 2.x ``<sc id>``/``<ec startRef>`` and ``<sm id>``/``<em
    startRef>``), properly nested: begin index -> end index. The others stay points."""
    found: dict[int, int] = {}
    open_: list[tuple[str, int]] = []
    for i, child in enumerate(element):
        kind = _local(child)
        if kind in _BEGIN and child.get("isolated") != "yes":
            open_.append((_BEGIN[kind] + "\0" + (child.get("rid") or child.get("id") or ""), i))
        elif kind in _END and child.get("isolated") != "yes":
            key = kind + "\0" + (child.get("rid") or child.get("startRef") or child.get("id") or "")
            if open_ and open_[-1][0] == key:
                found[open_.pop()[1]] = i
    return found


def _block(source: Any, templates: list[Any]) -> Block:
    """The source's text (the text of its paired codes too) and a mark for every inline code; ``templates`` gets
    what each mark writes back: a paired code's shell, a begin/end pair's two copies, another code's copy."""
    text: list[str] = []
    marks: list[Mark | None] = []
    length = 0

    def add(piece: str | None) -> None:
        nonlocal length
        if piece:
            text.append(piece)
            length += len(piece)

    def visit(element: Any, parent: int | None) -> None:  # depth: the XML's, which libxml2 bounds (256)
        add(element.text)
        pairs = _pairs(element)
        ends = {end: begin for begin, end in pairs.items()}
        spans: dict[int, tuple[int, int]] = {}  # open begin/end pairs: begin child -> (mark, start)
        for number, child in enumerate(element):
            inner = spans[max(spans)][0] if spans else parent  # the innermost open pair encloses this child
            if number in ends:  # the end of a pair: its mark spans from its begin code to here
                index, start = spans.pop(ends[number])
                held = marks[index]
                assert held is not None
                end = copy.deepcopy(child)
                end.tail = None
                templates[tag_of(held).index] = (templates[tag_of(held).index][0], end)
                marks[index] = Mark(start, length, held.tag)
                add(child.tail)
                continue
            index = len(marks)
            marks.append(None)
            start = length
            if number in pairs:
                begin = copy.deepcopy(child)
                begin.tail = None
                templates.append((begin, None))
                marks[index] = Mark(start, start, Tag("pair", parent=inner, index=len(templates) - 1))
                spans[number] = (index, start)
                add(child.tail)
                continue
            if _local(child) in _PAIRED and not _protected(child):
                templates.append(child.makeelement(child.tag, child.attrib))
                tag = Tag(_local(child), parent=inner, index=len(templates) - 1)
                visit(child, index)
            else:
                whole = copy.deepcopy(child)
                whole.tail = None
                templates.append(whole)
                verbatim = "".join(child.itertext()) if _protected(child) else None
                tag = Tag(_local(child) or "comment", parent=inner, index=len(templates) - 1, verbatim=verbatim)
                if verbatim:
                    add(verbatim)
            marks[index] = Mark(start, length, tag)
            add(child.tail)

    visit(source, None)
    return Block("".join(text), tuple(m for m in marks if m is not None))


def _fill(target: Any, block: Block, done: TranslatedBlock, templates: list[Any]) -> None:
    """``target``'s content: the translated text with a copy of every inline code of the source placed in it."""
    stack = [target]
    inside_whole = 0  # within a code copied whole: the translated text of protected words is not written

    def append_text(piece: str) -> None:
        node = stack[-1]
        if len(node):
            node[-1].tail = (node[-1].tail or "") + piece
        else:
            node.text = (node.text or "") + piece

    for event in arrange(block, done):
        if isinstance(event, Text):
            if not inside_whole:
                append_text(event.text)
            elif tag_of(block.marks[event.owner or 0]).verbatim is None:
                stack[-1][-1].tail = (stack[-1][-1].tail or "") + event.text  # words placed on a point: after it
            continue
        tag = tag_of(block.marks[event.mark])
        template = templates[tag.index]
        if tag.kind == "pair":  # a begin code where the mark opens, its end code where it closes
            if not inside_whole:
                stack[-1].append(copy.deepcopy(template[0 if isinstance(event, Open) else 1]))
            continue
        whole = tag.kind not in _PAIRED or tag.verbatim is not None
        if isinstance(event, Open):
            if inside_whole:
                continue
            element = copy.deepcopy(template) if whole else template.makeelement(template.tag, template.attrib)
            stack[-1].append(element)
            if whole:
                inside_whole += 1
            else:
                stack.append(element)
        elif isinstance(event, Close):
            if whole:
                inside_whole -= 1
            elif not inside_whole:
                stack.pop()


FORMAT = XliffFormat()
