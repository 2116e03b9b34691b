"""The API-key store: one SQLite file (stdlib ``sqlite3``) holding SHA-256 hashes of the keys, never the keys.

``enzh keys add|list|remove`` (:mod:`enzh.cli.keys`) manage it; ``enzh serve --api-keys FILE`` reads it on every
request, so a key added or removed takes effect at once, without a restart. A key is 32 random bytes
(``secrets.token_urlsafe``), so an unsalted hash is enough: it cannot be guessed back. Each key may have its own
per-minute request and character limits; NULL means the server's defaults (``--req-limit``, ``--char-limit``),
0 means no limit. Imports nothing of the web stack.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from enzh.runtime.errors import EnzhError, OptionsError

SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY,  -- hex SHA-256 of the key
    name TEXT NOT NULL DEFAULT '',
    req_limit INTEGER,  -- requests per minute; NULL: the server's default; 0: no limit
    char_limit INTEGER,  -- characters per minute; NULL: the server's default; 0: no limit
    created TEXT NOT NULL  -- UTC, ISO 8601
)
"""
ID_CHARS = 12  # how much of the hash `enzh keys list` shows, and `enzh keys remove` accepts, as a key's id


class KeyStoreError(EnzhError):
    """A key that is not in the store, or an id that names no key or several."""


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def new_key() -> str:
    """32 random bytes, URL-safe base64; never with a leading '-', which a shell command would take for an option."""
    while (key := secrets.token_urlsafe(32)).startswith("-"):
        pass
    return key


@dataclass(frozen=True)
class KeyRecord:
    key_hash: str
    name: str
    req_limit: int | None  # None: the server's default
    char_limit: int | None
    created: str

    @property
    def key_id(self) -> str:
        return self.key_hash[:ID_CHARS]


class KeyStore:
    """One SQLite file. ``KeyStore(path)`` opens an existing store (the server); ``create=True`` makes one if
    missing (``enzh keys add``), readable by its owner only. Thread-safe (one connection behind a lock)."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = False) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            if not create:
                raise OptionsError(f"no API key store at {self.path}: create one with `enzh keys add --db {path}`")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout = 2000")
            if create:
                self._db.execute("PRAGMA journal_mode = WAL")  # the CLI writes while the server reads
                self._db.execute(SCHEMA)
            self._db.execute("SELECT 1 FROM api_keys LIMIT 1")
        except sqlite3.DatabaseError as exc:
            raise OptionsError(f"{self.path} is not an enzh API key store: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> KeyStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[sqlite3.Cursor]:
        with self._lock:
            cursor = self._db.cursor()
            try:
                yield cursor
            finally:
                cursor.close()

    def add(
        self, key: str | None = None, *, name: str = "", req_limit: int | None = None, char_limit: int | None = None
    ) -> str:
        """Store ``key`` (a new random one if None) and return it; the only time the key is seen in full.
        Adding a key that is already there replaces its name and limits."""
        for label, value in (("req_limit", req_limit), ("char_limit", char_limit)):
            if value is not None and value < 0:
                raise OptionsError(f"{label} must be >= 0 (0 = no limit), got {value}")
        key = new_key() if key is None else key
        if not key.strip():
            raise OptionsError("an API key may not be empty")
        created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        with self._cursor() as cursor:
            cursor.execute(
                "INSERT OR REPLACE INTO api_keys (key_hash, name, req_limit, char_limit, created) VALUES (?,?,?,?,?)",
                (hash_key(key), name, req_limit, char_limit, created),
            )
        return key

    def lookup(self, key: str) -> KeyRecord | None:
        """The record of ``key``, or None when it is not in the store."""
        with self._cursor() as cursor:
            row = cursor.execute("SELECT * FROM api_keys WHERE key_hash = ?", (hash_key(key),)).fetchone()
        return KeyRecord(*row) if row else None

    def records(self) -> list[KeyRecord]:
        with self._cursor() as cursor:
            rows = cursor.execute("SELECT * FROM api_keys ORDER BY created, name").fetchall()
        return [KeyRecord(*row) for row in rows]

    def remove(self, key_or_id: str) -> KeyRecord:
        """Remove the key given in full, or by the id ``enzh keys list`` shows (a prefix of its hash)."""
        record = self.lookup(key_or_id) or self._by_id(key_or_id)
        with self._cursor() as cursor:
            cursor.execute("DELETE FROM api_keys WHERE key_hash = ?", (record.key_hash,))
        return record

    def remove_named(self, name: str) -> list[KeyRecord]:
        records = [r for r in self.records() if r.name == name]
        with self._cursor() as cursor:
            cursor.execute("DELETE FROM api_keys WHERE name = ?", (name,))
        return records

    def _by_id(self, key_id: str) -> KeyRecord:
        prefix = key_id.strip().lower()
        found = [r for r in self.records() if len(prefix) >= 6 and r.key_hash.startswith(prefix)]
        if len(found) != 1:
            raise KeyStoreError("no such key" if not found else f"that id names {len(found)} keys: give more of it")
        return found[0]
