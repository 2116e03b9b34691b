"""Translating a file: checked paths, a progress bar, a resume journal and an atomic write of the output.

``prepare`` does everything that can fail on bad input (paths, format, decoding, parsing) before a model is
loaded; ``finish`` translates and writes. The output appears only when complete: it is written to a temporary
file in its directory and renamed over OUTPUT. Translated sentences are journaled in chunks next to it
(``OUTPUT.enzh-journal``), so a run that is killed and started again with the same input and options reuses
them and writes exactly the bytes of an uninterrupted run; the journal is removed on success.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from enzh.documents.api import Parsed, detect_language, parse, render
from enzh.documents.errors import DocumentError
from enzh.documents.formats import resolve_format
from enzh.documents.journal import Journal
from enzh.documents.options import DocumentOptions
from enzh.documents.sentences import CHUNK, SentenceEngine
from enzh.runtime.glossary import Glossary

if TYPE_CHECKING:
    from enzh.runtime.engine import Engine

logger = logging.getLogger("enzh")

JOURNAL_SUFFIX = ".enzh-journal"


@dataclass
class Prepared:
    """A checked, parsed input file and where its translation goes."""

    input: Path
    output: Path
    options: DocumentOptions
    data: bytes
    parsed: Parsed

    @property
    def journal_path(self) -> Path:
        return self.output.with_name(self.output.name + JOURNAL_SUFFIX)


def prepare(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    format: str = "auto",
    field: str | None = None,
    beam_size: int | None = None,
    target: str | None = None,
    convert: str | None = None,
    source: str = "en",
    fuzzy: bool = True,
    retranslate: bool = False,
    glossary: Glossary | None = None,
    sheet_names: bool = False,
) -> Prepared:
    """Check the paths and options and parse the input; every problem is one :class:`DocumentError`.

    ``source``: the document's language, ``en`` or ``zh``, or ``auto``: told from its text (:func:`detect_language`;
    a document without letters is taken as English, which keeps it as it is)."""
    path, destination, language = Path(input), Path(output), source
    if not path.exists():
        raise DocumentError(f"input file {str(path)!r} does not exist")
    if not path.is_file():
        raise DocumentError(f"input {str(path)!r} is not a file")
    if destination.exists() and destination.is_dir():
        raise DocumentError(f"output {str(destination)!r} is a directory; name the file to write")
    if not destination.parent.is_dir():
        raise DocumentError(f"the directory of output {str(destination)!r} does not exist")
    if path.resolve() == destination.resolve() or (destination.exists() and destination.samefile(path)):
        raise DocumentError("OUTPUT is INPUT; write the translation to another file")
    options = DocumentOptions(
        format=resolve_format(format, path),
        field=field,
        beam_size=beam_size,
        target=target,
        convert=convert,
        source="en" if language == "auto" else language,
        fuzzy=fuzzy,
        retranslate=retranslate,
        glossary=glossary,
        sheet_names=sheet_names,
    )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    if language == "auto":
        found = detect_language(data, options, name=str(path))
        options = dataclasses.replace(options, source=found or "en")
    return Prepared(path, destination, options, data, parse(data, options, name=str(path)))


def finish(
    prepared: Prepared,
    translator: Engine,
    *,
    progress: bool = True,
    resume: bool = True,
    report: str | os.PathLike[str] | None = None,
) -> int:
    """Translate and write OUTPUT atomically; returns how many sentences the model translated in this run.
    ``report``: also write the JSON report of the lowest-scoring units there (:mod:`enzh.documents.report`)."""
    translator.resolve_target(prepared.options.target)  # a bad target fails before a journal exists
    journal = Journal.open(prepared.journal_path, journal_key(prepared, translator)) if resume else None
    try:
        engine = SentenceEngine(
            translator, prepared.options, journal=journal, progress=progress, chunk=CHUNK, scores=report is not None
        )
        result = render(prepared.parsed, engine, prepared.options)
        write_atomic(prepared.output, result if isinstance(result, bytes) else result.encode("utf-8"))
        if report is not None:
            from enzh.documents.report import build_report

            found = build_report(
                prepared.parsed, engine, prepared.options, input=str(prepared.input), model=translator.info.label
            )
            text = json.dumps(found, ensure_ascii=False, indent=2) + "\n"
            write_atomic(Path(report), text.encode("utf-8"))
    finally:
        if journal is not None:
            journal.close()
    if journal is not None:
        journal.remove()
    logger.info(
        "wrote %s (%d sentences translated, %d from the journal)",
        prepared.output,
        engine.translated,
        journal.reused if journal else 0,
    )
    return engine.translated


def translate_file(
    translator: Engine, input: str | os.PathLike[str], output: str | os.PathLike[str], **options: object
) -> int:
    """:func:`prepare` then :func:`finish` (``options``: those of :func:`prepare`, plus ``progress``)."""
    progress = bool(options.pop("progress", True))
    return finish(prepare(input, output, **options), translator, progress=progress)  # type: ignore[arg-type]


def journal_key(prepared: Prepared, translator: Engine) -> str:
    """What a journal is valid for: the input bytes, the options, the model and the chunking."""
    return hashlib.sha256(
        json.dumps(
            {
                "input": hashlib.sha256(prepared.data).hexdigest(),
                "options": prepared.options.key(),
                "model": translator.info.fingerprint,
                "chunk": CHUNK,
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file next to ``path``, fsync it, and rename it over ``path``."""
    with atomic_file(path) as file:
        file.write(data)


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to: a temporary file next to it, fsynced and renamed over
    ``path`` when the block ends, removed if it fails (``path`` is never half-written)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".enzh-tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
