"""Rebuilding a format's inline markup from a translated block: the marks as a tree, walked in order.

Formats give their marks a :class:`Tag` that records the raw source to re-emit and the enclosing mark (the
nesting is the format's, so zero-width marks at a boundary are never ambiguous). :func:`arrange` turns a
:class:`~enzh.documents.inline.TranslatedBlock` into a flat list of events; whatever offsets it gets, every mark
comes out exactly once, inside its parent, after its previous sibling (out-of-range offsets are clamped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.runtime.segment import split_text


@dataclass(frozen=True)
class Tag:
    """A mark's format data: ``kind`` (e.g. ``strong``, ``link``, ``break``, ``run``); ``open``/``close``: raw
    source written around its text; ``parent``: index of the enclosing mark in the block's marks;
    ``verbatim``: when set, written instead of the mark's translated text (inline code, images);
    ``index``: the format's own object for this mark (a Word run, a subtitle cue)."""

    kind: str
    open: str = ""
    close: str = ""
    parent: int | None = None
    verbatim: str | None = None
    index: int = -1

    @property
    def words(self) -> bool:
        """Whether the placement must keep this mark's words (:func:`enzh.documents.inline.lost_marks`): every
        mark but a subtitle cue, whose boundaries the subtitle format places again itself."""
        return self.kind != "cue"


@dataclass(frozen=True)
class Text:
    owner: int | None  # innermost mark around the text (None: outside every mark)
    text: str


@dataclass(frozen=True)
class Open:
    mark: int


@dataclass(frozen=True)
class Close:
    mark: int


Event = Text | Open | Close


def tag_of(mark: Mark) -> Tag:
    assert isinstance(mark.tag, Tag), mark.tag
    return mark.tag


def arrange(block: Block, translated: TranslatedBlock) -> list[Event]:
    """Events of ``translated``: text runs and each mark's open/close, nested as in ``block``."""
    text, marks = translated.text, translated.marks
    if len(marks) != len(block.marks):
        raise ValueError(f"placement returned {len(marks)} marks for {len(block.marks)}")
    children: dict[int | None, list[int]] = {None: []}
    for i, mark in enumerate(block.marks):
        children.setdefault(i, [])
        children.setdefault(tag_of(mark).parent, []).append(i)
    events: list[Event] = []

    def visit(node: int | None, low: int, high: int) -> None:  # depth = nesting depth of the markup
        position = low
        for child in children[node]:
            start = min(max(marks[child].start, position), high)
            end = min(max(marks[child].end, start), high)
            if start > position:
                events.append(Text(node, text[position:start]))
            events.append(Open(child))
            visit(child, start, end)
            events.append(Close(child))
            position = end
        if high > position:
            events.append(Text(node, text[position:high]))

    visit(None, 0, len(text))
    return events


def render(block: Block, translated: TranslatedBlock, escape: Sequence[tuple[str, str]] = ()) -> str:
    """The translated block as source text: raw tags around text; ``escape`` pairs applied to the text."""
    out: list[str] = []
    skip = 0  # inside a verbatim mark: its translated text is replaced by the raw source
    for event in arrange(block, translated):
        if isinstance(event, Text):
            if not skip:
                out.append(escape_text(event.text, escape))
        elif isinstance(event, Open):
            tag = tag_of(block.marks[event.mark])
            if not skip:
                out.append(tag.verbatim if tag.verbatim is not None else tag.open)
            skip += tag.verbatim is not None
        else:
            tag = tag_of(block.marks[event.mark])
            skip -= tag.verbatim is not None
            if not skip:
                out.append("" if tag.verbatim is not None else tag.close)
    return "".join(out)


def escape_text(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


@dataclass(frozen=True)
class Token:
    """One unit of output: ``t`` a character of translated text, ``o``/``c`` a mark's raw open/close, ``v`` a
    verbatim mark's raw source (its translated text dropped). ``mark``: the owner (t) or the mark (o, c, v)."""

    kind: str
    text: str
    mark: int | None


def tokens(block: Block, translated: TranslatedBlock) -> list[Token]:
    """The translated block as a token list (characters one by one, raw markup whole)."""
    out: list[Token] = []
    skip = 0
    for event in arrange(block, translated):
        if isinstance(event, Text):
            if not skip:
                out.extend(Token("t", char, event.owner) for char in event.text)
            continue
        tag = tag_of(block.marks[event.mark])
        if isinstance(event, Open):
            if not skip:
                out.append(
                    Token("v", tag.verbatim, event.mark)
                    if tag.verbatim is not None
                    else Token("o", tag.open, event.mark)
                )
            skip += tag.verbatim is not None
        else:
            skip -= tag.verbatim is not None
            if not skip and tag.verbatim is None:
                out.append(Token("c", tag.close, event.mark))
    return out


# A line break reads best right after one of these.
_BREAK_AFTER = set("，。；：！？、,.;:!?)）」』”’")


def break_gaps(
    items: Sequence[Token],
    places: Sequence[tuple[int, float]],
    *,
    outside_marks: bool = False,
    slots: Sequence[int] | None = None,
) -> list[int]:
    """Where to put line breaks: gap indices (a break goes before ``items[g]``), one per ``(segment,
    fraction)``: the source break's line of the text (the text between its ``\\n`` characters, which the
    translation keeps) and its relative position in that line. Line -1 is the whole text. Strictly increasing,
    never at either end, never right after an opening or before a closing mark (with ``outside_marks``: never
    inside one), never next to a newline; near the same relative position, after punctuation when some is close.
    ``slots``: for each break, how many pieces of markup (``o``, ``c``, ``v`` items) come before it in the source;
    the break then goes between the same two pieces of markup in the translation, so that breaks and markup keep
    their order (where no allowed gap is there, the nearest gap there is taken anyway)."""
    if not places:
        return []
    plain = [0]  # characters of text before each gap
    segment = [0]  # line of the text each gap is in
    depth = [0]  # marks open at each gap
    markup = [0]  # pieces of markup before each gap
    for item in items:
        plain.append(plain[-1] + (1 if item.kind == "t" else 0))
        segment.append(segment[-1] + (1 if item.kind == "t" and item.text == "\n" else 0))
        depth.append(depth[-1] + {"o": 1, "c": -1}.get(item.kind, 0))
        markup.append(markup[-1] + (item.kind != "t"))
    bounds: dict[int, list[int]] = {}
    for gap, line in enumerate(segment):
        bounds.setdefault(line, [plain[gap], plain[gap]])[1] = plain[gap]

    def allowed(gap: int) -> bool:
        before, after = items[gap - 1], items[gap]
        if before.kind == "o" or after.kind == "c" or "\n" in (before.text, after.text):
            return False
        if outside_marks and depth[gap]:
            return False
        return not (before.kind == "t" and before.text.isspace() and after.kind == "t" and after.text.isspace())

    candidates = [g for g in range(1, len(items)) if allowed(g)]
    gaps: list[int] = []
    for index, (line, fraction) in enumerate(places):
        slot = slots[index] if slots is not None else None
        # breaks still to place after this one (in the same slot: the others have gaps of their own further on)
        left = sum(1 for later in range(index + 1, len(places)) if slots is None or slots[later] == slot)
        pool = candidates
        if slot is not None:
            pool = [g for g in candidates if markup[g] == slot]
            if len(pool) <= left:  # too few allowed gaps between these two pieces of markup: any gap there
                pool = [
                    g
                    for g in range(1, len(items))
                    if markup[g] == slot and "\n" not in (items[g - 1].text, items[g].text)
                ]
        usable = [g for g in pool if not gaps or g > gaps[-1]]
        usable = usable[: len(usable) - left] if left else usable
        if not usable:  # nowhere valid is left (a very short translation): right after the previous break
            gaps.append(min(gaps[-1] + 1 if gaps else 1, len(items)))
            continue
        low, high = bounds.get(line, [0, plain[-1]])
        want = low + fraction * (high - low)
        reach = max(4.0, 0.15 * (high - low))
        same_line = [g for g in usable if segment[g] == line] or usable
        near_punct = [g for g in same_line if items[g - 1].text in _BREAK_AFTER and abs(plain[g] - want) <= reach]
        gaps.append(min(near_punct or same_line, key=lambda g: (abs(plain[g] - want), g)))
    return gaps


def sentence_breaks(
    text: str, soft: list[tuple[int, str]], hard: list[tuple[int, str]]
) -> tuple[str, tuple[tuple[int, float, str], ...], tuple[str, ...]]:
    """Line breaks of a block whose text has a space in their place (``soft``: (position, raw)) or a newline
    (``hard``). A soft break between two sentences becomes a newline of the text, kept exactly there by the
    translation; the others are placed by :func:`break_gaps` from their line of the text and relative position
    in it. Returns the text, those places (line, fraction, raw) and the raw of each newline, in order."""
    ends: set[int] = set()
    position = 0
    for piece in split_text(text):
        position += len(piece.text)
        ends.update(range(position, position + len(piece.separator)))
        position += len(piece.separator)
    chars = list(text)
    newlines = dict(hard)
    inside: list[tuple[int, str]] = []
    for at, raw in soft:
        if at in ends:
            chars[at] = "\n"
            newlines[at] = raw
        else:
            inside.append((at, raw))
    text = "".join(chars)
    line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]
    places = []
    for at, raw in inside:
        line = max(k for k, start in enumerate(line_starts) if start <= at)
        end = line_starts[line + 1] - 1 if line + 1 < len(line_starts) else len(text)
        places.append((line, (at - line_starts[line]) / max(end - line_starts[line], 1), raw))
    return text, tuple(places), tuple(newlines[at] for at in sorted(newlines))
