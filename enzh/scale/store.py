"""Finished shards on disk, next to the output: ``OUTPUT.enzh-shards/`` holds ``manifest.json`` and one file per
finished shard (``000042.out``), each written whole (a temporary file, fsynced, renamed, the directory fsynced).

The driver writes them as results arrive, so a driver killed at any point leaves only whole shard files; a
job started again with the same input, options, model and shard size finds the same manifest and translates
only the missing shards. A manifest made for anything else is started over. When every shard is there, the
output is assembled from them in order (streamed into a temporary file, renamed over OUTPUT) and the directory
is removed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path

from enzh.documents.files import atomic_file, write_atomic
from enzh.scale.errors import ScaleError

logger = logging.getLogger("enzh")

SUFFIX = ".enzh-shards"
VERSION = 1
_SHARD_FILE = re.compile(r"(\d{6,})\.out")


class ShardStore:
    """The shard directory of one output file."""

    def __init__(self, directory: Path, count: int) -> None:
        self.directory = directory
        self.count = count

    @classmethod
    def open(cls, output: Path, key: str, count: int) -> ShardStore:
        """The store for ``output``, kept from an earlier run made with the same ``key``, else new."""
        directory = output.with_name(output.name + SUFFIX)
        manifest = {"enzh-shards": VERSION, "key": key, "shards": count}
        if directory.is_dir() and _read_manifest(directory) != manifest:
            logger.info("%s was made for another input, options, model or shard size: starting over", directory)
            shutil.rmtree(directory)
        elif directory.exists() and not directory.is_dir():
            directory.unlink()
        directory.mkdir(exist_ok=True)
        if not (directory / "manifest.json").is_file():
            write_atomic(directory / "manifest.json", json.dumps(manifest, indent=1).encode() + b"\n")
            _sync_directory(directory)
        for stray in directory.glob(".*.enzh-tmp"):  # a write cut short by a kill
            stray.unlink(missing_ok=True)
        return cls(directory, count)

    def path(self, index: int) -> Path:
        return self.directory / f"{index:06d}.out"

    def done(self) -> set[int]:
        """The indices of the shards already written."""
        found = (_SHARD_FILE.fullmatch(p.name) for p in self.directory.iterdir())
        return {int(m.group(1)) for m in found if m and int(m.group(1)) < self.count}

    def write(self, index: int, data: bytes) -> None:
        """Write shard ``index`` durably (whole or not at all)."""
        write_atomic(self.path(index), data)
        _sync_directory(self.directory)

    def assemble(self, output: Path) -> int:
        """Write ``output`` from every shard, in order, atomically; returns its size in bytes."""
        missing = sorted(set(range(self.count)) - self.done())
        if missing:
            raise ScaleError(f"shards {missing[:5]} are missing from {self.directory}; run the job again")
        with atomic_file(output) as file:
            for index in range(self.count):
                with open(self.path(index), "rb") as shard:
                    shutil.copyfileobj(shard, file)
            size = file.tell()
        _sync_directory(output.parent)
        return size

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _read_manifest(directory: Path) -> object:
    try:
        return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _sync_directory(directory: Path) -> None:
    """fsync a directory, so that a rename in it survives a crash of the machine."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
