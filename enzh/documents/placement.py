"""Placing the fragments of inline marks on one sentence's translation (used by :mod:`enzh.documents.inline`).

A fragment is the part of one mark inside one sentence, with its parent fragment in that sentence. Placement
is top-down over the fragment tree, inside the parent's range (the whole translation for top-level fragments):

1. *sure* ranges: the whole translation (the fragment covers the sentence), its core (the sentence but its
   leading/trailing punctuation), or an anchor: the fragment's own text or its separate translation found
   exactly once in the sentence's translation; without one, when the model has an aligner, the *aligned* range:
   the target pieces that attend most to the fragment's source pieces (:func:`attended`);
2. among the siblings, the sure and aligned ranges that keep the source order (inside the parent, disjoint, in
   order) are kept, as many as possible, sure anchors first;
3. each run of siblings left between two kept ones gets the gap between them (minus the edge punctuation its
   source does not have): the longest fragment of the run that may wrap it does, the others become zero-width.
   A fragment may not wrap a gap when its anchor or aligned range was elsewhere (dropped to keep the order),
   when the gap is only punctuation, or when its own translation shares no character with the gap: it would be on words
   that are surely not its own. Sharing a gap by length was measured and rejected (it puts tags on wrong
   words: docs/html.md). Zero-width and verbatim fragments become points at their relative position.

:func:`repair` is the last word for every block: whatever the ranges, it makes them nest exactly as the marks
do and moves every boundary off a UTF-16 surrogate pair or a combining sequence.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from enzh.runtime.segment import needs_translation

_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]{2}")  # two word characters in a row: a cut inside a word
_SENTENCE_END = (".", "?", "!", "…", ":", ";")
# A target piece is on a fragment's words when more than this share of its attention is on the fragment's source
# pieces; the aligned range is the run of target pieces with the most attention above it (docs/html.md).
ATTENTION_MARGIN = 0.4


@dataclass(frozen=True)
class Fragment:
    """``mark``'s part ``[start, end)`` of a sentence (offsets in the sentence); ``parent``: index of the
    enclosing fragment in the sentence's list, -1 for none; ``literal``: placed only where its text is."""

    mark: int
    start: int
    end: int
    parent: int
    literal: bool = False


@dataclass(frozen=True)
class Placed:
    """A fragment's range in the sentence's translation and how it was found (see TranslatedBlock)."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class Alignment:
    """A sentence's cross-attention on its translation: ``weights[t, s]``, the attention of target piece t on
    source piece s (each row sums to 1 over the source pieces); ``source[s]`` and ``target[t]``: each piece's
    character range in the sentence and in its translation."""

    source: tuple[tuple[int, int], ...]
    target: tuple[tuple[int, int], ...]
    weights: np.ndarray

    def __post_init__(self) -> None:
        if self.weights.shape != (len(self.target), len(self.source)):
            raise ValueError(f"weights {self.weights.shape} for {len(self.target)} x {len(self.source)} pieces")


def attended(alignment: Alignment, start: int, end: int, output_length: int) -> tuple[int, int] | None:
    """The range of the translation aligned with ``[start, end)`` of the sentence: the run of target pieces whose
    attention on the source pieces overlapping it, minus :data:`ATTENTION_MARGIN`, sums highest. None when no
    target piece gives it more than the margin (then the fallback places the fragment)."""
    columns = [s for s, (lo, hi) in enumerate(alignment.source) if lo < end and start < hi]
    usable = [lo < hi <= output_length for lo, hi in alignment.target]
    if not columns or not any(usable):
        return None
    mass = alignment.weights[:, columns].sum(axis=1) - ATTENTION_MARGIN
    best, first, last, run, run_first = 0.0, -1, -1, 0.0, 0
    for t, value in enumerate(mass.tolist()):
        value = value if usable[t] else -1.0  # a piece with no text of its own (a lone space) ends no range
        run, run_first = (value, t) if run <= 0 else (run + value, run_first)
        if run > best:
            best, first, last = run, run_first, t
    if first < 0:
        return None
    return alignment.target[first][0], alignment.target[last][1]


def anchor_input(sentence: str, fragment: Fragment) -> str | None:
    """The model input that translates ``fragment`` on its own, or None when its place needs no translation."""
    if fragment.literal or fragment.start >= fragment.end or _covers_core(sentence, fragment):
        return None
    text = sentence[fragment.start : fragment.end].strip()
    if not needs_translation(text):
        return None
    # A final period makes the span look like the sentences the model was trained on (docs/html.md).
    return text if text.endswith(_SENTENCE_END) else text + "."


def needs_alignment(sentence: str, fragments: Sequence[Fragment]) -> bool:
    """Whether a fragment of ``sentence`` may be placed by attention: one with words that is not verbatim and does
    not cover the sentence (those have sure ranges)."""
    return any(
        not f.literal and f.start < f.end and not _covers_core(sentence, f) and sentence[f.start : f.end].strip()
        for f in fragments
    )


def place_sentence(
    source: str,
    output: str,
    fragments: Sequence[Fragment],
    anchors: Sequence[str | None],
    translated: bool,
    alignment: Alignment | None = None,
) -> list[Placed]:
    """Ranges in ``output`` for ``fragments`` of ``source``; ``anchors[i]``: fragment i's own translation;
    ``alignment``: the sentence's cross-attention on ``output``, when the model has an aligner."""
    if not translated:  # the sentence is kept as it is: the same offsets
        n = len(output)
        return [Placed(min(f.start, n), min(f.end, n), "sure" if f.start < f.end else "point") for f in fragments]
    return _Solver(source, output, fragments, anchors, alignment).solve()


class _Solver:
    def __init__(
        self,
        source: str,
        output: str,
        fragments: Sequence[Fragment],
        anchors: Sequence[str | None],
        alignment: Alignment | None = None,
    ):
        self.source, self.output, self.fragments = source, output, fragments
        self.anchors = anchors
        self.sure = [self._sure(f, a) for f, a in zip(fragments, anchors, strict=True)]
        # Without a sure range, a fragment with words takes the range its source pieces are aligned with.
        self.aligned = [
            attended(alignment, f.start, f.end, len(output))
            if alignment is not None and sure is None and not f.literal and f.start < f.end
            else None
            for f, sure in zip(fragments, self.sure, strict=True)
        ]
        self.children: dict[int, list[int]] = {-1: []}
        for i, fragment in enumerate(fragments):
            self.children.setdefault(i, [])
            self.children.setdefault(fragment.parent, []).append(i)
        self.result: list[Placed | None] = [None] * len(fragments)

    def solve(self) -> list[Placed]:
        self._node(-1, 0, len(self.output), 0, len(self.source))
        return [r if r is not None else Placed(0, 0, "point") for r in self.result]

    def _sure(self, fragment: Fragment, anchor: str | None) -> tuple[int, int] | None:
        source, output = self.source, self.output
        if fragment.start >= fragment.end:
            return None
        if not fragment.literal and fragment.start <= 0 and fragment.end >= len(source):
            return 0, len(output)
        if not fragment.literal and _covers_core(source, fragment):
            lo, hi = _core(output)
            return (lo, hi) if lo < hi else (0, len(output))
        found = _once(output, source[fragment.start : fragment.end].strip())
        if found is None and anchor is not None and not fragment.literal:
            lo, hi = _core(anchor)
            found = _once(output, anchor[lo:hi])
        return found

    def _node(self, node: int, lo: int, hi: int, source_lo: int, source_hi: int) -> None:
        kids = self.children[node]
        kept = _chain([(k, self.sure[k] or self.aligned[k], self.sure[k] is not None) for k in kids], lo, hi)
        previous, previous_source = lo, source_lo
        run: list[int] = []
        for k in kids:
            if k not in kept:
                run.append(k)
                continue
            start, end = kept[k]
            self._run(run, previous, start, previous_source, self.fragments[k].start)
            self.result[k] = Placed(start, end, "sure" if self.sure[k] is not None else "aligned")
            previous, previous_source, run = end, self.fragments[k].end, []
        self._run(run, previous, hi, previous_source, source_hi)
        for k in kids:
            placed = self.result[k]
            assert placed is not None
            self._node(k, placed.start, placed.end, self.fragments[k].start, self.fragments[k].end)

    def _plausible(self, k: int, gap: set[str]) -> bool:
        """Whether fragment ``k`` may wrap a gap holding the characters ``gap``: not when its anchor or aligned
        range was elsewhere (and dropped to keep the order), nor when the gap is only punctuation, nor when its own
        translation shares no character with the gap."""
        if self.sure[k] is not None or self.aligned[k] is not None or all(_is_edge(ch) for ch in gap):
            return False
        own = [ch for ch in self.anchors[k] or "" if not _is_edge(ch)]
        return not own or any(ch in gap for ch in own)

    def _run(self, run: list[int], lo: int, hi: int, source_lo: int, source_hi: int) -> None:
        """Place unsure siblings ``run`` in the gap ``[lo, hi)`` left between their placed neighbours: the longest
        one that may wraps the gap, the others become zero-width (two marks cannot share words and keep nesting)."""
        if not run:
            return
        fragments = self.fragments
        texty = [k for k in run if fragments[k].start < fragments[k].end]
        wide = [k for k in texty if not fragments[k].literal]
        first, last = (fragments[texty[0]].start, fragments[texty[-1]].end) if texty else (source_lo, source_hi)
        # the gap without the edge punctuation that the source has outside these fragments
        left = self.source[source_lo:first].strip() != ""
        right = self.source[last:source_hi].strip() != ""
        inner_lo, inner_hi = _trim(self.output, lo, hi, left, right)
        gap = set(self.output[inner_lo:inner_hi])  # once for the run (siblings may be thousands)
        eligible = [k for k in wide if self._plausible(k, gap)]
        chosen = max(eligible, key=lambda k: fragments[k].end - fragments[k].start, default=None)
        index = run.index(chosen) if chosen is not None else len(run)
        wide_set = set(wide)
        cursor = lo
        for position, k in enumerate(run):
            if k == chosen:
                self.result[k] = Placed(inner_lo, inner_hi, "unit")
                cursor = inner_hi
                continue
            if fragments[k].start < fragments[k].end:  # written empty (or verbatim) beside the placed words
                at = max(cursor, inner_lo if position < index and chosen is not None else inner_hi)
            else:  # a point keeps its relative position
                at = max(
                    cursor, lo + round((fragments[k].start - source_lo) * (hi - lo) / max(1, source_hi - source_lo))
                )
                if chosen is not None:
                    at = min(at, inner_lo) if position < index else max(at, inner_hi)
            self.result[k] = Placed(at, at, "empty" if k in wide_set else "point")
            cursor = at


def _chain(candidates: list[tuple[int, tuple[int, int] | None, bool]], lo: int, hi: int) -> dict[int, tuple[int, int]]:
    """The ranges to keep among ``(fragment, range, sure)``: those in ``[lo, hi)``, in order, without overlap, the
    most sure ones, then the most in all, then the longest in total (an aligned range never displaces an anchor)."""
    usable = [(k, r, sure) for k, r, sure in candidates if r is not None and lo <= r[0] < r[1] <= hi]
    best: list[tuple[int, int, int, int]] = []  # per usable item: (sure, count, total length, previous item or -1)
    # The best earlier chain ending at or before each start, from a Fenwick tree of prefix maxima over the ends
    # (n log n: a sentence may have thousands of marks side by side).
    ends = sorted({r[1] for _, r, _ in usable})
    tree: list[tuple[int, int, int, int] | None] = [None] * (len(ends) + 1)
    for i, (_, (start, end), sure) in enumerate(usable):
        score = (int(sure), 1, end - start, -1)
        position, previous = bisect.bisect_right(ends, start), None
        while position > 0:
            found = tree[position]
            if found is not None and (previous is None or found > previous):
                previous = found
            position -= position & -position
        if previous is not None:
            count_sure, count, length, j = previous
            score = (count_sure + sure, count + 1, length + end - start, j)
        best.append(score)
        position, entry = bisect.bisect_left(ends, end) + 1, (*score[:3], i)
        while position <= len(ends):
            held = tree[position]
            if held is None or entry > held:
                tree[position] = entry
            position += position & -position
    if not best:
        return {}
    i = max(range(len(best)), key=lambda j: best[j][:3])
    kept: dict[int, tuple[int, int]] = {}
    while i >= 0:
        k, r, _ = usable[i]
        kept[k] = r
        i = best[i][3]
    return kept


def _is_edge(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch).startswith("P")


def _core(text: str) -> tuple[int, int]:
    """``text`` without leading and trailing whitespace and punctuation."""
    lo, hi = 0, len(text)
    while lo < hi and _is_edge(text[lo]):
        lo += 1
    while hi > lo and _is_edge(text[hi - 1]):
        hi -= 1
    return lo, hi


def covers_core(sentence: str, fragment: Fragment) -> bool:
    """Whether ``fragment`` covers all of ``sentence`` but its edge whitespace and punctuation."""
    return _covers_core(sentence, fragment)


def _covers_core(sentence: str, fragment: Fragment) -> bool:
    lo, hi = _core(sentence)
    return lo < hi and fragment.start <= lo and fragment.end >= hi


def _trim(text: str, lo: int, hi: int, left: bool, right: bool) -> tuple[int, int]:
    start, end = lo, hi
    while left and start < end and _is_edge(text[start]):
        start += 1
    while right and end > start and _is_edge(text[end - 1]):
        end -= 1
    return (start, end) if start < end else (lo, hi)


def _once(text: str, needle: str) -> tuple[int, int] | None:
    """The range of ``needle`` in ``text`` when it occurs exactly once on safe boundaries, else None (``is`` in
    ``This`` or ``28`` in ``128`` is no occurrence: Latin letters and digits do not continue on either side)."""
    if not needle:
        return None
    found = None
    i = text.find(needle)
    while i >= 0:
        j = i + len(needle)
        inside_word = (i > 0 and _WORD.match(text[i - 1 : i + 1])) or (
            j < len(text) and _WORD.match(text[j - 1 : j + 1])
        )
        if is_boundary(text, i) and is_boundary(text, j) and not inside_word:
            if found is not None:
                return None
            found = (i, i + len(needle))
        i = text.find(needle, i + 1)
    return found


def is_boundary(text: str, i: int) -> bool:
    """True when a tag may go before ``text[i]``: not inside a surrogate pair, a combining sequence or an emoji
    sequence (zero-width joiner, skin-tone modifier)."""
    if i <= 0 or i >= len(text):
        return True
    before, after = text[i - 1], text[i]
    if "\ud800" <= before <= "\udbff" and "\udc00" <= after <= "\udfff":
        return False
    if unicodedata.category(after) in ("Mn", "Mc", "Me"):
        return False
    return not ("\u200d" in (before, after) or "\U0001f3fb" <= after <= "\U0001f3ff")


def _snap(text: str, x: int, lo: int, hi: int) -> int:
    """The boundary nearest ``x`` in ``[lo, hi]`` (``lo`` and ``hi`` are boundaries), the earlier one first."""
    for d in range(max(x - lo, hi - x) + 1):
        if x - d >= lo and is_boundary(text, x - d):
            return x - d
        if x + d <= hi and is_boundary(text, x + d):
            return x + d
    return lo


def repair(text: str, ranges: Sequence[tuple[int, int]], parents: Sequence[int]) -> list[tuple[int, int]]:
    """``ranges`` made valid: each inside its parent, after its previous sibling, on safe boundaries."""
    children: dict[int, list[int]] = {-1: []}
    for i, p in enumerate(parents):
        children.setdefault(i, [])
        children.setdefault(p, []).append(i)
    out = [(0, 0)] * len(ranges)
    stack = [(-1, 0, len(text))]
    while stack:
        node, lo, hi = stack.pop()
        position = lo
        for k in children[node]:
            start = _snap(text, min(max(ranges[k][0], position), hi), position, hi)
            end = _snap(text, min(max(ranges[k][1], start), hi), start, hi)
            out[k] = (start, end)
            stack.append((k, start, end))
            position = end
    return out
