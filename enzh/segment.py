"""Splitting text that is too long for the model into parts that are each translated."""

from __future__ import annotations

import re

# A sentence ends at . ! ? ; or … (optionally followed by one closing quote or bracket) and whitespace.
_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?;…])|(?<=[.!?;…][\"'”’)\]]))\s+")


def split_sentences(text: str) -> list[str]:
    """English sentence split on end punctuation and newlines; whitespace-only parts are dropped."""
    return [s.strip() for line in text.splitlines() for s in _SENTENCE_BREAK.split(line) if s.strip()]


def clean_text(text: str) -> str:
    """Make any Python str encodable: lone surrogates (invalid in UTF-8) become U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# Scripts written without spaces between sentences: CJK punctuation, kana, Han, full-width forms.
_NO_SPACE = re.compile("[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def join_parts(texts: list[str]) -> str:
    """Join the translations of consecutive parts of one text: nothing between them where either side is
    Chinese or Japanese (no spaces between sentences there), one space otherwise (e.g. zh->en, en->de)."""
    out = ""
    for text in texts:
        if not text:
            continue
        if out and not (_NO_SPACE.match(out[-1]) or _NO_SPACE.match(text[0])):
            out += " "
        out += text
    return out
