"""The normalizer of NLLB and mBART-50: extended grapheme clusters (UAX #29), SentencePiece's precompiled
charsmap applied as the ``tokenizers`` library's ``Precompiled`` normalizer applies it, then runs of spaces
collapsed to one."""

from __future__ import annotations

import array
import functools
import re
import sys
import unicodedata
from collections.abc import Iterator

# Grapheme_Cluster_Break classes (UAX #29), as far as the normalizer below needs them.
_OTHER, _CR, _LF, _CONTROL, _EXTEND, _ZWJ, _RI, _PREPEND, _SPACING, _L, _V, _T, _LV, _LVT = range(14)


def _code_points(spec: str) -> frozenset[int]:
    """Code points written as hex numbers and ranges: "0600-0605 06DD"."""
    out: set[int] = set()
    for item in spec.split():
        low, _, high = item.partition("-")
        out.update(range(int(low, 16), int(high or low, 16) + 1))
    return frozenset(out)


_OTHER_GRAPHEME_EXTEND = _code_points(  # PropList.txt Other_Grapheme_Extend (U+200C ZWNJ among them)
    "09BE 09D7 0B3E 0B57 0BBE 0BD7 0CC2 0CD5-0CD6 0D3E 0D57 0DCF 0DDF 1B35 200C 302E-302F FF9E-FF9F 1133E 11357 "
    "114B0 114BD 115AF 11930 1D165 1D16E-1D172"
)
_NOT_SPACING_MARK = _code_points(  # UAX #29: Spacing_Mark characters that are not SpacingMark
    "102B 102C 1038 1062-1064 1067-106D 1083 1087-108C 108F 109A-109C 1A61 1A63 1A64 AA7B AA7D 11720 11721"
)
_PREPEND_CHARS = _code_points(  # Prepended_Concatenation_Mark and the InSC prefixed / repha consonants
    "0600-0605 06DD 070F 0890-0891 08E2 0D4E 110BD 110CD 111C2-111C3 1193F 11941 11A3A 11A84-11A89 11D46 11F02"
)


@functools.lru_cache(maxsize=1 << 16)
def _grapheme_class(ch: str) -> int:
    cp = ord(ch)
    if cp < 0x80:
        if cp == 0x0D:
            return _CR
        if cp == 0x0A:
            return _LF
        return _CONTROL if cp < 0x20 or cp == 0x7F else _OTHER
    if cp == 0x200D:
        return _ZWJ
    if cp in _PREPEND_CHARS:
        return _PREPEND
    if 0x1F1E6 <= cp <= 0x1F1FF:
        return _RI
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return _L
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return _V
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return _T
    if 0xAC00 <= cp <= 0xD7A3:
        return _LV if (cp - 0xAC00) % 28 == 0 else _LVT
    if cp in _OTHER_GRAPHEME_EXTEND or 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F:
        return _EXTEND
    category = unicodedata.category(ch)
    if category in ("Mn", "Me"):
        return _EXTEND
    if category == "Mc" or cp in (0x0E33, 0x0EB3):
        return _OTHER if cp in _NOT_SPACING_MARK else _SPACING
    if category in ("Cc", "Cf", "Zl", "Zp", "Cs"):
        return _CONTROL
    if category == "Cn" and (
        0x2060 <= cp <= 0x206F or 0xFFF0 <= cp <= 0xFFF8 or 0xE0000 <= cp <= 0xE0FFF or 0x1BCA0 <= cp <= 0x1BCA3
    ):
        return _CONTROL  # unassigned default-ignorable code points
    return _OTHER


def _joins(prev: int, cur: int, regional: int) -> bool:
    """No grapheme boundary between a character of class ``prev`` and one of class ``cur`` (rules GB3-GB13;
    ``regional``: regional indicators right before the boundary). Not implemented: GB9c (Indic conjuncts) and GB11
    (emoji ZWJ sequences): both only join characters of 2+ bytes into clusters of 6+ bytes, which the normalizer
    handles character by character either way (see _Charsmap.normalize)."""
    if prev == _CR:
        return cur == _LF
    if prev in (_CONTROL, _LF) or cur in (_CONTROL, _CR, _LF):
        return False
    if cur in (_EXTEND, _ZWJ, _SPACING) or prev == _PREPEND:
        return True
    if prev == _L:
        return cur in (_L, _V, _LV, _LVT)
    if prev in (_LV, _V):
        return cur in (_V, _T)
    if prev in (_LVT, _T):
        return cur == _T
    return prev == _RI and cur == _RI and regional % 2 == 1


def _graphemes(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each extended grapheme cluster of ``text``."""
    start = 0
    prev = _grapheme_class(text[0])
    regional = 1 if prev == _RI else 0
    for k in range(1, len(text)):
        cur = _grapheme_class(text[k])
        if not _joins(prev, cur, regional):
            yield start, k
            start = k
        regional = regional + 1 if cur == _RI else 0
        prev = cur
    yield start, len(text)


class _Charsmap:
    """SentencePiece's precompiled normalization rules (a darts-clone double array over UTF-8 keys, then a pool
    of NUL-terminated replacements), applied as the ``tokenizers`` library's ``Precompiled`` normalizer does.

    quirk: that normalizer is not SentencePiece's (longest match anywhere): it walks grapheme clusters; a cluster
    under 6 UTF-8 bytes whose SHORTEST matching prefix is a rule is replaced WHOLE by that rule's output (so
    "Ａ" + U+0301 becomes "A", dropping the accent, and "\\r\\n" becomes one space), and every other cluster is
    normalized character by character (so "e" + three U+0301 stays decomposed, "ｶﾞ" becomes "カ" + U+3099).
    """

    def __init__(self, blob: bytes) -> None:
        if len(blob) < 4:
            raise ValueError("precompiled_charsmap is too short")
        size = int.from_bytes(blob[:4], "little")
        if size % 4 or 4 + size > len(blob):
            raise ValueError(f"precompiled_charsmap: trie size {size} does not fit the {len(blob)} bytes")
        units = array.array("I" if array.array("I").itemsize == 4 else "L", blob[4 : 4 + size])
        if sys.byteorder == "big":
            units.byteswap()
        self._units = units
        self._pool = blob[4 + size :]
        self._chars: dict[str, str] = {}  # character -> its normalization
        # printable ASCII has no rule in SentencePiece's standard rule sets: such text is left alone, fast
        self._ascii_identity = all(self._first_value(bytes([c])) is None for c in range(0x20, 0x7F))

    def _first_value(self, key: bytes) -> int | None:
        """Value of the shortest rule that is a prefix of ``key`` (darts-clone commonPrefixSearch, first hit)."""
        units = self._units
        try:
            unit = units[0]
            pos = (unit >> 10) << ((unit & 0x200) >> 6)
            for c in key:
                if c == 0:  # quirk (tokenizers): the search stops at a NUL byte
                    return None
                pos ^= c
                unit = units[pos]
                if (unit & 0x800000FF) != c:
                    return None
                pos ^= (unit >> 10) << ((unit & 0x200) >> 6)
                if (unit >> 8) & 1:
                    return int(units[pos] & 0x7FFFFFFF)
        except IndexError:
            return None
        return None

    def _replacement(self, value: int) -> str:
        end = self._pool.find(b"\0", value)
        return self._pool[value : end if end >= 0 else len(self._pool)].decode("utf-8", "replace")

    def _char(self, ch: str) -> str:
        out = self._chars.get(ch)
        if out is None:
            value = self._first_value(ch.encode("utf-8"))
            out = ch if value is None else self._replacement(value)
            if len(self._chars) < 1 << 16:
                self._chars[ch] = out
        return out

    def normalize(self, text: str) -> str:
        if not text or (self._ascii_identity and text.isascii() and _ASCII_CONTROL.search(text) is None):
            return text
        out: list[str] = []
        char = self._char
        for start, end in _graphemes(text):
            if end - start == 1:
                out.append(char(text[start]))
                continue
            cluster = text[start:end]
            raw = cluster.encode("utf-8")
            if len(raw) < 6:
                value = self._first_value(raw)
                if value is not None:
                    out.append(self._replacement(value))
                    continue
            out.extend(char(ch) for ch in cluster)
        return "".join(out)


_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SPACE_RUNS = re.compile(" {2,}")


class Normalizer:
    """The normalizer transformers gives NLLB / mBART-50: Precompiled(charsmap), then runs of spaces -> one."""

    def __init__(self, charsmap: bytes | None, collapse_spaces: bool) -> None:
        self._charsmap = _Charsmap(charsmap) if charsmap else None
        self._collapse = collapse_spaces

    def __call__(self, text: str) -> str:
        if self._charsmap is not None:
            text = self._charsmap.normalize(text)
        if self._collapse and "  " in text:
            text = _SPACE_RUNS.sub(" ", text)
        return text
