"""Inline markup across translation: a block's plain text with marks (bold, links, runs) over character
spans, translated, and the marks placed on the translated text.

Every format that has inline markup (HTML inline tags, Markdown emphasis and links, Word runs) turns a block
into a :class:`Block`, and rebuilds its output from the :class:`TranslatedBlock`. The guarantees: every mark
comes back exactly once, in the same order, with the same nesting as in the source, and no mark boundary falls
inside a UTF-16 surrogate pair or between a character and its combining marks.

How a mark is placed (docs/html.md has the measurements): the block is split into sentences, and a mark is cut
into one fragment per sentence it touches. A fragment covering its whole sentence (or all of it but its edge
punctuation) wraps the whole translation. Otherwise its text is translated on its own, in the same batch as the
sentences, and when that translation (or the fragment's text itself, for names and numbers) occurs exactly once
in the sentence's translation, the fragment goes there: a *sure anchor*. Without one, when the model has an
aligner (``translate.align``, below), the fragment goes on the target pieces that attend most to its source
pieces (the decoder's cross-attention): an *aligned* range. Anchors and aligned ranges that break the source
order or nesting are dropped (an aligned range never displaces an anchor). A fragment left without a range takes
the smallest unit that the placed marks leave for it: the rest of its sentence (its parent's translation, between
its placed siblings); when several siblings compete for one unit, the longest takes it and the others become
zero-width, since two marks cannot share words and keep their nesting. :mod:`enzh.documents.placement` does
the per-sentence work. Last, the fallback (``fallback=True``): a mark that had words and came back without
any (:func:`lost_marks`) has its sentences cut at its edges and the parts translated on their own, in one more
call of ``translate``, so that it wraps its own words (``own``); a mark still lost has its sentences cut at every
mark edge (one last call). The tag order and nesting stay the source's.

The tag protocol: a mark's ``tag`` is the format's own data. When it has a ``parent`` attribute (an index into
the block's marks, or None for a top-level mark; :class:`enzh.documents.markup.Tag` has one), that is the
enclosing mark, which makes zero-width marks at a boundary unambiguous; otherwise the nesting is inferred from
the spans (the nearest earlier mark that contains it). When it has a ``verbatim`` attribute that is not None
(inline code written back as is), the mark is placed only on an exact occurrence of its text, else as a
zero-width point, so that it never swallows translated words.

The aligner protocol: when ``translate`` has an ``align`` attribute (``(sentence, translation)`` pairs -> one
:class:`~enzh.documents.placement.Alignment` or None per pair; :class:`enzh.documents.alignment.ModelAligner`
computes them with the model's aligner graph), it is called once per :func:`translate_blocks` call, for the
sentences that have marks to place. None for a pair (or no ``align``) leaves that sentence to the anchors and
the fallback.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from enzh.documents.placement import (
    Alignment,
    Fragment,
    Placed,
    anchor_input,
    covers_core,
    needs_alignment,
    place_sentence,
    repair,
)
from enzh.runtime.segment import Piece, join_translations, needs_translation, split_text


@dataclass(frozen=True)
class Mark:
    """An inline mark over ``text[start:end]`` of its block; ``tag`` is the format's own (opaque) data.

    Marks of a block are properly nested (no partial overlaps) and listed in document order: by ``start``,
    an enclosing mark before the marks inside it.
    """

    start: int
    end: int
    tag: Hashable


@dataclass(frozen=True)
class Block:
    """Plain text of one block-level unit (a paragraph, a heading, a table cell) and its inline marks."""

    text: str
    marks: tuple[Mark, ...] = ()


@dataclass(frozen=True)
class TranslatedBlock:
    """The translated text and the same marks (same order and nesting) over spans of it.

    ``placement`` says for each mark how it was placed: ``sure`` (a whole sentence, an exact anchor, or text
    left untranslated), ``aligned`` (on the words its source words attend to), ``unit`` (wraps the smallest unit
    left for it), ``point`` (zero-width in the source too) or ``empty`` (it had text, but no unit could be given
    to it: it is written with nothing inside)."""

    text: str
    marks: tuple[Mark, ...] = ()
    placement: tuple[str, ...] = ()


# Translates a list of sentences (each one model input) into a list of the same length.
SentenceTranslator = Callable[[list[str]], list[str]]
# Aligns (sentence, translation) pairs: one Alignment (or None: no alignment) per pair.
SentenceAligner = Callable[[list[tuple[str, str]]], Sequence[Alignment | None]]

_RANK = {"sure": 0, "aligned": 1, "point": 2, "unit": 3, "own": 4, "empty": 5}


def translate_blocks(
    blocks: Sequence[Block],
    translate: SentenceTranslator,
    *,
    anchors: bool = True,
    attention: bool = True,
    fallback: bool = True,
) -> list[TranslatedBlock]:
    """Translate every block's sentences and marked spans in one call of ``translate``; place each block's marks.

    ``anchors=False`` translates no span on its own (fewer model inputs); ``attention=False`` does not call
    ``translate.align``. With neither, every mark that does not cover a whole sentence takes the fallback unit.
    ``fallback`` (on by default): a mark that had words and would come back without any (:func:`lost_marks`) is
    given its own words: the sentences holding it are cut at its edges and the parts translated on their own, in
    one more call of ``translate``; a mark still without words after that has its sentences cut at every mark
    edge (a last call), where every mark covers whole parts."""
    layouts = [_Layout.of(block, anchors) for block in blocks]
    results = _translate_layouts(layouts, translate, attention)
    for everything in (False, True):
        if not fallback:
            break
        redo = {b: lost for b, result in enumerate(results) if (lost := lost_marks(blocks[b], result))}
        if not redo:
            break
        again = [layouts[b].cut(lost, everything) for b, lost in redo.items()]
        for b, layout, result in zip(redo, again, _translate_layouts(again, translate, attention), strict=True):
            layouts[b], results[b] = layout, result
    return results


def _translate_layouts(layouts: list[_Layout], translate: SentenceTranslator, attention: bool) -> list[TranslatedBlock]:
    """One call of ``translate`` for every sentence and anchor of ``layouts``, then the placement of each."""
    todo: list[str] = []
    index: dict[str, int] = {}

    def ask(text: str) -> int:
        if text not in index:
            index[text] = len(todo)
            todo.append(text)
        return index[text]

    requests = [layout.requests(ask) for layout in layouts]
    done = translate(todo) if todo else []
    if len(done) != len(todo):
        raise ValueError(f"translate returned {len(done)} results for {len(todo)} inputs")
    align: SentenceAligner | None = getattr(translate, "align", None) if attention else None
    alignments = _alignments(layouts, requests, done, align)
    return [layout.place(done, asked, alignments) for layout, asked in zip(layouts, requests, strict=True)]


def lost_marks(block: Block, translated: TranslatedBlock) -> list[int]:
    """The marks that had words and lost them: not verbatim, with a letter or digit in ``block`` and none in
    ``translated`` (or with text and only whitespace), and no verbatim mark inside (its raw source is written
    there). Punctuation alone is no words: Markdown moves it out of an emphasis, a reader sees no link on it. A
    tag whose ``words`` attribute is False (a subtitle cue, re-placed by its format) is never lost."""
    parents = mark_parents(block.marks)
    holds_verbatim = [False] * len(block.marks)
    for i, mark in enumerate(block.marks):
        if _is_literal(mark) and mark.start < mark.end:
            p = parents[i]
            while p >= 0 and not holds_verbatim[p]:
                holds_verbatim[p] = True
                p = parents[p]
    return [
        i
        for i, (mark, placed) in enumerate(zip(block.marks, translated.marks, strict=True))
        if not _is_literal(mark)
        and getattr(mark.tag, "words", True)
        and not holds_verbatim[i]
        and _lost(block.text[mark.start : mark.end], translated.text[placed.start : placed.end])
    ]


def _lost(source: str, output: str) -> bool:
    """Words lost: a letter or digit in the source and none in the output, or text and only whitespace."""
    if any(char.isalnum() for char in source):
        return not any(char.isalnum() for char in output)
    return bool(source.strip()) and not output.strip()


def _alignments(
    layouts: list[_Layout], requests: list[_Requests], done: list[str], align: SentenceAligner | None
) -> dict[tuple[str, str], Alignment | None]:
    """(sentence, translation) -> its alignment, for every translated sentence with a mark to place by attention."""
    if align is None:
        return {}
    pairs: dict[tuple[str, str], None] = {}
    for layout, (sentence_ids, _) in zip(layouts, requests, strict=True):
        for s, j in zip(layout.sentences, sentence_ids, strict=True):
            if j >= 0 and needs_alignment(s.piece.text, s.fragments):
                pairs[s.model_input, done[j]] = None
    if not pairs:
        return {}
    found = list(align(list(pairs)))
    if len(found) != len(pairs):
        raise ValueError(f"align returned {len(found)} results for {len(pairs)} pairs")
    return dict(zip(pairs, found, strict=True))


_INFER = object()  # a tag without a ``parent`` attribute: the nesting comes from the spans
# What a block asked for: each sentence's index in the batch (-1: kept as it is), each fragment's anchor's.
_Requests = tuple[list[int], list[list[int | None]]]


def mark_parents(marks: Sequence[Mark]) -> list[int]:
    """The enclosing mark of every mark (-1: none), from the tags' ``parent`` or else from the spans."""
    parents: list[int] = []
    stack: list[int] = []
    for i, mark in enumerate(marks):
        explicit = getattr(mark.tag, "parent", _INFER)
        if explicit is not _INFER and (explicit is None or (isinstance(explicit, int) and 0 <= explicit < i)):
            parents.append(-1 if explicit is None else explicit)
            continue
        while stack and not (marks[stack[-1]].start <= mark.start and mark.end <= marks[stack[-1]].end):
            stack.pop()
        parents.append(stack[-1] if stack else -1)
        stack.append(i)
    return parents


def _is_literal(mark: Mark) -> bool:
    return getattr(mark.tag, "verbatim", None) is not None


def _source_spans(block: Block, parents: list[int]) -> list[tuple[int, int]]:
    """Each mark's span clipped into its parent's and after its previous sibling's (a consistent source tree)."""
    spans: list[tuple[int, int]] = []
    last_end: dict[int, int] = {}
    n = len(block.text)
    for i, mark in enumerate(block.marks):
        p = parents[i]
        lo, hi = (0, n) if p < 0 else spans[p]
        lo = max(lo, last_end.get(p, lo))
        start = min(max(mark.start, lo), hi)
        end = min(max(mark.end, start), hi)
        spans.append((start, end))
        last_end[p] = end
    return spans


@dataclass
class _Sentence:
    """One piece of the block: its sentence's source range, and (after translation) its target range. ``part``:
    a piece cut out of a sentence by the fallback (translated on its own)."""

    piece: Piece
    lo: int
    hi: int
    translated: bool
    fragments: list[Fragment]
    part: bool = False

    @property
    def model_input(self) -> str:
        """What the model is given: the sentence; a part without a final stop gets a period (the model translates
        sentence-like input better, as for anchors), which its translation then loses (:func:`_part_output`)."""
        text = self.piece.text
        return text + "." if self.part and not text.endswith(tuple(_STOPS)) else text


@dataclass
class _Layout:
    """A block cut into sentences (and, for the fallback, sentences cut at ``cuts``: block offsets), its marks cut
    into per-sentence fragments. ``trailing``: (sentence, fragment) of the zero-width fragments that lie after
    their sentence's end (in its separator): they go after the separator's translation, not before it."""

    block: Block
    parents: list[int]
    spans: list[tuple[int, int]]
    sentences: list[_Sentence]
    anchors: bool
    cuts: tuple[int, ...] = ()
    trailing: set[tuple[int, int]] = field(default_factory=set)

    @classmethod
    def of(
        cls,
        block: Block,
        anchors: bool = True,
        cuts: Sequence[int] = (),
        merge: bool = True,
        whole: frozenset[tuple[int, int]] = frozenset(),
    ) -> _Layout:
        parents = mark_parents(block.marks)
        spans = _source_spans(block, parents)
        sentences: list[_Sentence] = []
        position = 0
        at = sorted(set(cuts))
        for piece in split_text(block.text):
            lo, hi = position, position + len(piece.text)
            inner = at[bisect.bisect_right(at, lo) : bisect.bisect_left(at, hi)]  # lo < cut < hi
            if inner:
                sentences += _parts(block.text, piece, lo, inner, merge, whole)
            else:  # a lost mark over the whole sentence makes it a part: kept as written if the model drops it all
                sentences.append(_Sentence(piece, lo, hi, needs_translation(piece.text), [], part=(lo, hi) in whole))
            position = hi + len(piece.separator)
        layout = cls(block, parents, spans, sentences, anchors, tuple(at))
        layout._cut()
        return layout

    def cut(self, lost: Sequence[int], everything: bool) -> _Layout:
        """The layout again with the sentences that hold a fragment of a ``lost`` mark cut at its edges (with
        ``everything``: at the edges of every mark there, and letterless parts not merged into a neighbour), so
        that it covers whole parts, translated on their own."""
        lost_set = set(lost)
        cuts = set(self.cuts)
        whole: set[tuple[int, int]] = set()  # the lost fragments: parts of their own, never merged
        for s in self.sentences:
            if any(f.mark in lost_set for f in s.fragments):
                for f in s.fragments:
                    if everything or f.mark in lost_set:
                        cuts.update((s.lo + f.start, s.lo + f.end))
                        whole.add((s.lo + f.start, s.lo + f.end))
        return _Layout.of(self.block, self.anchors, sorted(cuts), merge=not everything, whole=frozenset(whole))

    def _cut(self) -> None:
        """Fragments of every mark, each in the sentences it overlaps (a zero-width mark in exactly one). Sentences
        are in order, so those a span overlaps are a run found by bisection: linear in the marks, not quadratic."""
        los = [s.lo for s in self.sentences]
        his = [s.hi for s in self.sentences]
        where: dict[int, set[int]] = {}  # mark -> sentences holding one of its fragments
        first: dict[int, int] = {}  # mark -> the first of them (its lowest)
        fragment_of: dict[tuple[int, int], int] = {}  # (sentence, mark) -> index of its fragment there

        def add(k: int, i: int, a: int, b: int, p: int, literal: bool) -> None:
            s = self.sentences[k]
            fragment_of.setdefault((k, i), len(s.fragments))
            s.fragments.append(Fragment(i, a, b, fragment_of.get((k, p), -1), literal))
            where.setdefault(i, set()).add(k)
            first.setdefault(i, k)

        for i, (start, end) in enumerate(self.spans):
            p = self.parents[i]
            literal = _is_literal(self.block.marks[i])
            hits = range(bisect.bisect_right(his, start), bisect.bisect_left(los, end))  # start < hi, lo < end
            if not hits:  # zero-width, or only whitespace between sentences: a point in one sentence
                k = self._point_sentence(los, his, start, where.get(p) if p >= 0 else None, first.get(p, 0))
                s = self.sentences[k]
                local = min(max(start - s.lo, 0), s.hi - s.lo)
                if start > s.hi:
                    self.trailing.add((k, len(s.fragments)))
                add(k, i, local, local, p, literal)
                continue
            for k in hits:
                s = self.sentences[k]
                add(k, i, max(start, s.lo) - s.lo, min(end, s.hi) - s.lo, p, literal)

    @staticmethod
    def _point_sentence(los: list[int], his: list[int], offset: int, allowed: set[int] | None, lowest: int) -> int:
        """The first sentence holding ``offset`` (else the last before it) that is ``allowed`` (else the lowest
        allowed one, ``lowest``)."""
        candidates: Sequence[int] = range(bisect.bisect_left(his, offset), bisect.bisect_right(los, offset))
        if not candidates:  # lo <= offset <= hi for none: the last sentence that ends before it
            candidates = [max(bisect.bisect_right(his, offset) - 1, 0)]
        if allowed:
            return next((k for k in candidates if k in allowed), lowest)
        return candidates[0]

    def requests(self, ask: Callable[[str], int]) -> _Requests:
        """Ask for each sentence's translation and each fragment's anchor translation (indices into the batch)."""
        sentences = [ask(s.model_input) if s.translated else -1 for s in self.sentences]
        anchors: list[list[int | None]] = []
        for s in self.sentences:
            asked: list[int | None] = []
            for fragment in s.fragments:
                text = anchor_input(s.piece.text, fragment) if s.translated and self.anchors else None
                asked.append(ask(text) if text is not None else None)
            anchors.append(asked)
        return sentences, anchors

    def place(
        self, done: list[str], asked: _Requests, alignments: dict[tuple[str, str], Alignment | None]
    ) -> TranslatedBlock:
        sentence_ids, anchor_ids = asked
        raw = [done[j] if j >= 0 else s.piece.text for s, j in zip(self.sentences, sentence_ids, strict=True)]
        # A part cut out of a sentence keeps no final stop of its own (the model ends every input like a sentence).
        outputs = [
            _part_output(s, out) if s.part and j >= 0 else out
            for s, j, out in zip(self.sentences, sentence_ids, raw, strict=True)
        ]
        pieces = [s.piece for s in self.sentences]
        text = join_translations(outputs, pieces)
        marks = self.block.marks
        if not marks:
            return TranslatedBlock(text, (), ())
        starts: dict[int, int] = {}
        ends: dict[int, int] = {}
        kinds: dict[int, str] = {}
        for k, (s, output, ids, (offset, after)) in enumerate(
            zip(self.sentences, outputs, anchor_ids, _offsets(text, outputs, pieces), strict=True)
        ):
            anchors = [done[j] if j is not None else None for j in ids]
            alignment = alignments.get((s.model_input, raw[k]))
            placed: list[Placed] = place_sentence(s.piece.text, output, s.fragments, anchors, s.translated, alignment)
            for f, (fragment, result) in enumerate(zip(s.fragments, placed, strict=True)):
                i = fragment.mark
                a, b = (after, after) if (k, f) in self.trailing else (offset + result.start, offset + result.end)
                starts.setdefault(i, a)
                ends[i] = b
                own = s.part and result.kind == "sure" and covers_core(s.piece.text, fragment)
                kind = "own" if own else result.kind
                if _RANK[kind] >= _RANK.get(kinds.get(i, "sure"), 0):
                    kinds[i] = kind
        ranges = [(starts.get(i, 0), ends.get(i, 0)) for i in range(len(marks))]
        ranges = repair(text, ranges, self.parents)
        out = tuple(Mark(a, b, m.tag) for (a, b), m in zip(ranges, marks, strict=True))
        return TranslatedBlock(text, out, tuple(kinds.get(i, "point") for i in range(len(marks))))


_STOPS = ".?!…:;"
_TARGET_STOPS = "。．！？.!?"


def _part_output(sentence: _Sentence, output: str) -> str:
    """A part's translation without the final stop that its source part does not have; the part as written
    when its translation has no word left (a lone word the model answers with punctuation only)."""
    if _lost(sentence.piece.text, output):
        return sentence.piece.text
    if sentence.piece.text.endswith(tuple(_STOPS)):
        return output
    trimmed = output.rstrip()
    while trimmed and trimmed[-1] in _TARGET_STOPS:
        trimmed = trimmed[:-1]
    return trimmed if trimmed.strip() else output


def _offsets(text: str, outputs: Sequence[str], pieces: Sequence[Piece]) -> list[tuple[int, int]]:
    """Where each piece's translation starts in ``text`` (their :func:`join_translations`), and where the
    piece's translated separator ends: the join adds a space between two pieces that need one, and drops a
    separator after a sentence that ends in Chinese."""
    found: list[tuple[int, int]] = []
    position = 0
    for output, piece in zip(outputs, pieces, strict=True):
        if output and text.startswith(" ", position) and not text.startswith(output, position):
            position += 1  # the space the join put between two pieces
        start = position
        position += len(output)
        if piece.separator and text.startswith(piece.separator, position):
            position += len(piece.separator)
        found.append((start, position))
    return found


def _wordless(text: str) -> bool:
    return not any(char.isalnum() for char in text)


def _parts(
    text: str, piece: Piece, lo: int, cuts: Sequence[int], merge: bool, whole: frozenset[tuple[int, int]]
) -> list[_Sentence]:
    """The sentence ``piece`` (at ``lo`` in ``text``) cut at ``cuts``, as parts that tile it; with ``merge``, a
    part without a letter or digit (a comma, a bracket, a space) is joined to the part before it (the first
    one to the part after it), so that the parts read as phrases; a segment in ``whole`` (a lost mark's) stays
    a part of its own."""
    bounds = [lo, *cuts, lo + len(piece.text)]
    segments = list(itertools.pairwise(bounds))
    if merge:
        merged: list[tuple[int, int]] = []
        for a, b in segments:
            previous = merged[-1] if merged else None
            if previous is not None and (
                ((a, b) not in whole and _wordless(text[a:b]))
                or (previous not in whole and _wordless(text[previous[0] : previous[1]]))
            ):
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        segments = merged
    parts: list[list[Any]] = []  # [start, end, core, separator]
    for a, b in segments:
        segment = text[a:b]
        core = segment.strip()
        if not core:
            if parts:
                parts[-1][3] += segment
            continue
        lead = len(segment) - len(segment.lstrip())
        if parts:
            parts[-1][3] += segment[:lead]
        parts.append([a + lead, a + lead + len(core), core, segment[lead + len(core) :]])
    parts[-1][3] += piece.separator
    return [
        _Sentence(Piece(core, separator), start, end, needs_translation(core), [], part=True)
        for start, end, core, separator in parts
    ]
