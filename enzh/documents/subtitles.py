"""SubRip (.srt) and WebVTT (.vtt): each cue's text is translated; numbers, timings, cue settings, the WEBVTT
header and NOTE, STYLE and REGION blocks come out byte for byte.

A line-based rewriter (no subtitle library: the ones tested re-format timings on write). The file is cut
into blocks at blank lines; in a block, a line with ``-->`` is a timing line, the lines before it (the SRT
number, a VTT cue identifier) and it are copied, the lines after it are the cue text. Only those lines change,
and only their text between tags: each cue keeps its number of lines and its tags, each on its line (the
source's tags, line breaks and cues are a skeleton the translation is written into, :func:`_cue_texts`). A line
in the other language than the source's (a bilingual subtitle's Chinese line) or without words is copied.

A sentence spanning several cues (a cue that does not end in ``.``, ``?``, ``!``, ``…`` and the next does not
start a new speaker with ``-``) is translated whole: up to four such cues are one block whose cues are marks,
so each cue gets the part of the translation placed over its words, in order, and its timing stays. Tags
(``<i>``, ``<b>``, ``<font …>``, VTT ``<v Name>``, ``<c.x>``, timestamps, SRT ``{\\an8}``) are marks or points
inside their cue; VTT entities are decoded for the model and ``&``, ``<``, ``>`` escaped again.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.limits import check_depth
from enzh.documents.markup import Tag, Token, sentence_breaks, tag_of, tokens
from enzh.documents.shares import cut, share_out
from enzh.runtime.router import detect_script
from enzh.runtime.segment import needs_translation

_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
_TAG = re.compile(r"<[^<>\r\n]*>|\{\\[^{}\r\n]*\}")
_OPEN_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9]*)")
_CLOSE_NAME = re.compile(r"</([A-Za-z][A-Za-z0-9]*)\s*>")
_VTT_VERBATIM = re.compile(r"(?:NOTE|STYLE|REGION|WEBVTT)(?:[ \t]|$)")
_SENTENCE_END = re.compile(r"[.?!…。？！♪][\"'”’)\]]*$")
_DASH = ("-", "–", "—")  # a cue line starting with one of these is a new speaker
_SPEAKER = re.compile(r"\s*[-–—]\s*")
_MAX_GROUP = 4
_BREAK = re.compile(r"([^\n]?)\n(?=([^\n]?))")
_WIDE = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")  # CJK and its punctuation


@dataclass
class _Cue:
    """A cue's text lines (indices into the file's lines) and what the model sees."""

    first: int
    last: int  # inclusive
    newline: str
    text: str = ""
    marks: list[tuple[int, int, Tag]] = field(default_factory=list)  # over text; parents local to the cue
    prefix: str = ""  # tags before any text of the cue, copied
    suffix: str = ""
    breaks: list[int] = field(default_factory=list)  # offsets in text of the characters between its lines
    dashes: dict[int, str] = field(default_factory=dict)  # line of the text -> its speaker dash, copied
    kept: dict[int, str] = field(default_factory=dict)  # line of the cue -> the line, copied (other language)


@dataclass
class _Raw:
    start: int
    end: int
    raw: str
    close: str | None = None


@dataclass(frozen=True)
class SubtitleFormat:
    name: str
    extensions: tuple[str, ...]
    vtt: bool
    binary: bool = False

    def read(self, source: str, field: str | None = None) -> Units:
        lines = [(m.group(1), m.group(2)) for m in _LINE.finditer(source) if m.group()]
        cues = _find_cues(lines, self.vtt)
        for cue in cues:
            _parse_cue(cue, [lines[i][0] for i in range(cue.first, cue.last + 1)], self.vtt)
        groups = _group(cues, lines)
        blocks = [_group_block(group) for group in groups]
        return Units(blocks, (lines, groups))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        lines, groups = units.layout
        replaced: dict[int, list[str]] = {}
        cue_at = {cue.first: cue for group in groups for cue in group}
        for block, group, done in zip(units.blocks, groups, translated, strict=True):
            for cue, text in zip(group, _cue_texts(block, done, group, self.vtt), strict=True):
                replaced[cue.first] = text
                replaced.update({i: [] for i in range(cue.first + 1, cue.last + 1)})
        out: list[str] = []
        for index, (content, newline) in enumerate(lines):
            if index not in replaced:
                out.append(content + newline)
            elif replaced[index]:
                cue = cue_at[index]
                out.append(cue.newline.join(replaced[index]) + lines[cue.last][1])
        return "".join(out)


def _find_cues(lines: list[tuple[str, str]], vtt: bool) -> list[_Cue]:
    """The cue text of every cue: the lines after a timing line, up to a blank line or the next cue."""
    cues: list[_Cue] = []
    index = 0
    while index < len(lines):
        if not lines[index][0].strip():
            index += 1
            continue
        end = index
        while end < len(lines) and lines[end][0].strip():
            end += 1
        block = range(index, end)
        if not (vtt and _VTT_VERBATIM.match(lines[index][0])):
            timings = [i for i in block if "-->" in lines[i][0]]
            for k, timing in enumerate(timings):
                stop = timings[k + 1] if k + 1 < len(timings) else end
                if stop < end and stop - 1 > timing and lines[stop - 1][0].strip().isdigit():
                    stop -= 1  # an SRT number right before the next timing line (no blank line between cues)
                if stop > timing + 1:
                    cues.append(_Cue(timing + 1, stop - 1, lines[timing + 1][1] or lines[timing][1] or "\n"))
        index = end
    return cues


def _parse_cue(cue: _Cue, texts: list[str], vtt: bool) -> None:
    """Plain text, tag marks and line breaks of a cue (tags are kept as raw source); lines in another language
    than the source's are kept aside, whole."""
    text = ""
    marks: list[_Raw] = []  # in document order; a tag opened and never closed stays a point
    parents: list[int | None] = []
    stack: list[tuple[str, int]] = []  # open tags: (name, mark index)
    soft: list[tuple[int, str]] = []
    hard: list[tuple[int, str]] = []
    kept = _kept_lines([_decode(_TAG.sub("", line), vtt) for line in texts])
    number = -1  # lines of the text so far, less one
    for at, line in enumerate(texts):
        if at in kept:
            cue.kept[at] = line
            continue
        number += 1
        dash = _SPEAKER.match(line)
        if number:
            cue.breaks.append(len(text))
            (hard if dash else soft).append((len(text), cue.newline))
            text += "\n" if dash else " "
        if dash:  # the model sees the line without it; it is written back at the start of the same line
            cue.dashes[number] = dash.group()
            line = line[dash.end() :]
        position = 0
        for match in _TAG.finditer(line):
            text += _decode(line[position : match.start()], vtt)
            position = match.end()
            raw = match.group()
            opened, closed = _OPEN_NAME.match(raw), _CLOSE_NAME.fullmatch(raw)
            names = [name for name, _ in stack]
            if closed and closed.group(1).lower() in names:
                where = len(names) - 1 - names[::-1].index(closed.group(1).lower())
                slot = marks[stack[where][1]]
                slot.end, slot.close = len(text), raw
                del stack[where:]  # tags opened inside it and never closed stay points
                continue
            parents.append(stack[-1][1] if stack else None)
            marks.append(_Raw(len(text), len(text), raw))
            if opened and not raw.endswith("/>"):
                check_depth(len(stack) + 1)  # refused while reading: each tag looks through the open ones
                stack.append((opened.group(1).lower(), len(marks) - 1))
        text += _decode(line[position:], vtt)
    tags = [Tag("tag", m.raw, m.close) if m.close is not None else Tag("point", verbatim=m.raw) for m in marks]
    for i, parent in enumerate(parents):  # a point is nobody's parent: use the nearest real enclosing tag
        while parent is not None and tags[parent].kind == "point":
            parent = parents[parent]
        parents[i] = parent
    # Top-level points before the first or after the last character of text stay outside the translation.
    first, last = 0, len(marks)
    while first < last and tags[first].kind == "point" and parents[first] is None and marks[first].start == 0:
        cue.prefix += tags[first].verbatim or ""
        first += 1
    while (
        last > first
        and tags[last - 1].kind == "point"
        and parents[last - 1] is None
        and marks[last - 1].start == len(text)
    ):
        cue.suffix = (tags[last - 1].verbatim or "") + cue.suffix
        last -= 1
    cue.marks = [
        (marks[i].start, marks[i].end, replace(tags[i], parent=_shift(parents[i], first))) for i in range(first, last)
    ]
    cue.text, _, _ = sentence_breaks(text, soft, hard)


def _kept_lines(plain: list[str]) -> set[int]:
    """The lines of a cue (their text without tags) that are copied as they are: those without words to
    translate, and those in another language than the source's (:func:`enzh.runtime.router.detect_script`: a
    bilingual subtitle's Chinese line when translating English, its English line when translating Chinese).
    While a document's language is told (every script read), a cue with lines in both languages reads as
    English: its Chinese lines are taken as the translation already there."""
    latin, han = needs_translation("a"), needs_translation("中")
    scripts = [detect_script(line) for line in plain]
    if latin and han:
        bilingual = "en" in scripts and "zh" in scripts
        return {i for i, line in enumerate(plain) if not line.strip() or (bilingual and scripts[i] == "zh")}
    other = "zh" if latin else "en"
    return {i for i, line in enumerate(plain) if not needs_translation(line) or scripts[i] == other}


def _shift(parent: int | None, by: int) -> int | None:
    return None if parent is None else parent - by


def _decode(text: str, vtt: bool) -> str:
    return html.unescape(text) if vtt and "&" in text else text


def _group(cues: list[_Cue], lines: list[tuple[str, str]]) -> list[list[_Cue]]:
    """Cues to translate, grouped: a cue whose text does not end a sentence continues into the next one."""
    groups: list[list[_Cue]] = []
    previous: _Cue | None = None
    for cue in cues:
        if not needs_translation(cue.text):
            previous = None
            continue
        adjacent = previous is not None and _only_timing_between(previous, cue, lines)
        continues = (
            adjacent
            and previous is not None
            and not _SENTENCE_END.search(previous.text.rstrip())
            and not cue.text.lstrip().startswith(_DASH)
            and len(groups[-1]) < _MAX_GROUP
        )
        if continues:
            groups[-1].append(cue)
        else:
            groups.append([cue])
        previous = cue
    return groups


def _only_timing_between(first: _Cue, second: _Cue, lines: list[tuple[str, str]]) -> bool:
    """True when only blank lines, a cue number and a timing line separate two cues (no NOTE, no other block)."""
    between = [lines[i][0] for i in range(first.last + 1, second.first) if lines[i][0].strip()]
    return 1 <= len(between) <= 2 and "-->" in between[-1]


def _group_block(group: list[_Cue]) -> Block:
    """One block for a group: the cues' texts joined by spaces, each cue a mark over its own text."""
    text = ""
    marks: list[Mark] = []
    for number, cue in enumerate(group):
        if number:
            text += " "
        base, slot = len(text), len(marks)
        marks.append(Mark(base, base + len(cue.text), Tag("cue", index=number)))
        for start, end, tag in cue.marks:
            parent = slot if tag.parent is None else slot + 1 + tag.parent
            marks.append(Mark(base + start, base + end, Tag(tag.kind, tag.open, tag.close, parent, tag.verbatim)))
        text += cue.text
    return Block(text, tuple(marks))


def _cue_texts(block: Block, translated: TranslatedBlock, group: list[_Cue], vtt: bool) -> list[list[str]]:
    """Each cue's new lines. The source's tags, line breaks and cue boundaries are a fixed skeleton, in order;
    the translation's text falls between its tags (the placement's marks, which never leave their cue) and is
    written in the same places: between two tags where it fell, cut in proportion to the source's lines when
    that place held a line break; text outside every cue goes to the cue before it. A place whose source had
    words and that got none shares the text of its neighbour (:func:`enzh.documents.shares.share_out`), so no
    line, tag or cue that had words comes back without."""
    source = tokens(block, TranslatedBlock(block.text, block.marks))
    output = tokens(block, translated)
    cue_of = {i: tag_of(m).index for i, m in enumerate(block.marks) if tag_of(m).kind == "cue"}
    bases = [m.start for m in block.marks if tag_of(m).kind == "cue"]
    breaks = {
        base + at: (number, k + 1)
        for number, (base, cue) in enumerate(zip(bases, group, strict=True))
        for k, at in enumerate(cue.breaks)
    }
    # The skeleton: ("s", token) a tag or cue boundary, ("b", line) a break before that line of the cue, and
    # ("t", slot) a place for text, after every other item; slots are numbered in order.
    skeleton: list[tuple[str, object]] = []
    pieces: list[list[str]] = [[]]  # each slot's source text, in characters (joined below: linear)
    slot_gap: list[int] = [0]  # the gap (between structural tokens) each slot is in
    slot_cue: list[int | None] = [None]
    gap, position, owner = 0, 0, None
    for item in source:
        if item.kind == "t":
            if position in breaks:
                skeleton.append(("b", breaks[position][1]))
                pieces.append([])
                slot_gap.append(gap)
                slot_cue.append(owner)
            else:
                pieces[-1].append(item.text)
            position += 1
            continue
        skeleton.append(("s", item))
        if item.mark in cue_of:
            owner = cue_of[item.mark] if item.kind == "o" else None
        gap += 1
        pieces.append([])
        slot_gap.append(gap)
        slot_cue.append(owner)
    slot_source = ["".join(chars) for chars in pieces]
    fallen: list[list[str]] = [[]]
    for item in output:
        if item.kind == "t":
            fallen[-1].append(item.text)
        else:
            fallen.append([])
    gaps = ["".join(chars) for chars in fallen]
    shares = [""] * len(slot_source)
    by_gap: dict[int, list[int]] = {}
    for slot, where in enumerate(slot_gap):
        by_gap.setdefault(where, []).append(slot)
    for where, slots in by_gap.items():
        for slot, piece in zip(slots, _split_gap(gaps[where], [slot_source[i] for i in slots]), strict=True):
            shares[slot] = piece
    # Text outside every cue joins the last slot of the cue before it (the first cue's first, at the start).
    inside = [slot for slot, owner in enumerate(slot_cue) if owner is not None]
    for slot, owner in enumerate(slot_cue):
        if owner is None and shares[slot]:
            before = [i for i in inside if i < slot]
            target = before[-1] if before else inside[0]
            shares[target] = shares[target] + shares[slot] if before else shares[slot] + shares[target]
            shares[slot] = ""
    texts = share_out([shares[i] for i in inside], [slot_source[i] for i in inside])
    placed = dict(zip(inside, texts, strict=True))
    lines: list[list[list[str]]] = [[[cue.dashes.get(0, ""), cue.prefix]] for cue in group]  # pieces of lines
    current: int | None = None
    for slot, in_cue in enumerate(slot_cue):
        if slot:  # the item before this slot
            kind, value = skeleton[slot - 1]
            if kind == "b":
                assert current is not None
                lines[current].append([group[current].dashes.get(int(value), "")])  # type: ignore[call-overload]
            else:
                assert isinstance(value, Token)
                if value.mark in cue_of:
                    current = cue_of[value.mark] if value.kind == "o" else current
                elif current is not None:
                    lines[current][-1].append(value.text)
        if in_cue is not None:
            text = _unbreak(placed[slot])
            if vtt:
                text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            lines[in_cue][-1].append(text)
    out = []
    for cue, cue_lines in zip(group, lines, strict=True):
        cue_lines[-1].append(cue.suffix)
        written = ["".join(line).strip(" \t") for line in cue_lines]
        for at in sorted(cue.kept):
            written.insert(at, cue.kept[at])
        out.append(written)
    return out


def _split_gap(text: str, sources: list[str]) -> list[str]:
    """The translated text that fell in one place between two tags, cut over the source's lines there: at the
    translation's own line breaks when it has one per source break, else in proportion to the lines' lengths."""
    if len(sources) == 1:
        return [text]
    pieces = text.split("\n")
    if len(pieces) == len(sources) and all(p.strip() or not s.strip() for p, s in zip(pieces, sources, strict=True)):
        return pieces
    return cut(_unbreak(text), [len(s.strip()) for s in sources])


def _unbreak(text: str) -> str:
    """The translation's line breaks inside one line: a space between words, nothing next to Chinese."""
    return _BREAK.sub(lambda m: m.group(1) + ("" if _WIDE.match(m.group(1)) or _WIDE.match(m.group(2)) else " "), text)


SRT = SubtitleFormat("srt", (".srt",), vtt=False)
VTT = SubtitleFormat("vtt", (".vtt",), vtt=True)
