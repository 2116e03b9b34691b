"""Added tokens (the special tokens, language codes and whatever else the files add to the vocabulary): which
ones transformers registers for a directory, and :class:`Matcher`, which finds them in a text as the
``tokenizers`` library does before the normalizer and the model see it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def token_content(value: Any) -> str | None:
    """A token as tokenizer_config.json stores it: a string, or an AddedToken object with its ``content``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def literal_regex(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """A regex matching any of ``patterns``, leftmost-longest (the added-token matchers of both transformers
    backends); built as a trie, so one text scan costs little however many tokens there are."""
    trie: dict[str, Any] = {}
    for pattern in patterns:
        if not pattern:
            continue
        node = trie
        for ch in pattern:
            node = node.setdefault(ch, {})
        node[""] = True
    if not trie:
        return None

    def build(node: dict[str, Any]) -> str:
        children = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not children:
            return ""
        body = children[0] if len(children) == 1 else "(?:" + "|".join(children) + ")"
        if "" in node:  # a token ends here: the longer ones are tried first (greedy), this one on backtracking
            return "(?:" + body + ")?"
        return body

    return re.compile(build(trie))


@dataclass(frozen=True)
class AddedToken:
    id: int
    content: str
    special: bool = True
    normalized: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False

    @classmethod
    def parse(cls, idx: Any, data: Any, where: str) -> AddedToken:
        content = token_content(data)
        try:
            token_id = int(idx)
        except (TypeError, ValueError):
            token_id = -1
        if content is None or token_id < 0:
            raise ValueError(f"{where}: malformed added token {idx!r}: {data!r}")
        flags = data if isinstance(data, dict) else {}
        return cls(
            token_id,
            content,
            special=bool(flags.get("special", True)),
            normalized=bool(flags.get("normalized", not flags.get("special", True))),
            lstrip=bool(flags.get("lstrip", False)),
            rstrip=bool(flags.get("rstrip", False)),
            single_word=bool(flags.get("single_word", False)),
        )


def _is_whitespace(ch: str) -> bool:
    # Rust's char::is_whitespace (Unicode White_Space); Python's isspace() adds U+001C..U+001F
    return ch.isspace() and not "\x1c" <= ch <= "\x1f"


_WORD_CHAR = re.compile(r"\w")


class Matcher:
    """Finds added tokens in a text like tokenizers' AddedVocabulary.find_matches (leftmost-longest, then the
    token's single_word / lstrip / rstrip options)."""

    def __init__(self, tokens: dict[str, AddedToken]) -> None:
        self._tokens = tokens
        self._regex = literal_regex(list(tokens))

    def split(self, text: str) -> list[tuple[str, AddedToken | None]]:
        regex = self._regex
        if regex is None or not text:
            return [(text, None)]
        out: list[tuple[str, AddedToken | None]] = []
        offset = 0
        for m in regex.finditer(text):
            token = self._tokens[m.group()]
            start, stop = m.span()
            if token.single_word and (
                (start > 0 and _WORD_CHAR.match(text[start - 1])) or (stop < len(text) and _WORD_CHAR.match(text[stop]))
            ):
                continue
            if token.lstrip:
                while start > 0 and _is_whitespace(text[start - 1]):
                    start -= 1
                start = max(start, offset)  # spaces a previous match already took stay with it
            if token.rstrip:
                while stop < len(text) and _is_whitespace(text[stop]):
                    stop += 1
            if offset < start:
                out.append((text[offset:start], None))
            out.append((text[start:stop], token))
            offset = stop
        if offset != len(text):
            out.append((text[offset:], None))
        return out


def added_from_files(config: dict[str, Any], tokenizer_json: dict[str, Any] | None, where: str) -> list[AddedToken]:
    """The added tokens transformers registers when it loads a directory: tokenizer_config.json's
    ``added_tokens_decoder`` when present, else tokenizer.json's ``added_tokens``."""
    decoder = config.get("added_tokens_decoder")
    if isinstance(decoder, dict) and decoder:
        return [AddedToken.parse(idx, data, f"{where} tokenizer_config.json") for idx, data in decoder.items()]
    if tokenizer_json is not None:
        entries = tokenizer_json.get("added_tokens") or []
        if not isinstance(entries, list):
            raise ValueError(f"{where} tokenizer.json: added_tokens must be a list")
        return [AddedToken.parse(e.get("id"), e, f"{where} tokenizer.json") for e in entries if isinstance(e, dict)]
    return []


def ensure_added(
    added: list[AddedToken], vocab: dict[str, int], tokens: Sequence[str | None], **flags: bool
) -> list[AddedToken]:
    """transformers registers the named special tokens and the language codes as special added tokens when the
    files do not list them; those already in the model vocabulary keep their id (the others would get new ids at
    the end: not reproduced, such files do not occur)."""
    present = {t.content for t in added}
    out = list(added)
    for token in tokens:
        if token and token not in present and token in vocab:
            out.append(AddedToken(vocab[token], token, **flags))
            present.add(token)
    return out
