"""Segmentation: source text -> sentences (one model input each) -> translated text with the layout kept.

One stage for every entry point (Python API, CLI, HTTP, files). Lines are cut first, so a heading or a list
item without final punctuation stays a unit of its own; inside a line the sentence boundaries come from
nupunkt (an unsupervised Punkt splitter with a trained English model: abbreviations such as ``Mr.``, ``e.g.``,
``U.S.``, decimals, initials and ellipses are not boundaries). The split is lossless: every character of the
input is either in a sentence or in the separator after it, so the layout can be rebuilt exactly.
docs/segmentation.md has the table of hard cases and how the candidates did.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

_NEWLINE = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Latin letters (with accents): a piece without one is not English (Chinese, numbers, bullets) and is kept as is.
# A fast path; text outside ASCII is also checked by Unicode name after NFKC (full-width Ａ is A to the model).
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
# Han ideographs (the unified blocks and their extensions; NFKC maps the compatibility ones onto them): a piece
# without one is not Chinese, and a model from Chinese keeps it as it is.
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
# The letters that mark a piece as written in a model's source language: "latin" for English, "han" for Chinese;
# "any": every piece that is not blank (a model whose languages say nothing about what can be kept).
SCRIPTS = ("latin", "han", "any")
# The script of the model a document is being translated with (the format readers ask needs_translation without
# naming one): English unless set by reading().
_READING: ContextVar[str] = ContextVar("enzh_source_script", default="latin")


@contextmanager
def reading(script: str) -> Iterator[None]:
    """Within the block, :func:`needs_translation` and :func:`split_text` called without a script use ``script``
    (a document translated by a model from Chinese: its readers then pick the pieces with Han characters)."""
    if script not in SCRIPTS:
        raise ValueError(f"unknown script {script!r}; accepted: {', '.join(SCRIPTS)}")
    token = _READING.set(script)
    try:
        yield
    finally:
        _READING.reset(token)


# Characters after which Chinese needs no space: CJK ideographs, kana, hangul, CJK and full-width punctuation.
_WIDE_END = re.compile(
    r"[\u2018-\u201d\u2026\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]$"
)


@dataclass(frozen=True)
class Piece:
    """A sentence (stripped, may be empty) and the whitespace and line breaks that follow it in the input."""

    text: str
    separator: str


def needs_translation(text: str, script: str | None = None) -> bool:
    """True when ``text`` has a letter of ``script`` (:data:`SCRIPTS`; None: the one :func:`reading` set, Latin
    by default) once NFKC-normalised as the model's SentencePiece normalises it (so full-width ``Ａｂｃ`` counts as
    Latin): text without one is already in the target language (or has no words at all) and passes through."""
    script = script or _READING.get()
    if script == "any":
        return bool(text.strip())
    if script == "han":
        return _HAN.search(text) is not None or (
            not text.isascii() and _HAN.search(unicodedata.normalize("NFKC", text)) is not None
        )
    if script != "latin":
        raise ValueError(f"unknown script {script!r}; accepted: {', '.join(SCRIPTS)}")
    if _LATIN.search(text) is not None:
        return True
    if text.isascii():
        return False
    return any(_is_latin_letter(c) for c in unicodedata.normalize("NFKC", text))


def _is_latin_letter(char: str) -> bool:
    return char.isalpha() and unicodedata.name(char, "").startswith("LATIN ")


# Chinese/Japanese sentence ends (with closing quotes or brackets after them) inside a mixed line: nupunkt
# only knows English punctuation, so a line is cut at these first.
_WIDE_BREAK = re.compile(r"[。！？][」』”’）〕】]*")


def _sentence_spans(line: str) -> list[tuple[int, int]]:
    import nupunkt

    spans = []
    start = 0
    for match in [*_WIDE_BREAK.finditer(line), None]:
        end = match.end() if match else len(line)
        if end > start:
            spans += [(start + int(a), start + int(b)) for a, b in nupunkt.sent_spans(line[start:end])]
        start = end
    return spans


def split_text(text: str, script: str | None = None) -> list[Piece]:
    """Sentences of ``text`` with their separators; ``"".join(p.text + p.separator ...) == text`` always.

    A line is cut into sentences when it has letters of ``script`` (see :func:`needs_translation`); one without
    is one piece.
    The first piece has an empty sentence when the text starts with whitespace.
    """
    sentences: list[str] = [""]
    separators: list[str] = [""]

    def add_line(line: str) -> None:
        if not line.strip():
            separators[-1] += line
            return
        for start, end in _sentence_spans(line) if needs_translation(line, script) else [(0, len(line))]:
            chunk = line[start:end]
            core = chunk.strip()
            if not core:
                separators[-1] += chunk
                continue
            lead = len(chunk) - len(chunk.lstrip())
            separators[-1] += chunk[:lead]
            sentences.append(core)
            separators.append(chunk[lead + len(core) :])

    position = 0
    for match in _NEWLINE.finditer(text):
        add_line(text[position : match.start()])
        separators[-1] += match.group()
        position = match.end()
    add_line(text[position:])
    if not sentences[0] and not separators[0] and len(sentences) > 1:
        sentences.pop(0)
        separators.pop(0)
    pieces = [Piece(s, sep) for s, sep in zip(sentences, separators, strict=True)]
    assert "".join(p.text + p.separator for p in pieces) == text  # lossless by construction
    return pieces


def split_sentences(text: str, script: str | None = None) -> list[str]:
    """The non-empty sentences of ``text``, in order (lines cut as :func:`split_text` cuts them)."""
    return [p.text for p in split_text(text, script) if p.text]


# Scripts written without spaces between sentences: CJK punctuation, kana, Han, full-width forms.
_NO_SPACE = re.compile("[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def join_translations(translations: Sequence[str], pieces: Sequence[Piece]) -> str:
    """Rebuild the text from each piece's translation: line breaks, blank lines and indentation exactly as
    sent, no space between sentences that end in Chinese (a piece left in Latin script keeps its space), and one
    space between sentences that were written without one (Chinese) but are not Chinese any more."""
    out = ""
    for translation, piece in zip(translations, pieces, strict=True):
        if translation and out and not _joins_without_space(out[-1], translation[0]):
            out += " "
        separator = piece.separator
        if not _NEWLINE.search(separator) and _WIDE_END.search(translation):
            separator = ""
        out += translation + separator
    return out


def _joins_without_space(before: str, after: str) -> bool:
    """Whether ``after`` may follow ``before`` directly: whitespace is there already, or either is Chinese."""
    return before.isspace() or after.isspace() or bool(_NO_SPACE.match(before) or _NO_SPACE.match(after))


def translate_segmented(text: str, translate: Callable[[list[str]], list[str]], script: str | None = None) -> str:
    """Split ``text``, translate the sentences with letters of ``script`` in one call, and join the result."""
    if not needs_translation(text, script):
        return text
    pieces = split_text(text, script)
    todo = [p.text for p in pieces if needs_translation(p.text, script)]
    done = iter(translate(todo))
    return join_translations([next(done) if needs_translation(p.text, script) else p.text for p in pieces], pieces)


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


def clean_text(text: str) -> str:
    """Make any Python str encodable: lone surrogates (invalid in UTF-8) become U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass(frozen=True)
class PreparedText:
    """One input text, segmented: its pieces (sentence + the layout after it) and each piece's model inputs."""

    pieces: tuple[Piece, ...]
    sources: tuple[tuple[list[int], ...], ...]


def prepare_text(text: str, encode: Callable[[str], list[list[int]]], *, script: str) -> PreparedText:
    """The segmentation stage every entry point shares: ``text``'s sentences and the model inputs ``encode``
    gives each sentence the model translates (none for blank pieces, nor for pieces without a letter of
    ``script``, the source language's: :func:`needs_translation`)."""
    pieces = tuple(split_text(clean_text(text), script))
    sources = tuple(
        tuple(encode(piece.text)) if piece.text and needs_translation(piece.text, script) else () for piece in pieces
    )
    return PreparedText(pieces, sources)


def assemble_text(prepared: PreparedText, outputs: Sequence[Sequence[str]]) -> str:
    """The text from its pieces' translations (``outputs[i]``: one string per model input of piece i): line
    breaks and blank lines as sent, no space between Chinese sentences."""
    texts = [
        join_parts(list(out)) if sources else piece.text
        for piece, sources, out in zip(prepared.pieces, prepared.sources, outputs, strict=True)
    ]
    return join_translations(texts, prepared.pieces)
