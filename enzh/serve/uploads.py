"""Uploaded files of /translate_file: their format (from the file name), how they are read, and how many
characters they hold to translate (what the char limits count: the text of the blocks the route translates, not
the file's bytes; a 2 KiB .docx may hold 30,000 characters).

Counting reads the file with the documents' own reader (:func:`enzh.documents.api.parse`, with the document
limits of :mod:`enzh.documents.limits`), the same way the route does, on a worker thread; the file itself is
bounded by the body limit.
"""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

from starlette.datastructures import UploadFile

from enzh.documents.api import parse
from enzh.documents.errors import DocumentError
from enzh.documents.formats import EXTENSIONS, PDF_REFUSAL, detect_format, get_format
from enzh.documents.options import DocumentOptions
from enzh.runtime.router import base_language
from enzh.serve.downloads import safe_name
from enzh.serve.errors import LibreError

# How a file's source language reads it: the documents take en or zh (any other is read as English).
SOURCES = ("en", "zh")


@cache
def supported_formats() -> dict[str, str]:
    """Extension -> format name, for the formats this installation can read (docx and md need their extra)."""
    found = {}
    for extension, format in EXTENSIONS.items():
        try:
            get_format(format)
        except DocumentError:
            continue
        found[extension] = format
    return found


def file_format(name: str) -> str:
    """The format of a file called ``name``; a 400 (LibreTranslate's words) for one this server cannot read."""
    try:
        format = detect_format(name)
    except DocumentError:
        format = ""
    if format not in supported_formats().values():
        pdf = f"; {PDF_REFUSAL}" if name.lower().endswith(".pdf") else ""
        raise LibreError(400, f"Invalid request: file format not supported{pdf}")
    return format


def document_source(language: str) -> str:
    """A document's language as :class:`DocumentOptions` takes it (en or zh; any other is read as English)."""
    return "zh" if base_language(language) == "zh" else "en"


def text_chars(
    data: bytes, format: str, name: str, source: str, kept: dict[Any, Any] | None = None, target: str | None = None
) -> int:
    """The characters of the blocks a document's reader gives to translate from ``source`` (a language code, or
    ``auto``: the larger of the English and the Chinese reading, one of which is translated). Each reading is
    put in ``kept`` under its :class:`DocumentOptions`, for the route to translate (``target`` too: po and xliff
    read their plural forms and languages from it)."""
    sources = SOURCES if source == "auto" else (document_source(source),)
    counts = []
    for language in sources:
        options = DocumentOptions(format=format, source=language, target=target)
        parsed = parse(data, options, name)
        if kept is not None:
            kept[options] = parsed
        counts.append(sum(len(block.text) for block in parsed.units.blocks))
    return max(counts)


async def upload_chars(
    upload: UploadFile, source: str, kept: dict[Any, Any] | None = None, target: str | None = None
) -> int:
    """The characters :func:`text_chars` counts in an uploaded file (its bytes when it cannot be read: the
    route refuses it then); its readings go in ``kept``; the file is left at its start for the route."""
    data = await upload.read()
    await upload.seek(0)
    try:
        format = file_format(safe_name(upload.filename or "", "translated"))
    except LibreError:
        return len(data)  # refused by the route as well
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(None, text_chars, data, format, "the file", source, kept, target)
    except DocumentError:
        return len(data)
