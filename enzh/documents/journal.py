"""The resume journal of a file translation: translated sentences, appended in chunks, next to the output.

The first line names what it is for (a hash of the input bytes, the options and the model); each further line
is one chunk: ``{"src": [...], "out": [...]}``, flushed and fsynced before the next chunk starts. A run killed
at any point leaves whole chunks and at most one torn last line, which is dropped on reopening. A journal made
for other input or options is started over.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import BinaryIO

logger = logging.getLogger("enzh")

VERSION = 1


class Journal:
    """Translated sentences of earlier attempts (``known``) and the file new chunks are appended to."""

    def __init__(self, path: Path, known: dict[str, str], file: BinaryIO, reused: int) -> None:
        self.path = path
        self.known = known
        self.reused = reused  # sentences found in the journal when it was opened
        self._file = file

    @classmethod
    def open(cls, path: Path, key: str) -> Journal:
        header = json.dumps({"enzh-journal": VERSION, "key": key}).encode() + b"\n"
        known: dict[str, str] = {}
        keep = 0
        if path.is_file():
            data = path.read_bytes()
            if data.startswith(header):
                keep = len(header)
                for line in data[keep:].split(b"\n")[:-1]:  # the part after the last newline is torn
                    try:
                        chunk = json.loads(line)
                        pairs = dict(zip(chunk["src"], chunk["out"], strict=True))
                    except (ValueError, KeyError, TypeError):
                        break
                    known.update(pairs)
                    keep += len(line) + 1
                logger.info("resuming from %s: %d sentences already translated", path, len(known))
            else:
                logger.info("%s was made for another input or options: starting over", path)
        file = open(path, "r+b" if keep else "wb")  # noqa: SIM115 (closed by close())
        if keep:
            file.truncate(keep)
            file.seek(keep)
        else:
            file.write(header)
            _sync(file)
        return cls(path, known, file, len(known))

    def record(self, sources: list[str], outputs: list[str]) -> None:
        """Append one translated chunk, durably."""
        line = json.dumps({"src": sources, "out": outputs}, ensure_ascii=False).encode() + b"\n"
        self._file.write(line)
        _sync(self._file)
        self.known.update(zip(sources, outputs, strict=True))

    def close(self) -> None:
        self._file.close()

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


def _sync(file: BinaryIO) -> None:
    file.flush()
    os.fsync(file.fileno())
