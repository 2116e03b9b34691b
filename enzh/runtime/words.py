"""Word alignments as output: which source words each translated word comes from.

**Words, as a reader sees them.** Text is cut at whitespace; inside a whitespace-separated chunk every
character of a script written without spaces (Han, kana, hangul, CJK and full-width punctuation) is a word of
its own, and each run of other characters is one word. So English ``"Tom's book."`` has the words ``Tom's`` and
``book.`` (punctuation stays on its word), Chinese ``我读了书。`` has five (我 读 了 书 。), and ``iPhone手机`` has
three (``iPhone`` 手 机). Characters are the one cut of Chinese text every reader agrees on; the model's pieces
are not words (a piece may be 图书馆, 书馆 or 书).

**Pairs.** The aligner (:meth:`enzh.runtime.engine.Engine.align_texts`) gives the cross-attention of every
target piece on the source pieces. A piece's weight goes to every word it covers (a Chinese piece of three
characters covers three words); a word's row is the mean of its pieces' rows, its column the sum of its pieces'
columns. That matrix, normalised by rows (how much of a target word's attention goes to each source word) and
by columns (how much of a source word's attention it receives from each target word), gives each word pair the
geometric mean of the two shares. A pair is kept when its share is the highest of its target word's (ties
included: the characters of one source piece share its weight) or the highest of its source word's, and at
least ``min_score`` (:data:`MIN_SCORE`, chosen on dev sentences of the demo corpus: docs/quality.md; lower it
for more pairs, raise it for surer ones). A word may stay unpaired. Pairs are ``(source word index, target
word index)``, sorted, indices counting from 0 over the whole text: Pharaoh's ``s-t``.

**Both directions.** When the model of the other direction is at hand (``Translators``, or
``translate_detailed(reverse=...)``), it aligns each sentence again the other way: the translation as its source,
the sentence teacher-forced as its target. Its word matrix, normalised by its own rows (how much of a source
word's attention goes to each target word), is averaged with the forward one normalised by rows, and the pairs
are chosen from that average as above, at least :data:`MIN_SCORE_AGREEMENT`. Each model is good where it
predicts the other's words: an English-to-Chinese model attends from every character of 保罗 to ``Paul``, while
the Chinese-to-English one attends from ``Paul`` to one of the two characters only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from enzh.runtime.pieces import Span

# Scripts written without spaces: each character is a word.
_WIDE = re.compile(
    "[\u2e80-\u2fff\u3000-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]"
)
_CHUNK = re.compile(r"\S+")
# Chosen on 500 dev sentences, not the held-out ones (docs/quality.md: python -m enzh.tools.quality_report --sweep).
MIN_SCORE = 0.36  # one model's attention: the lowest with judged precision >= 0.9 in both demo directions
MIN_SCORE_AGREEMENT = 0.32  # both directions' attention averaged: the lowest with judged precision >= 0.95


def word_spans(text: str) -> list[Span]:
    """The character range of every word of ``text`` (see the module docstring), in order."""
    spans: list[Span] = []
    for chunk in _CHUNK.finditer(text):
        run = chunk.start()
        for i in range(chunk.start(), chunk.end()):
            if _WIDE.match(text[i]):
                if run < i:
                    spans.append((run, i))
                spans.append((i, i + 1))
                run = i + 1
        if run < chunk.end():
            spans.append((run, chunk.end()))
    return spans


@dataclass(frozen=True)
class WordAlignment:
    """The words of a text and of its translation (their character ranges) and the aligned pairs."""

    source_words: tuple[Span, ...]
    target_words: tuple[Span, ...]
    pairs: tuple[tuple[int, int], ...]  # (source word, target word), sorted

    def pharaoh(self) -> str:
        """The pairs in Pharaoh format: ``0-0 1-2 ...``."""
        return " ".join(f"{s}-{t}" for s, t in self.pairs)

    def words(self, source: str, target: str) -> list[tuple[str, str]]:
        """Each pair as (source word, target word) of the texts it was made from."""
        return [(source[slice(*self.source_words[s])], target[slice(*self.target_words[t])]) for s, t in self.pairs]


def identity_alignment(text: str) -> WordAlignment:
    """The alignment of a text returned unchanged: every word with itself."""
    spans = tuple(word_spans(text))
    return WordAlignment(spans, spans, tuple((i, i) for i in range(len(spans))))


def _word_of_chars(spans: Sequence[Span], length: int) -> np.ndarray:
    """character index -> word index (-1 for whitespace)."""
    out = np.full(length, -1, dtype=np.int64)
    for index, (lo, hi) in enumerate(spans):
        out[lo:hi] = index
    return out


def _covered(chars: np.ndarray, span: Span, offset: int) -> list[int]:
    lo, hi = span[0] + offset, span[1] + offset
    found = chars[lo:hi]
    return sorted({int(w) for w in found if w >= 0})


@dataclass(frozen=True)
class SentencePair:
    """One aligned sentence inside the texts: its piece spans (relative to the sentence and to its translation),
    the attention ``weights[target piece, source piece]``, and where the two start in the whole texts."""

    source: tuple[Span, ...]
    target: tuple[Span, ...]
    weights: np.ndarray
    source_offset: int
    target_offset: int


def _word_matrix(
    sentence: SentencePair, row_chars: np.ndarray, column_chars: np.ndarray, rows: Sequence[int], columns: Sequence[int]
) -> np.ndarray:
    """``sentence``'s attention between words, ``[rows (target words), columns (source words)]`` as numbered in
    ``rows``/``columns``: a piece's weight goes to every word it covers, a column sums its pieces, a row is the
    mean of its pieces' rows."""
    column_of = {w: i for i, w in enumerate(columns)}
    row_of = {w: i for i, w in enumerate(rows)}
    to_words = np.zeros((len(sentence.source), len(columns)))
    for piece, span in enumerate(sentence.source):
        for w in _covered(column_chars, span, sentence.source_offset):
            if w in column_of:
                to_words[piece, column_of[w]] = 1.0
    by_word = sentence.weights @ to_words  # [target piece, source word]
    matrix = np.zeros((len(rows), len(columns)))
    counts = np.zeros(len(rows))
    for piece, span in enumerate(sentence.target):
        for w in _covered(row_chars, span, sentence.target_offset):
            if w in row_of:
                matrix[row_of[w]] += by_word[piece]
                counts[row_of[w]] += 1
    return matrix / np.maximum(counts, 1)[:, None]


def _by_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row normalised to sum to 1 (a row of zeros stays one)."""
    return matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1e-12)


def align_words(
    source: str,
    target: str,
    sentences: Sequence[SentencePair],
    *,
    min_score: float | None = None,
    reverse: Sequence[SentencePair | None] | None = None,
) -> WordAlignment:
    """The word alignment of ``target`` (a translation of ``source``) from its sentences' piece attention.

    ``reverse``: for each of ``sentences``, the same sentence aligned by the model of the other direction (its
    ``source`` spans are in ``target``, its ``target`` spans in ``source``, and so are its offsets), or None;
    with it the two directions' word attention is averaged before the pairs are chosen (see the module
    docstring). ``min_score``: None for :data:`MIN_SCORE` (:data:`MIN_SCORE_AGREEMENT` for a sentence with its
    reverse)."""
    if min_score is not None and not 0 <= min_score <= 1:
        raise ValueError(f"min_score must be between 0 and 1, got {min_score}")
    if reverse is not None and len(reverse) != len(sentences):
        raise ValueError(f"align_words got {len(reverse)} reverse alignments for {len(sentences)} sentences")
    source_words = word_spans(source)
    target_words = word_spans(target)
    source_chars = _word_of_chars(source_words, len(source))
    target_chars = _word_of_chars(target_words, len(target))
    pairs: set[tuple[int, int]] = set()
    for index, sentence in enumerate(sentences):
        back = reverse[index] if reverse is not None else None
        source_ids = sorted(
            {w for span in sentence.source for w in _covered(source_chars, span, sentence.source_offset)}
        )
        target_ids = sorted(
            {w for span in sentence.target for w in _covered(target_chars, span, sentence.target_offset)}
        )
        if not source_ids or not target_ids:
            continue
        # how much of each target word's attention goes to each source word
        matrix = _word_matrix(sentence, target_chars, source_chars, target_ids, source_ids)
        threshold = MIN_SCORE if min_score is None else min_score
        if back is not None:
            # the other direction's: how much of each source word's attention goes to each target word, averaged in
            back_matrix = _word_matrix(back, source_chars, target_chars, source_ids, target_ids)
            matrix = (_by_rows(matrix) + _by_rows(back_matrix).T) / 2
            threshold = MIN_SCORE_AGREEMENT if min_score is None else min_score
        rows_share = _by_rows(matrix)
        columns_share = matrix / np.maximum(matrix.sum(axis=0, keepdims=True), 1e-12)
        shares = np.sqrt(rows_share * columns_share)
        # the best of its row (for the target word) or of its column (for the source word), ties included (the
        # characters of one piece share its weight), and sure enough
        near = 1 - 1e-9
        best = (shares >= shares.max(axis=1, keepdims=True) * near) | (
            shares >= shares.max(axis=0, keepdims=True) * near
        )
        for row, col in zip(*np.nonzero(best & (shares >= threshold) & (shares > 0)), strict=True):
            pairs.add((source_ids[int(col)], target_ids[int(row)]))
    return WordAlignment(tuple(source_words), tuple(target_words), tuple(sorted(pairs)))


__all__ = [
    "MIN_SCORE",
    "MIN_SCORE_AGREEMENT",
    "SentencePair",
    "WordAlignment",
    "align_words",
    "identity_alignment",
    "word_spans",
]
