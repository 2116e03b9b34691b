"""Zip packages of XML parts (.docx, .pptx, .xlsx, .odt, .epub): opened within the bounds of
:mod:`enzh.documents.limits`, their XML parsed with entity expansion and network access off, and written back
with every part that was not changed copied as it was.

The API, shared by every package format::

    package = open_package(data, ".docx")        # DocumentError: not a zip, or over a zip bound
    package.names                                 # member names in zip order (directories too)
    package.read("word/document.xml")            # bytes, at most the declared size
    root = package.xml("word/document.xml")      # lxml root; DocumentError: not XML, or declares entities
    package.content_types()                       # OOXML: {"/word/document.xml": "application/...", ...}
    out = package.rebuild({"word/document.xml": to_xml(root, package.read("word/document.xml"))})

:meth:`Package.rebuild` writes the members in the input's order with the input's names, timestamps,
compression, attributes, extra fields and comments; a member not in ``replaced`` keeps its bytes exactly (its
compressed stream is copied, not recompressed), so the output differs from the input only in the replaced
parts. :func:`parse_xml` and :func:`to_xml` work on any XML bytes (a part read some other way).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.limits import MAX_XML_ELEMENTS, check_zip_members, over
from enzh.runtime.optional import import_optional

_LOCAL = struct.Struct("<4s5H3L2H")  # local file header: signature .. extra length (30 bytes)
_CENTRAL = struct.Struct("<4s6H3L5H2L")  # central directory entry (46 bytes)
_END = struct.Struct("<4s4H2LH")  # end of central directory (22 bytes)
_DESCRIPTOR = 0x08  # general purpose flag: sizes and CRC follow the data


@dataclass(frozen=True)
class Bound:
    """At most ``limit`` elements ``tag`` (``{namespace}name``) in the parts of one package read with it (their
    ``noun`` in the message; ``name``: the constant in :mod:`enzh.documents.limits`)."""

    tag: str
    limit: int
    name: str
    noun: str


def parse_xml(data: bytes, what: str, counts: dict[str, int] | None = None, bound: Bound | None = None) -> Any:
    """The root element of ``data`` (lxml), parsed with entities left unexpanded, no DTD loaded and no network.

    An XML part that declares entities (``<!ENTITY``, the "billion laughs" bomb and external entities) is a
    :class:`DocumentError`: no package format needs one. A plain ``<!DOCTYPE html>`` is fine. Elements are
    counted while they are parsed, into ``counts`` (kept across the parts of a package; ``""``: all elements):
    over :data:`~enzh.documents.limits.MAX_XML_ELEMENTS` of them, or over ``bound``, is a :class:`DocumentError`
    raised as soon as the count is passed."""
    etree = import_optional("lxml.etree", "Reading XML parts of a document")
    if declares_entities(data):
        raise entities_error(what)  # before libxml2 reads the declarations
    counts = {} if counts is None else counts
    tag = bound.tag if bound is not None else None
    elements, tagged = counts.get("", 0), counts.get(tag, 0) if tag else 0
    events = etree.iterparse(
        io.BytesIO(data),
        events=("start",),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_blank_text=False,
    )
    try:
        for _, element in events:
            elements += 1
            if element.tag == tag:
                tagged += 1
            if elements > MAX_XML_ELEMENTS:
                raise over(
                    f"the document has more than {MAX_XML_ELEMENTS:,} XML elements (counted up to {what})",
                    MAX_XML_ELEMENTS,
                    "MAX_XML_ELEMENTS",
                )
            if bound is not None and tagged > bound.limit:
                raise over(
                    f"the document has more than {bound.limit:,} {bound.noun} (counted up to {what})",
                    bound.limit,
                    bound.name,
                )
    except etree.XMLSyntaxError as exc:
        raise DocumentError(f"{what} is not well-formed XML ({exc}); the file is damaged") from None
    counts[""] = elements
    if tag:
        counts[tag] = tagged
    root = events.root
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise entities_error(what)  # declared in another encoding (UTF-16) than the byte check reads
    return root


_DOCTYPE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)


def declares_entities(data: bytes) -> bool:
    """Whether ``data`` declares an entity in a DOCTYPE, read as UTF-8 or, with a UTF-16 BOM or a UTF-16 first
    character, as UTF-16 (where the bytes of ``<!ENTITY`` are interleaved with zeros)."""
    for encoding, bom in (("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")):
        if data.startswith(bom) or data.startswith(b"<\x00" if encoding.endswith("le") else b"\x00<"):
            data = data.decode(encoding, errors="replace").encode("utf-8")
            break
    doctype = _DOCTYPE.search(data)  # any case: an HTML document's doctype may be lower case
    return doctype is not None and data.find(b"<!ENTITY", doctype.start()) >= 0


def entities_error(what: str) -> DocumentError:
    return DocumentError(
        f"{what} declares XML entities (<!ENTITY ...>), which documents never need and which can expand "
        "without bound (an entity bomb); refused: entity expansion is off for every document"
    )


def to_xml(root: Any, original: bytes) -> bytes:
    """``root`` serialized like the part it was parsed from: the same XML declaration and what follows it up
    to the root element, then the element in the input's encoding."""
    etree = import_optional("lxml.etree", "Writing XML parts of a document")
    encoding = root.getroottree().docinfo.encoding or "UTF-8"
    if encoding.upper().replace("-", "") != "UTF8":  # UTF-16 parts: lxml writes the declaration and BOM itself
        return bytes(etree.tostring(root.getroottree(), encoding=encoding, xml_declaration=True))
    start = _root_start(original)
    prolog = original[:start] if start >= 0 else b""
    return prolog + etree.tostring(root, encoding=encoding, xml_declaration=False)


def _root_start(data: bytes) -> int:
    """Offset of the root element's ``<`` in ``data`` (after the declaration, comments, PIs, DOCTYPE); -1 when
    there is none (UTF-16 input: then no prolog is copied)."""
    position = 0
    while True:
        position = data.find(b"<", position)
        if position < 0 or position + 1 >= len(data):
            return -1
        following = data[position + 1 : position + 2]
        if following == b"?":
            position = data.find(b"?>", position) + 2
        elif data.startswith(b"<!--", position):
            position = data.find(b"-->", position) + 3
        elif following == b"!":
            position = data.find(b">", position) + 1  # DOCTYPE without an internal subset (checked after parse)
        else:
            return position
        if position < 3:
            return -1


@dataclass
class Package:
    """A zip package checked against the bounds of :mod:`enzh.documents.limits`."""

    data: bytes
    kind: str
    members: list[zipfile.ZipInfo] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # elements parsed so far, by tag ("": all)

    @property
    def names(self) -> list[str]:
        return [member.filename for member in self.members]

    def read(self, name: str) -> bytes:
        try:
            with zipfile.ZipFile(io.BytesIO(self.data)) as package:
                return package.read(name)
        except KeyError:
            raise DocumentError(f"the {self.kind} package has no member {name!r}; the file is damaged") from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, ValueError) as exc:
            raise DocumentError(
                f"the {self.kind} member {name!r} cannot be read ({exc}); the file is damaged"
            ) from None

    def xml(self, name: str, bound: Bound | None = None) -> Any:
        """The member parsed by :func:`parse_xml`; its elements count towards the package's bounds."""
        return parse_xml(self.read(name), f"the {self.kind} member {name!r}", self.counts, bound)

    def content_types(self) -> dict[str, str]:
        """OOXML ``[Content_Types].xml``: part name (``/word/document.xml``) -> content type, overrides over
        the defaults by extension; empty when the package has none (ODF, EPUB)."""
        if "[Content_Types].xml" not in self.names:
            return {}
        root = self.xml("[Content_Types].xml")
        defaults: dict[str, str] = {}
        overrides: dict[str, str] = {}
        for child in root:
            local = str(child.tag).rsplit("}", 1)[-1]
            if local == "Default":
                defaults[child.get("Extension", "").lower()] = child.get("ContentType", "")
            elif local == "Override":
                overrides[child.get("PartName", "").lower()] = child.get("ContentType", "")  # OPC: any case
        types = {}
        for name in self.names:
            part = "/" + name
            extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            kind = overrides.get(part.lower()) or defaults.get(extension)
            if kind and not name.endswith("/"):
                types[part] = kind
        return types

    def rebuild(self, replaced: Mapping[str, bytes]) -> bytes:
        """The package with ``replaced`` members' contents, every other member's bytes copied unchanged."""
        unknown = set(replaced) - set(self.names)
        if unknown:
            raise ValueError(f"not members of the package: {sorted(unknown)}")
        try:
            return _copy_raw(self.data, self.members, replaced)
        except _Unsupported:
            return _copy_by_zipfile(self.data, self.members, replaced)


def open_package(data: bytes, kind: str, hint: str = "") -> Package:
    """The zip package in ``data``; ``kind`` names it in messages (``.docx``), ``hint`` is added to the message
    when ``data`` is not a zip."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise DocumentError(
            f"the input is not a {kind} file (not a zip package: {exc}){'; ' + hint if hint else ''}"
        ) from None
    check_zip_members(members, kind)
    return Package(data, kind, members)


class _Unsupported(Exception):
    """A zip the raw copier does not handle (zip64, a split archive): copied through zipfile instead."""


def _copy_raw(data: bytes, members: list[zipfile.ZipInfo], replaced: Mapping[str, bytes]) -> bytes:
    """Local records copied as they are (compressed data, data descriptor), the replaced ones deflated anew; the
    central directory copied entry by entry with the new offsets."""
    end_at = data.rfind(b"PK\x05\x06")
    if end_at < 0 or len(data) - end_at < _END.size:
        raise _Unsupported
    _, disk, _, _, count, dir_size, dir_offset, comment_length = _END.unpack_from(data, end_at)
    if disk or count != len(members) or 0xFFFFFFFF in (dir_size, dir_offset) or count == 0xFFFF:
        raise _Unsupported
    central = data[dir_offset : dir_offset + dir_size]
    entries: list[bytes] = []
    position = 0
    for _ in members:
        if central[position : position + 4] != b"PK\x01\x02":
            raise _Unsupported
        lengths = _CENTRAL.unpack_from(central, position)[10:13]  # name, extra field, comment
        size = _CENTRAL.size + sum(lengths)
        entries.append(central[position : position + size])
        position += size
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        out = bytearray()
        directory = bytearray()
        for member, entry in zip(members, entries, strict=True):
            fields = list(_CENTRAL.unpack_from(entry))
            if 0xFFFFFFFF in (fields[8], fields[9], fields[16]):
                raise _Unsupported
            offset = len(out)
            if member.filename in replaced:
                content = replaced[member.filename]
                compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
                packed = compressor.compress(content) + compressor.flush()
                crc = zlib.crc32(content)
                name = entry[_CENTRAL.size : _CENTRAL.size + fields[10]]
                flags = fields[3] & ~_DESCRIPTOR  # sizes in the header; the UTF-8 name bit stays
                out += _LOCAL.pack(
                    b"PK\x03\x04",
                    20,
                    flags,
                    zipfile.ZIP_DEFLATED,
                    fields[5],
                    fields[6],
                    crc,
                    len(packed),
                    len(content),
                    len(name),
                    0,
                )
                out += name + packed
                fields[2], fields[3], fields[4] = max(fields[2], 20), flags, zipfile.ZIP_DEFLATED
                fields[7], fields[8], fields[9] = crc, len(packed), len(content)
            else:
                out += _local_record(data, package, member)
            fields[16] = offset
            directory += _CENTRAL.pack(*fields) + entry[_CENTRAL.size :]
    comment = data[end_at + _END.size : end_at + _END.size + comment_length]
    start = len(out)
    out += directory
    out += _END.pack(b"PK\x05\x06", 0, 0, len(members), len(members), len(directory), start, len(comment)) + comment
    return bytes(out)


def _local_record(data: bytes, package: zipfile.ZipFile, member: zipfile.ZipInfo) -> bytes:
    """The member's local header, compressed data and data descriptor, as they are in ``data``."""
    at = member.header_offset
    header = _LOCAL.unpack_from(data, at)
    if header[0] != b"PK\x03\x04":
        raise _Unsupported
    end = at + _LOCAL.size + header[9] + header[10] + member.compress_size
    if member.flag_bits & _DESCRIPTOR:
        end += 16 if data[end : end + 4] == b"PK\x07\x08" else 12
    if end > len(data):
        raise _Unsupported
    return data[at:end]


def _copy_by_zipfile(data: bytes, members: list[zipfile.ZipInfo], replaced: Mapping[str, bytes]) -> bytes:
    """The same through zipfile (recompressed, same contents, order, names, stamps and attributes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as original, zipfile.ZipFile(out, "w") as packed:
        for member in members:
            content = replaced.get(member.filename)
            packed.writestr(member, original.read(member) if content is None else content)
    return out.getvalue()
