"""Files translated by LibreTranslate's ``/translate_file``, kept for download under ``/download_file/<id>/<name>``.

Each file lives in a directory of its own, named by a random id (``<root>/<id>/<name>``), and is downloadable
for ``ttl_s`` seconds after it was stored; expired files are removed whenever a file is stored or asked for, so
no timer is needed. ``root`` is ``ServeOptions.files_dir`` (shared by the worker processes of one server), or
a temporary directory of this process, removed when the process exits.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
import time
import unicodedata
from pathlib import Path, PurePosixPath, PureWindowsPath

_ID = re.compile(r"[0-9a-f]{32}")
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')
# Removed from names: controls (Cc), format characters (Cf: the bidi overrides and isolates U+202A-202E and
# U+2066-2069, zero-width ones, U+FEFF), lone surrogates (Cs) and the line and paragraph separators (Zl, Zp).
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
MAX_NAME = 200  # characters of a stored file name
# On every download answer: browsers must not guess another type than the one sent (HTML from a .txt).
DOWNLOAD_HEADERS = {"X-Content-Type-Options": "nosniff"}


def safe_name(filename: str, default: str) -> str:
    """The last component of an uploaded file's name, without characters a file system or a header would mind
    (replaced by ``_``) and without control, format and bidi characters (removed: U+202E would show
    ``evil<U+202E>txt.exe`` as ``evilexe.txt``); ``default`` when nothing is left."""
    name = PureWindowsPath(PurePosixPath(filename).name).name  # drop any folder, POSIX or Windows style
    name = "".join(c for c in unicodedata.normalize("NFC", name) if unicodedata.category(c) not in _INVISIBLE)
    name = _UNSAFE.sub("_", name).strip(" .")
    if len(name) > MAX_NAME:
        stem, dot, suffix = name.rpartition(".")
        name = (stem[: MAX_NAME - len(suffix) - 1] + dot + suffix) if dot and len(suffix) < 16 else name[:MAX_NAME]
    return name or default


class FileStore:
    """Stores translated files for ``ttl_s`` seconds; thread-safe across processes sharing ``root``."""

    def __init__(self, root: str | os.PathLike[str] | None, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._temporary: tempfile.TemporaryDirectory[str] | None = None
        self._root = Path(root) if root is not None else None

    @property
    def root(self) -> Path:
        """The directory of the files (a temporary one is made on first use when none was given)."""
        if self._root is None:
            self._temporary = tempfile.TemporaryDirectory(prefix="enzh-files-")
            self._root = Path(self._temporary.name)
        self._root.mkdir(parents=True, exist_ok=True)
        return self._root

    def put(self, name: str, data: bytes) -> str:
        """Store ``data`` as ``name`` (already :func:`safe_name`); returns its id."""
        self.sweep()
        file_id = secrets.token_hex(16)
        folder = self.root / file_id
        folder.mkdir()
        partial = folder / ".partial"
        partial.write_bytes(data)
        partial.replace(folder / name)  # a download never sees half a file
        return file_id

    def get(self, file_id: str, name: str) -> Path | None:
        """The stored file ``name`` of ``file_id``, or None (unknown, expired, or another name)."""
        if not _ID.fullmatch(file_id) or name != safe_name(name, "") or name.startswith("."):
            return None
        folder = self.root / file_id
        path = folder / name
        if not path.is_file():
            return None
        if self._expired(folder):
            self._remove(folder)
            return None
        return path

    def sweep(self) -> None:
        """Remove every expired file."""
        with contextlib.suppress(OSError):
            for folder in self.root.iterdir():
                if _ID.fullmatch(folder.name) and self._expired(folder):
                    self._remove(folder)

    def close(self) -> None:
        """Remove the temporary directory, if this store made one."""
        if self._temporary is not None:
            self._temporary.cleanup()
            self._temporary = None
            self._root = None

    def _expired(self, folder: Path) -> bool:
        try:
            return time.time() - folder.stat().st_mtime > self.ttl_s
        except OSError:
            return True

    @staticmethod
    def _remove(folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
