"""Glossaries: source terms that must be translated with a fixed target term (issue 27, item 1).

A glossary is a file or a per-call mapping. The file is UTF-8 text, one entry per line::

    # comment lines and blank lines are skipped
    Tom<TAB>汤米
    Beijing<TAB>北平
    IT<TAB>信息技术<TAB>case-sensitive
    bio<TAB>生物<TAB>inside-words

``source<TAB>target``, optionally a third column of comma-separated flags:

* ``case-sensitive``: the source term matches only with the same case (default: case is ignored);
* ``inside-words``: the source term matches inside longer words too (default: whole words only; a source term
  that starts or ends with a character of a script written without spaces, such as Chinese, never needs a word
  boundary on that side).

:meth:`Glossary.match` finds the terms of one source sentence: every occurrence, the longest match winning
where two overlap (then the earliest). The search (:mod:`enzh.runtime.constrained`) then puts each matched
term's target into the translation exactly once per occurrence, where the model places it.

TBX is not read: no maintained, light library for it fits the runtime's dependencies (convert to TSV).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from enzh.runtime.errors import EnzhError

FLAGS = ("case-sensitive", "inside-words")
MAX_FILE_BYTES = 64 << 20  # a glossary file larger than this is refused (it is read whole)

# Characters of scripts written without spaces (Han, kana, hangul, CJK and full-width punctuation): no word
# boundary is needed next to them.
_NO_SPACE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]")


class GlossaryError(EnzhError, ValueError):
    """A glossary file or mapping is malformed, or a term cannot be produced by the model; the message names
    the file and line (or the entry) and the fix."""


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One glossary entry."""

    source: str
    target: str
    case_sensitive: bool = False
    inside_words: bool = False
    origin: str = ""  # where it was read: "file.tsv:3", or "glossary entry 'Tom'"

    def __post_init__(self) -> None:
        where = self.origin or f"glossary entry {self.source!r}"
        for name, value in (("source", self.source), ("target", self.target)):
            if not isinstance(value, str):
                raise GlossaryError(f"{where}: the {name} term must be a string, got {type(value).__name__}")
            if not value.strip():
                raise GlossaryError(f"{where}: the {name} term is empty; write 'source<TAB>target'")
            if value != value.strip():
                raise GlossaryError(f"{where}: the {name} term {value!r} starts or ends with whitespace; remove it")
            if "\n" in value or "\r" in value:
                raise GlossaryError(f"{where}: the {name} term {value!r} spans lines; a term is one line")
        if not self.origin:
            object.__setattr__(self, "origin", where)

    @property
    def key(self) -> str:
        """What two entries must not share: the source term as it is matched (any run of spaces as one)."""
        words = " ".join(self.source.split())
        return words if self.case_sensitive else words.casefold()

    def pattern(self) -> re.Pattern[str]:
        """The regular expression finding this entry's source term (see the module docstring)."""
        body = r"\s+".join(re.escape(word) for word in self.source.split())  # any run of spaces between words
        if not self.inside_words:
            if _needs_boundary(self.source[0]):
                body = r"(?<!\w)" + body
            if _needs_boundary(self.source[-1]):
                body = body + r"(?!\w)"
        return re.compile(body, 0 if self.case_sensitive else re.IGNORECASE)


@functools.lru_cache(maxsize=1 << 16)
def _compiled(entry: Entry) -> re.Pattern[str]:
    """``entry.pattern()``, compiled once for the glossaries that share the entry (a server's glossary combined
    with each request's own)."""
    return entry.pattern()


def _needs_boundary(char: str) -> bool:
    return bool(re.match(r"\w", char)) and not _NO_SPACE.match(char)


@dataclass(frozen=True)
class Term:
    """A target term one source sentence needs, and how many times (its source terms' occurrences)."""

    target: str
    count: int
    origin: str  # the first entry that asked for it (for error messages)


@dataclass(frozen=True)
class Glossary:
    """Entries, each source term once (as matched: case folded unless case-sensitive)."""

    entries: tuple[Entry, ...]

    def __post_init__(self) -> None:
        seen: dict[str, Entry] = {}
        for entry in self.entries:
            if not isinstance(entry, Entry):
                raise GlossaryError(f"a glossary holds Entry objects, got {type(entry).__name__}")
            other = seen.get(entry.key)
            if other is not None:
                raise GlossaryError(
                    f"{entry.origin}: source term {entry.source!r} is already in the glossary at {other.origin}; "
                    "keep one entry per source term"
                )
            seen[entry.key] = entry
        object.__setattr__(self, "_patterns", tuple(_compiled(entry) for entry in self.entries))
        # A quick first test: an entry's first word, case folded, must be in the text's case-folded form for its
        # pattern to be tried (10,000 entries check a sentence in a few milliseconds).
        object.__setattr__(self, "_prefixes", tuple(entry.source.split()[0].casefold() for entry in self.entries))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str], *, origin: str = "glossary") -> Glossary:
        """A glossary from ``{"source": "target", ...}`` (default flags: case ignored, whole words)."""
        if not isinstance(mapping, Mapping):
            raise GlossaryError(
                f"a glossary must be a mapping of source term to target term, got {type(mapping).__name__}"
            )
        return cls(
            tuple(
                Entry(source=source, target=target, origin=f"{origin} entry {source!r}")
                for source, target in mapping.items()
            )
        )

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Glossary:
        """A glossary file (see the module docstring); :class:`GlossaryError` naming ``file:line`` when a line is
        malformed."""
        where = Path(path)
        try:
            size = where.stat().st_size
            if size > MAX_FILE_BYTES:
                raise GlossaryError(
                    f"glossary {where} has {size} bytes; at most {MAX_FILE_BYTES} are read (split it, or keep the "
                    "terms the texts need)"
                )
            data = where.read_bytes()
        except OSError as exc:
            raise GlossaryError(f"cannot read glossary {where}: {exc.strerror or exc}") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise GlossaryError(f"{where}:{line}: not UTF-8 text; save the glossary as UTF-8") from None
        return cls.parse(text, name=str(where))

    @classmethod
    def parse(cls, text: str, *, name: str = "glossary") -> Glossary:
        """A glossary from a file's text (``name``: how errors name the file)."""
        entries = []
        for number, line in enumerate(text.splitlines(), start=1):
            origin = f"{name}:{number}"
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            columns = line.split("\t")
            if len(columns) < 2:
                raise GlossaryError(f"{origin}: expected 'source<TAB>target[<TAB>flags]', got {line!r} (no tab)")
            if len(columns) > 3:
                raise GlossaryError(
                    f"{origin}: expected at most 3 tab-separated columns (source, target, flags), got {len(columns)}"
                )
            flags = [f.strip() for f in columns[2].split(",") if f.strip()] if len(columns) == 3 else []
            unknown = [f for f in flags if f not in FLAGS]
            if unknown:
                raise GlossaryError(f"{origin}: unknown flag {unknown[0]!r}; accepted: {', '.join(FLAGS)}")
            entries.append(
                Entry(
                    source=columns[0].strip(),
                    target=columns[1].strip(),
                    case_sensitive="case-sensitive" in flags,
                    inside_words="inside-words" in flags,
                    origin=origin,
                )
            )
        return cls(tuple(entries))

    def fingerprint(self) -> str:
        """Changes whenever the entries (terms, flags) do: what a journal of translations made with it keys on."""
        rows = [[e.source, e.target, e.case_sensitive, e.inside_words] for e in self.entries]
        return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def matches(self, text: str) -> list[tuple[int, int, Entry]]:
        """Every occurrence of a source term in ``text`` as (start, end, entry), in text order: where matches
        overlap, the longest wins (then the earliest, then the entry listed first)."""
        folded = text.casefold()
        found = [
            (m.start(), m.end(), index)
            for index, (prefix, pattern) in enumerate(zip(self._prefixes, self._patterns, strict=True))  # type: ignore[attr-defined]
            if prefix in folded
            for m in pattern.finditer(text)
            if m.end() > m.start()
        ]
        found.sort(key=lambda f: (f[0] - f[1], f[0], f[2]))
        taken: list[tuple[int, int, Entry]] = []
        for start, end, index in found:
            if all(end <= s or start >= e for s, e, _ in taken):
                taken.append((start, end, self.entries[index]))
        return sorted(taken, key=lambda t: t[0])

    def match(self, text: str) -> tuple[Term, ...]:
        """The target terms ``text`` needs, each with its count, in order of first occurrence (entries with the
        same target add up)."""
        counts: dict[str, int] = {}
        origins: dict[str, str] = {}
        for _, _, entry in self.matches(text):
            counts[entry.target] = counts.get(entry.target, 0) + 1
            origins.setdefault(entry.target, entry.origin)
        return tuple(Term(target, count, origins[target]) for target, count in counts.items())


def combine(base: Glossary | None, extra: Glossary | None) -> Glossary | None:
    """``base`` with ``extra``'s entries added, an entry of ``extra`` replacing one of ``base`` with the same source
    term (a server's glossary and a request's own); None when both are None."""
    if base is None or not base:
        return extra
    if extra is None or not extra:
        return base
    keys = {entry.key for entry in extra.entries}
    return Glossary(tuple(e for e in base.entries if e.key not in keys) + extra.entries)


def as_glossary(value: object) -> Glossary | None:
    """A caller's glossary: None, a :class:`Glossary`, a mapping of source to target, or a file path."""
    if value is None or isinstance(value, Glossary):
        return value
    if isinstance(value, Mapping):
        return Glossary.from_mapping(value)
    if isinstance(value, (str, os.PathLike)):
        return Glossary.read(value)
    raise GlossaryError(
        f"glossary must be a Glossary, a mapping of source term to target term or a file path, got "
        f"{type(value).__name__}"
    )


__all__ = ["FLAGS", "Entry", "Glossary", "GlossaryError", "Term", "as_glossary", "combine"]
