"""The document formats: a small protocol, the registry of names and extensions, and detection by extension.

A format reads its input into :class:`Units` (the :class:`~enzh.documents.inline.Block` of every piece of text
to translate, plus whatever the format needs to write the result back) and writes the output from the
translated blocks. Text formats (``binary = False``) get and give ``str`` (decoding, the BOM and line ends are
handled once in :mod:`enzh.documents.encoding`); binary ones (docx and the other zip packages: pptx, xlsx, odt,
odp, epub) get and give ``bytes``. Every text format rewrites only the spans of its input that hold translatable
text: everything else comes out byte for byte.

A format module defines one object per format it implements (``FORMAT``, or ``SRT``/``VTT``, ``JSONL``/``TSV``)
and is imported only when that format is used, so its parser (markdown-it-py, lxml) stays optional.
A format that depends on more of the :class:`~enzh.documents.options.DocumentOptions` than the field (the target
language, whether to mark machine output for review: po, xliff) also has ``configure(options) -> Format``, called
before ``read``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Protocol

from enzh.documents.errors import DocumentError
from enzh.documents.inline import Block, TranslatedBlock


@dataclass
class Units:
    """What a format read: the blocks to translate, in order, and the format's own record of where they go."""

    blocks: list[Block]
    layout: Any = None


class Format(Protocol):
    name: str
    extensions: tuple[str, ...]
    binary: bool

    def read(self, source: Any, field: str | None) -> Units:
        """Parse ``source`` (str, or bytes when ``binary``); ``field`` is the jsonl/tsv field (None: default)."""
        ...

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> Any:
        """The output document (str, or bytes when ``binary``) with ``translated[i]`` in place of block i."""
        ...


# name -> (module, attribute) implementing it; extensions are listed here so detection imports nothing.
_REGISTRY: dict[str, tuple[str, str]] = {
    "txt": ("enzh.documents.text", "FORMAT"),
    "html": ("enzh.documents.html", "FORMAT"),
    "md": ("enzh.documents.markdown", "FORMAT"),
    "srt": ("enzh.documents.subtitles", "SRT"),
    "vtt": ("enzh.documents.subtitles", "VTT"),
    "docx": ("enzh.documents.docx", "FORMAT"),
    "jsonl": ("enzh.documents.records", "JSONL"),
    "tsv": ("enzh.documents.records", "TSV"),
    "pptx": ("enzh.documents.ooxml", "PPTX"),
    "xlsx": ("enzh.documents.ooxml", "XLSX"),
    "epub": ("enzh.documents.epub", "FORMAT"),
    "odt": ("enzh.documents.odf", "ODT"),
    "odp": ("enzh.documents.odf", "ODP"),
    "csv": ("enzh.documents.records", "CSV"),
    "po": ("enzh.documents.po", "FORMAT"),
    "xliff": ("enzh.documents.xliff", "FORMAT"),
}
FORMAT_NAMES = tuple(_REGISTRY)
EXTENSIONS: dict[str, str] = {
    ".txt": "txt",
    ".text": "txt",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "md",
    ".markdown": "md",
    ".srt": "srt",
    ".vtt": "vtt",
    ".docx": "docx",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".tsv": "tsv",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".epub": "epub",
    ".odt": "odt",
    ".odp": "odp",
    ".csv": "csv",
    ".po": "po",
    ".pot": "po",
    ".xlf": "xliff",
    ".xliff": "xliff",
}

# PDF: why it is refused and what to do instead (docs/documents.md, "PDF").
PDF_REFUSAL = (
    "PDF is not supported: a PDF holds glyphs at positions on a page, not paragraphs, so a translation could not "
    "keep its layout; convert it to .docx or .odt first (LibreOffice: soffice --infilter=writer_pdf_import "
    "--convert-to docx FILE.pdf, or pdf2docx), translate that, and export the result to PDF again"
)


def detect_format(path: str | PurePath) -> str:
    """The format name for a file name, from its extension (case-insensitive)."""
    suffix = PurePath(path).suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    if suffix == ".pdf":
        raise DocumentError(PDF_REFUSAL)
    what = f"extension {suffix!r}" if suffix else "no extension"
    raise DocumentError(
        f"cannot tell the format of {str(path)!r} from its {what}; accepted: {', '.join(EXTENSIONS)}; "
        f"or name it with --format {'|'.join(FORMAT_NAMES)}"
    )


def resolve_format(name: str, path: str | PurePath | None = None) -> str:
    """``name`` checked, or the format of ``path`` when ``name`` is ``auto``."""
    if name == "auto":
        if path is None:
            raise DocumentError(f"format 'auto' needs a file name; name one of: {', '.join(FORMAT_NAMES)}")
        return detect_format(path)
    if name not in _REGISTRY:
        raise DocumentError(f"unknown format {name!r}; accepted: auto, {', '.join(FORMAT_NAMES)}")
    return name


def get_format(name: str) -> Format:
    """The implementation of format ``name`` (imports its module)."""
    module_name, attribute = _REGISTRY[resolve_format(name)]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise DocumentError(f"the {name} format is not available in this installation of enzh") from None
    implementation: Format = getattr(module, attribute)
    return implementation
