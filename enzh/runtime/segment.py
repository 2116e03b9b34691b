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
