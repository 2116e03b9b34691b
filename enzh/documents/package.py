"""Zip packages (pptx, xlsx, odt, odp, epub): read safely, translate some XML parts, write the rest byte for byte.

:func:`open_package` checks the zip directory (:func:`enzh.documents.limits.check_zip`: member count, declared
size, ratio) and then inflates every member once, so that a truncated or corrupt package is refused before
anything is translated. :func:`parse_xml` parses a part with lxml without entity expansion, DTD loading,
network access or huge-tree mode, and refuses a part whose DTD declares entities (an entity bomb). A format
lists its translatable paragraphs as :class:`PartText` objects (one per part, each holding the writers of its
blocks); :func:`package_units` puts every part's blocks in one :class:`~enzh.documents.formats.Units` and
:func:`write_package` writes the package again: the same members in the same order with the same names,
timestamps, attributes and compression, the bytes of every member that no translated text changed, and the
changed XML parts re-serialized (equal as XML to the input but for their text).

The calls into :mod:`enzh.documents.limits` are all in :func:`open_package` and :func:`parse_xml`.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, TranslatedBlock
from enzh.documents.limits import check_zip
from enzh.runtime.optional import import_optional
from enzh.runtime.segment import needs_translation

# A DOCTYPE with an internal subset (``<!DOCTYPE x [ ... ]>``): where entities are declared.
_INTERNAL_SUBSET = re.compile(rb"<!DOCTYPE[^>\[]*\[", re.IGNORECASE)
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the signature of an OLE compound file (encrypted OOXML, .doc, .xls)
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
_DECLARATION = re.compile(rb"<\?xml\s[^>]*?(?:standalone\s*=\s*[\"'](?P<standalone>yes|no)[\"'][^>]*)?\?>")


@dataclass
class Package:
    """The members of a zip package, in the order of its central directory, inflated."""

    kind: str  # ".pptx", ".epub", ... (for messages)
    infos: list[zipfile.ZipInfo]
    data: list[bytes]
    comment: bytes

    def find(self, name: str) -> int | None:
        """The index of the member called ``name`` (the first one), or None."""
        for i, info in enumerate(self.infos):
            if info.filename == name:
                return i
        return None

    def member(self, name: str) -> bytes | None:
        i = self.find(name)
        return None if i is None else self.data[i]


def open_package(source: bytes, kind: str, what: str) -> Package:
    """Every member of the zip ``source``, or a one-line :class:`DocumentError` (``what``: what the file should
    be and how to get one, for the message)."""
    if not isinstance(source, bytes | bytearray):
        raise DocumentError(f"the {kind} format needs bytes, not {type(source).__name__}")
    if bytes(source[:8]) == _OLE:
        raise DocumentError(
            f"the input is an OLE compound file, not a {kind} package: a password-protected Office file or an old "
            f"binary one (.doc, .ppt, .xls); remove the password or save it as {kind} first"
        )
    check_zip(bytes(source), kind)  # count, declared sizes and ratio from the directory, before inflating
    try:
        with zipfile.ZipFile(io.BytesIO(source)) as package:
            infos = package.infolist()
            data = [package.read(info) for info in infos]  # CRC-checked; never more than the declared size
            comment = package.comment
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, RuntimeError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DocumentError(
            f"the input is not a readable {kind} file (a broken or truncated zip: {reason}); {what}"
        ) from None
    return Package(kind, infos, data, comment)


def check_entities(data: bytes, name: str, kind: str) -> None:
    """Refuse a part whose DOCTYPE has an internal subset: that is where entities are declared, and no part of
    these packages needs one (an entity bomb is refused here, before any parser sees it)."""
    if data.startswith(_UTF16):  # the XML is UTF-16: look at it as UTF-8
        data = data.decode("utf-16", "replace").encode("utf-8")
    if _INTERNAL_SUBSET.search(data[:65536]) or (b"<!ENTITY" in data and _INTERNAL_SUBSET.search(data)):
        raise DocumentError(
            f"the {kind} part {name!r} declares XML entities (a DOCTYPE with an internal subset), which enzh does "
            "not expand; remove the DOCTYPE's [...] declarations"
        )


def parse_xml(package: Package, index: int) -> Any:
    """Member ``index`` parsed by lxml (an ``ElementTree``): no entity expansion, no DTD, no network, no huge
    trees (libxml2's default depth and text-size limits hold)."""
    etree = import_optional("lxml.etree", f"{package.kind} translation")
    name = package.infos[index].filename
    data = package.data[index]
    check_entities(data, name, package.kind)
    parser = etree.XMLParser(
        resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False, remove_blank_text=False
    )
    try:
        tree = etree.ElementTree(etree.fromstring(data, parser))
    except etree.XMLSyntaxError as exc:
        raise DocumentError(
            f"the {package.kind} part {name!r} is not well-formed XML ({' '.join(str(exc).split())})"
        ) from None
    dtd = tree.docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        check_entities(b"<!DOCTYPE [", name, package.kind)  # raises: entities declared
    return tree


def serialize_xml(tree: Any, source: bytes) -> bytes:
    """``tree`` as bytes, with the XML declaration of ``source`` (its input): none, or its encoding and its
    standalone flag when it declared one."""
    etree = import_optional("lxml.etree", "XML packages")
    encoding = tree.docinfo.encoding or "UTF-8"
    declaration = _DECLARATION.match(source.lstrip(b"\xef\xbb\xbf \t\r\n"))
    if declaration is None:
        return bytes(etree.tostring(tree, encoding=encoding, xml_declaration=False))
    flag = declaration.group("standalone")
    standalone = None if flag is None else flag == b"yes"
    return bytes(etree.tostring(tree, xml_declaration=True, encoding=encoding, standalone=standalone))


# A block's writer: puts its translation into the part's tree (or text); True when that changed anything.
BlockWriter = Callable[[Block, TranslatedBlock], bool]


@dataclass
class PartText:
    """The translatable blocks of one member and how to write them back.

    ``writers[i]`` writes ``blocks[i]``; ``finish`` gives the member's new bytes once they have all been written
    (only called when one of them changed something)."""

    index: int
    finish: Callable[[], bytes]
    blocks: list[Block] = field(default_factory=list)
    writers: list[BlockWriter] = field(default_factory=list)

    def add(self, block: Block, writer: BlockWriter) -> None:
        self.blocks.append(block)
        self.writers.append(writer)


def xml_part(package: Package, index: int) -> tuple[Any, PartText]:
    """A parsed XML member and its (empty) :class:`PartText`, re-serialized from the tree when written."""
    tree = parse_xml(package, index)
    return tree, PartText(index, lambda: serialize_xml(tree, package.data[index]))


@dataclass
class _Layout:
    package: Package
    parts: list[PartText]


def package_units(package: Package, parts: Sequence[PartText]) -> Units:
    """All the parts' blocks, in order, as one document."""
    kept = [part for part in parts if part.blocks]
    return Units([block for part in kept for block in part.blocks], _Layout(package, kept))


def write_package(units: Units, translated: Sequence[TranslatedBlock]) -> bytes:
    """The package with every part's blocks written: changed parts re-serialized, every other member as it was."""
    layout: _Layout = units.layout
    if len(translated) != len(units.blocks):
        raise ValueError(f"{len(translated)} translations for {len(units.blocks)} blocks")
    replaced: dict[int, bytes] = {}
    position = 0
    for part in layout.parts:
        changed = False
        for block, writer in zip(part.blocks, part.writers, strict=True):
            changed = writer(block, translated[position]) or changed
            position += 1
        if changed:
            replaced[part.index] = part.finish()
    return repack(layout.package, replaced)


def repack(package: Package, replaced: dict[int, bytes]) -> bytes:
    """The package's members in their order, with their names, timestamps, attributes and compression; member
    ``i``'s bytes are ``replaced[i]`` when given."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as written:
        for i, (info, data) in enumerate(zip(package.infos, package.data, strict=True)):
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.compress_type = info.compress_type
            copy.external_attr = info.external_attr
            copy.create_system = info.create_system
            copy.comment = info.comment
            copy.internal_attr = info.internal_attr
            written.writestr(copy, replaced.get(i, data))
            copy.external_attr = info.external_attr  # zipfile puts 0o600 in place of 0; the directory is written last
        written.comment = package.comment
    return out.getvalue()


def element_text(element: Any) -> tuple[Block, BlockWriter] | None:
    """An element holding plain text only (a title, a table-of-contents label) as a block, and its writer;
    None when it has children or nothing to translate."""
    if len(element) or not element.text or not needs_translation(element.text):
        return None

    def write(block: Block, done: TranslatedBlock) -> bool:
        if element.text == done.text:
            return False
        element.text = done.text
        return True

    return Block(" ".join(element.text.split())), write
