"""EPUB (2 and 3): every XHTML document of the book through the HTML format (:mod:`enzh.documents.html`: its
text, ``alt`` and ``title`` translated, everything else byte for byte), the EPUB 3 navigation document among
them, the title in the package document (``dc:title`` of the OPF) and the EPUB 2 table of contents (the
``docTitle`` and ``navLabel`` texts of the NCX); every other member (images, CSS, fonts, the ``mimetype`` first
and stored) byte for byte.

The book is read as what it is, a zip with an OPF and an NCX, with lxml and the existing HTML format, rather
than with ebooklib: ebooklib writes a new package (new OPF, new file order) and so cannot keep the untranslated
members as they were. The tests build their books with ebooklib. A book with encrypted (DRM) content documents is
refused; obfuscated fonts are fine.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from enzh.documents.encoding import decode_text
from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.html import FORMAT as HTML
from enzh.documents.inline import Block, TranslatedBlock
from enzh.documents.packages import Package, declares_entities, entities_error, open_package
from enzh.documents.parts import BlockWriter, PartText, element_text, package_units, write_package, xml_part

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
_XHTML = ("application/xhtml+xml", "text/html")
_WHAT = "an EPUB book is expected"


def _rootfile(package: Package) -> str:
    names = package.names
    mimetype = package.read("mimetype") if "mimetype" in names else b""
    if "META-INF/container.xml" not in names or not mimetype.startswith(b"application/epub+zip"):
        raise DocumentError(f"the input is not an EPUB book (no mimetype and META-INF/container.xml); {_WHAT}")
    for rootfile in package.xml("META-INF/container.xml").iter(f"{_CONTAINER}rootfile"):
        path = rootfile.get("full-path")
        if path and rootfile.get("media-type", "application/oebps-package+xml") == "application/oebps-package+xml":
            return path
    raise DocumentError(f"the EPUB's META-INF/container.xml names no package document (rootfile); {_WHAT}")


def _encrypted(package: Package) -> set[str]:
    """Members whose content is encrypted (META-INF/encryption.xml's cipher references)."""
    if "META-INF/encryption.xml" not in package.names:
        return set()
    root = package.xml("META-INF/encryption.xml")
    return {unquote(r.get("URI", "")) for r in root.iter(f"{_ENC}CipherReference")}


def _xhtml_part(package: Package, name: str) -> PartText:
    """An XHTML member through the HTML format: its blocks, written back as that format writes them. It is not
    parsed as XML (books are often not well-formed), but one that declares entities is refused as XML is."""
    data = package.read(name)
    if declares_entities(data):
        raise entities_error(f"the .epub member {name!r}")
    decoded = decode_text(data, f"the EPUB document {name!r}")
    units = HTML.read(decoded.text)
    translated: list[TranslatedBlock | None] = [None] * len(units.blocks)
    part = PartText(name, lambda: decoded.encode(HTML.write(units, translated)))  # type: ignore[arg-type]

    def collect(position: int) -> BlockWriter:
        def write(block: Block, done: TranslatedBlock) -> bool:
            translated[position] = done
            return True

        return write

    for position, block in enumerate(units.blocks):
        part.add(block, collect(position))
    return part


def _texts(part: PartText, elements: Any) -> PartText:
    for element in elements:
        found = element_text(element)
        if found is not None:
            part.add(*found)
    return part


@dataclass(frozen=True)
class EpubFormat:
    name: str = "epub"
    extensions: tuple[str, ...] = (".epub",)
    binary: bool = True

    def read(self, source: bytes, field: str | None = None) -> Units:
        package = open_package(source, ".epub", _WHAT)
        opf_name = _rootfile(package)
        if opf_name not in package.names:
            raise DocumentError(f"the EPUB's package document {opf_name!r} is missing; {_WHAT}")
        opf, opf_part = xml_part(package, opf_name)
        base = posixpath.dirname(opf_name)
        kinds: dict[str, str] = {}  # member name -> media type, for the manifest's items
        for item in opf.iter(f"{_OPF}item"):
            href = item.get("href")
            if href:
                kinds[posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0])))] = item.get(
                    "media-type", ""
                )
        encrypted = _encrypted(package)
        parts = [_texts(opf_part, (t for m in opf.iter(f"{_OPF}metadata") for t in m.iter(f"{_DC}title")))]
        for name in package.names:
            kind = kinds.get(name)
            if kind not in (*_XHTML, "application/x-dtbncx+xml"):
                continue
            if name in encrypted:
                raise DocumentError(
                    f"the EPUB's {name!r} is encrypted (DRM); enzh can translate only books without DRM"
                )
            if kind == "application/x-dtbncx+xml":
                root, part = xml_part(package, name)
                labels = (t for e in root.iter(f"{_NCX}docTitle", f"{_NCX}navLabel") for t in e.iter(f"{_NCX}text"))
                parts.append(_texts(part, labels))
            else:
                parts.append(_xhtml_part(package, name))
        return package_units(package, parts)

    def write(self, units: Units, translated: list[TranslatedBlock]) -> bytes:
        return write_package(units, translated)


FORMAT = EpubFormat()
