"""The translatable text of a zip package's parts as one document: the blocks of every part, how each is written
back, and the package rebuilt with the changed parts (:mod:`enzh.documents.packages` reads and writes it).

A format lists its paragraphs as :class:`PartText` objects (one per member, each holding the writers of its
blocks); :func:`package_units` puts every part's blocks in one :class:`~enzh.documents.formats.Units` and
:func:`write_package` writes them: a part whose text changed is serialized again (equal as XML to its input
but for its text, with the input's XML declaration), every other member is copied as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, TranslatedBlock
from enzh.documents.packages import Package, to_xml
from enzh.runtime.segment import needs_translation

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the signature of an OLE compound file (encrypted OOXML, .doc, .xls)

# A block's writer: puts its translation into the part's tree (or text); True when that changed anything.
BlockWriter = Callable[[Block, TranslatedBlock], bool]


@dataclass
class PartText:
    """The translatable blocks of member ``name`` and how to write them back: ``writers[i]`` writes
    ``blocks[i]``; ``finish`` gives the member's new bytes once they are all written (called only when one of
    them changed something)."""

    name: str
    finish: Callable[[], bytes]
    blocks: list[Block] = field(default_factory=list)
    writers: list[BlockWriter] = field(default_factory=list)

    def add(self, block: Block, writer: BlockWriter) -> None:
        self.blocks.append(block)
        self.writers.append(writer)


def xml_part(package: Package, name: str) -> tuple[Any, PartText]:
    """Member ``name`` parsed (its root element) and its (empty) :class:`PartText`, serialized from the tree
    when written."""
    root = package.xml(name)
    return root, PartText(name, lambda: to_xml(root, package.read(name)))


def refuse_ole(data: bytes, kind: str) -> None:
    """An OLE compound file is what a password-protected Office file (or an old binary one) is: say so."""
    if bytes(data[:8]) == _OLE:
        raise DocumentError(
            f"the input is an OLE compound file, not a {kind} package: a password-protected Office file or an old "
            f"binary one (.doc, .ppt, .xls); remove the password or save it as {kind} first"
        )


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


# Called once every block is written and before any part is serialized: member name -> new bytes of the
# members it changed besides (xlsx: the references to renamed sheets).
AfterWriting = Callable[[], dict[str, bytes]]


@dataclass
class _Layout:
    package: Package
    parts: list[PartText]
    after: AfterWriting | None = None


def package_units(package: Package, parts: Sequence[PartText], after: AfterWriting | None = None) -> Units:
    """All the parts' blocks, in order, as one document (``after``: see :data:`AfterWriting`)."""
    kept = [part for part in parts if part.blocks]
    return Units([block for part in kept for block in part.blocks], _Layout(package, kept, after))


def write_package(units: Units, translated: Sequence[TranslatedBlock]) -> bytes:
    """The package with every part's blocks written: changed parts serialized again, every other member as it
    was."""
    layout: _Layout = units.layout
    if len(translated) != len(units.blocks):
        raise ValueError(f"{len(translated)} translations for {len(units.blocks)} blocks")
    changed: list[PartText] = []
    position = 0
    for part in layout.parts:
        touched = False
        for block, writer in zip(part.blocks, part.writers, strict=True):
            touched = writer(block, translated[position]) or touched
            position += 1
        if touched:
            changed.append(part)
    replaced = layout.after() if layout.after is not None else {}
    replaced.update({part.name: part.finish() for part in changed})
    return layout.package.rebuild(replaced)
