"""Zip packages of XML parts (pptx, xlsx, odt, odp, epub): opened within the zip bounds of
:mod:`enzh.documents.limits`, their XML parsed with entity expansion, DTD loading and network access off, and
written back with every member that was not replaced as it was.

The API (the same as the shared package reader made for .docx on another branch, so that the formats built on it
can move to that one by their import alone)::

    package = open_package(data, ".pptx", hint)   # DocumentError: not a zip, over a zip bound, a damaged member
    package.names                                 # member names in zip order
    package.read("ppt/slides/slide1.xml")         # bytes, at most the declared size
    root = package.xml("ppt/slides/slide1.xml")   # lxml root; DocumentError: not XML, or declares entities
    package.content_types()                       # OOXML: {"/ppt/slides/slide1.xml": "application/...", ...}
    out = package.rebuild({"ppt/slides/slide1.xml": to_xml(root, package.read("ppt/slides/slide1.xml"))})

:meth:`Package.rebuild` writes the members in the input's order with the input's names, timestamps,
compression methods, attributes and comments; a member not in ``replaced`` keeps its bytes (inflated and
deflated again: the same content). Every member is inflated once when the package is opened (CRC checked), so a
damaged one is refused before anything is translated. The calls into :mod:`enzh.documents.limits` are all in
:func:`open_package`.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.limits import check_zip
from enzh.runtime.optional import import_optional

_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError)
_DOCTYPE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)
_UTF16 = (b"\xff\xfe", b"\xfe\xff")


def parse_xml(data: bytes, what: str) -> Any:
    """The root element of ``data`` (lxml), parsed with entities left unexpanded, no DTD loaded, no network and
    no huge trees (libxml2's depth and text-size limits hold).

    XML that declares entities (``<!ENTITY`` in its DOCTYPE: the "billion laughs" bomb, external entities) is a
    :class:`DocumentError` naming ``what``: no package format needs one. A plain ``<!DOCTYPE html>`` is fine."""
    etree = import_optional("lxml.etree", "Reading XML parts of a document")
    text = data.decode("utf-16", "replace").encode("utf-8") if data.startswith(_UTF16) else data
    doctype = _DOCTYPE.search(text)
    if doctype is not None and text.find(b"<!ENTITY", doctype.start()) >= 0:
        raise _entities(what)  # before libxml2 reads the declarations
    parser = etree.XMLParser(
        resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False, remove_blank_text=False
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise DocumentError(
            f"{what} is not well-formed XML ({' '.join(str(exc).split())}); the file is damaged"
        ) from None
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise _entities(what)  # declared in a way the byte check did not see
    return root


def _entities(what: str) -> DocumentError:
    return DocumentError(
        f"{what} declares XML entities (<!ENTITY ...>), which documents never need and which can expand "
        "without bound (an entity bomb); refused: entity expansion is off for every document"
    )


def to_xml(root: Any, original: bytes) -> bytes:
    """``root`` serialized like the part it was parsed from: the bytes of ``original`` before its root element
    (XML declaration, comments, DOCTYPE) as they were, then the element in the input's encoding."""
    etree = import_optional("lxml.etree", "Writing XML parts of a document")
    encoding = root.getroottree().docinfo.encoding or "UTF-8"
    start = _root_start(original)
    prolog = original[:start] if start >= 0 else b""
    return prolog + bytes(etree.tostring(root, encoding=encoding, xml_declaration=start < 0))


def _root_start(data: bytes) -> int:
    """Where the root element's ``<`` is in ``data`` (after the declaration, comments, processing instructions
    and DOCTYPE); -1 when it cannot be told (UTF-16: then the declaration is written anew)."""
    if data.startswith(_UTF16):
        return -1
    position = 0
    while True:
        position = data.find(b"<", position)
        if position < 0:
            return -1
        if data.startswith(b"<?", position):
            end = data.find(b"?>", position)
            position = end + 2
        elif data.startswith(b"<!--", position):
            end = data.find(b"-->", position)
            position = end + 3
        elif data.startswith(b"<!", position):
            end = data.find(b">", position)  # a DOCTYPE with no internal subset (parse_xml refused the others)
            position = end + 1
        else:
            return position
        if end < 0:
            return -1


@dataclass
class Package:
    """A zip package checked against the zip bounds of :mod:`enzh.documents.limits`."""

    data: bytes
    kind: str
    members: list[zipfile.ZipInfo] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [member.filename for member in self.members]

    def read(self, name: str) -> bytes:
        try:
            with zipfile.ZipFile(io.BytesIO(self.data)) as package:
                return package.read(name)
        except KeyError:
            raise DocumentError(f"the {self.kind} package has no member {name!r}; the file is damaged") from None
        except _ZIP_ERRORS as exc:
            raise DocumentError(
                f"the {self.kind} member {name!r} cannot be read ({exc}); the file is damaged"
            ) from None

    def xml(self, name: str) -> Any:
        """The member parsed by :func:`parse_xml`."""
        return parse_xml(self.read(name), f"the {self.kind} member {name!r}")

    def content_types(self) -> dict[str, str]:
        """OOXML ``[Content_Types].xml``: part name (``/ppt/slides/slide1.xml``) -> content type, overrides over
        the defaults by extension (part names compared in any case, as OPC says); empty when there is none."""
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
                overrides[child.get("PartName", "").lower()] = child.get("ContentType", "")
        types = {}
        for name in self.names:
            extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            kind = overrides.get("/" + name.lower()) or defaults.get(extension)
            if kind and not name.endswith("/"):
                types["/" + name] = kind
        return types

    def rebuild(self, replaced: Mapping[str, bytes]) -> bytes:
        """The package with ``replaced`` members' contents, every other member's content as it was."""
        unknown = set(replaced) - set(self.names)
        if unknown:
            raise ValueError(f"not members of the package: {sorted(unknown)}")
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(self.data)) as original, zipfile.ZipFile(out, "w") as written:
            for member in self.members:
                copy = zipfile.ZipInfo(member.filename, date_time=member.date_time)
                copy.compress_type = member.compress_type
                copy.create_system = member.create_system
                copy.internal_attr = member.internal_attr
                copy.comment = member.comment
                content = replaced.get(member.filename)
                written.writestr(copy, original.read(member) if content is None else content)
                copy.external_attr = member.external_attr  # zipfile writes 0o600 for 0; the directory comes last
            written.comment = original.comment
        return out.getvalue()


def open_package(data: bytes, kind: str, hint: str = "") -> Package:
    """The zip package in ``data``; ``kind`` names it in messages (``.pptx``), ``hint`` is added to the message
    when ``data`` is not a zip. Every member is inflated once here (CRC checked)."""
    if not isinstance(data, bytes | bytearray):
        raise DocumentError(f"the {kind} format needs bytes, not {type(data).__name__}")
    data = bytes(data)
    fix = f"; {hint}" if hint else ""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except _ZIP_ERRORS as exc:
        raise DocumentError(f"the input is not a {kind} file (not a zip package: {exc}){fix}") from None
    check_zip(data, kind)  # count, declared sizes and ratio, from the directory alone
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            damaged = package.testzip()  # inflates each member (never past its declared size), checks its CRC
    except _ZIP_ERRORS as exc:
        raise DocumentError(f"the {kind} package is damaged ({exc}); the file is truncated or corrupt") from None
    if damaged is not None:
        raise DocumentError(f"the {kind} member {damaged!r} is damaged (bad CRC); the file is truncated or corrupt")
    return Package(data, kind, members)
