"""The alignment rules tried for word alignments, measured on the dev sentences (docs/quality.md).

``python -m enzh.tools.alignment_variants [--limit N]`` prints, for each rule and direction, the slot words'
precision (strict / judged) and recall (:func:`enzh.tools.quality_report.alignment_counts` explains them) on
``N`` dev sentences (:func:`enzh.tools.quality_report.dev_samples`, never the held-out ones). Every sentence is
translated and aligned once by each model (the forward model on (sentence, translation), the other direction's
on (translation, sentence)); each rule then chooses pairs from those piece attentions:

* **one model, best of row or column** (what :func:`enzh.runtime.words.align_words` does without a reverse),
  **best of row and column** (both), **max** (a word's row the max of its pieces' rows, not their mean);
* **both models**: each direction's own pairs **intersected**, **united**, **grow-diag** (the intersection grown
  with neighbouring pairs of the union that pair a word still unpaired) and **grow-diag-final** (then any pair of
  the union whose two words are both unpaired); the **product** of the two directions' shares; and the
  **average** of the two word matrices (what ``align_words(reverse=...)`` does).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from enzh.runtime.cpu import cpu_features
from enzh.runtime.engine import Engine, TextAlignment
from enzh.runtime.words import MIN_SCORE, MIN_SCORE_AGREEMENT, WordAlignment, word_spans
from enzh.tools.quality_report import Counts, _count, dev_samples

Pairs = set[tuple[int, int]]  # (source word, target word)


def word_matrix(source: str, target: str, found: TextAlignment, reduce: str = "mean") -> np.ndarray:
    """``[target word, source word]`` attention: a piece's weight to every word it covers, a column the sum of its
    pieces, a row the mean (or max) of its pieces' rows."""
    source_words, target_words = word_spans(source), word_spans(target)
    source_of = _owners(source_words, len(source))
    target_of = _owners(target_words, len(target))
    to_words = np.zeros((len(found.source), len(source_words)))
    for piece, (lo, hi) in enumerate(found.source):
        for w in {int(w) for w in source_of[lo:hi] if w >= 0}:
            to_words[piece, w] = 1.0
    by_word = found.weights @ to_words
    matrix = np.zeros((len(target_words), len(source_words)))
    counts = np.zeros(len(target_words))
    for piece, (lo, hi) in enumerate(found.target):
        for w in {int(w) for w in target_of[lo:hi] if w >= 0}:
            matrix[w] = np.maximum(matrix[w], by_word[piece]) if reduce == "max" else matrix[w] + by_word[piece]
            counts[w] += 1
    return matrix if reduce == "max" else matrix / np.maximum(counts, 1)[:, None]


def _owners(spans: Sequence[tuple[int, int]], length: int) -> np.ndarray:
    out = np.full(length, -1, dtype=np.int64)
    for index, (lo, hi) in enumerate(spans):
        out[lo:hi] = index
    return out


def _rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1e-12)


def shares(matrix: np.ndarray) -> np.ndarray:
    """The geometric mean of each pair's row share and column share."""
    columns = matrix / np.maximum(matrix.sum(axis=0, keepdims=True), 1e-12)
    return np.asarray(np.sqrt(_rows(matrix) * columns))


def chosen(share: np.ndarray, threshold: float, both: bool = False) -> Pairs:
    """Pairs best of their row or (``both``: and) of their column, ties included, with a share >= threshold."""
    near = 1 - 1e-9
    row = share >= share.max(axis=1, keepdims=True) * near
    column = share >= share.max(axis=0, keepdims=True) * near
    best = (row & column) if both else (row | column)
    return {(int(c), int(r)) for r, c in zip(*np.nonzero(best & (share >= threshold) & (share > 0)), strict=True)}


def grow_diag(first: Pairs, second: Pairs, final: bool = False) -> Pairs:
    """The intersection, grown with neighbouring (also diagonal) pairs of the union that pair a word not yet
    paired; ``final``: then every pair of the union whose two words are both still unpaired."""
    union, found = first | second, first & second
    steps = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]
    grown = True
    while grown:
        grown = False
        for s, t in sorted(found):
            for ds, dt in steps:
                near = (s + ds, t + dt)
                sources, targets = {a for a, _ in found}, {b for _, b in found}
                if near in union and near not in found and (near[0] not in sources or near[1] not in targets):
                    found.add(near)
                    grown = True
    if final:
        for s, t in sorted(union):
            if s not in {a for a, _ in found} and t not in {b for _, b in found}:
                found.add((s, t))
    return found


Rule = Callable[[np.ndarray, np.ndarray | None], Pairs]  # (forward [t, s], reverse [s, t] or None) -> pairs


def rules() -> list[tuple[str, bool, str, Rule]]:
    """(name, needs the reverse, word reduction, rule)."""
    one, agree = MIN_SCORE, MIN_SCORE_AGREEMENT
    return [
        ("one model, best of row or column, 0.3", False, "mean", lambda f, r: chosen(shares(f), 0.3)),
        (f"one model, best of row or column, {one}", False, "mean", lambda f, r: chosen(shares(f), one)),
        (f"one model, best of row and column, {one}", False, "mean", lambda f, r: chosen(shares(f), one, True)),
        (f"one model, max over a word's pieces, {one}", False, "max", lambda f, r: chosen(shares(f), one)),
        (f"both, pairs intersected, {one}", True, "mean", lambda f, r: _each(f, r, one, lambda a, b: a & b)),
        (f"both, pairs united, {one}", True, "mean", lambda f, r: _each(f, r, one, lambda a, b: a | b)),
        (f"both, grow-diag, {one}", True, "mean", lambda f, r: _each(f, r, one, grow_diag)),
        (
            f"both, grow-diag-final, {one}",
            True,
            "mean",
            lambda f, r: _each(f, r, one, lambda a, b: grow_diag(a, b, True)),
        ),
        ("both, product of shares, 0.2", True, "mean", lambda f, r: chosen(np.sqrt(shares(f) * _back(r)), 0.2)),
        (
            f"both, matrices averaged, {agree} (kept)",
            True,
            "mean",
            lambda f, r: chosen(shares((_rows(f) + _rows(_need(r)).T) / 2), agree),
        ),
    ]


def _need(reverse: np.ndarray | None) -> np.ndarray:
    if reverse is None:
        raise ValueError("this rule needs the reverse model's attention")
    return reverse


def _back(reverse: np.ndarray | None) -> np.ndarray:
    return shares(_need(reverse)).T


def _each(
    forward: np.ndarray, reverse: np.ndarray | None, threshold: float, join: Callable[[Pairs, Pairs], Pairs]
) -> Pairs:
    """Each direction's own pairs (the reverse's turned round), joined."""
    return join(chosen(shares(forward), threshold), {(s, t) for t, s in chosen(shares(_need(reverse)), threshold)})


def measure(
    engine: Engine, reverse: Engine, samples: Sequence[Any], english_source: bool
) -> list[tuple[str, Counts, Counts]]:
    """Each rule's (name, strict, judged) counts."""
    sources = [s.en if english_source else s.zh for s in samples]
    texts = [t.text for t in engine.translate_detailed(sources)]
    ahead = engine.align_texts(list(zip(sources, texts, strict=True)), engine.resolve_target(None))
    back = reverse.align_texts(list(zip(texts, sources, strict=True)), reverse.resolve_target(None))
    out = []
    for name, _, reduce, rule in rules():
        strict, judged = Counts(), Counts()
        for sample, source, text, forward, other in zip(samples, sources, texts, ahead, back, strict=True):
            if forward is None or other is None:
                continue
            pairs = rule(word_matrix(source, text, forward, reduce), word_matrix(text, source, other, reduce))
            found = WordAlignment(tuple(word_spans(source)), tuple(word_spans(text)), tuple(sorted(pairs)))
            _count(sample, source, text, found, english_source, strict, judged)
        judged.sentences, judged.slots = strict.sentences, strict.slots
        out.append((name, strict, judged))
    return out


def table(count: int) -> str:
    from enzh.runtime.default_model import default_model_dirs
    from enzh.runtime.translator import Translator

    en_zh_dir, zh_en_dir = list(default_model_dirs())[:2]
    en_zh, zh_en = Translator.load(en_zh_dir), Translator.load(zh_en_dir)
    samples = dev_samples(count)
    found = [measure(en_zh, zh_en, samples, True), measure(zh_en, en_zh, samples, False)]
    lines = [
        f"{len(samples)} dev sentences: precision strict / judged, recall; CPU: {cpu_features().summary()}",
        "",
        "| rule | en->zh | zh->en |",
        "|---|---|---|",
    ]
    for (name, *ez), (_, *ze) in zip(*found, strict=True):
        cells = [f"{s.precision():.3f} / {j.precision():.3f}, {j.recall():.3f}" for s, j in (ez, ze)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=500, help="how many dev sentences (default 500)")
    args = parser.parse_args(argv)
    if args.limit < 1:
        parser.error(f"--limit must be at least 1, got {args.limit}")
    print(table(args.limit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
