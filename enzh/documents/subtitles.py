"""SubRip (.srt) and WebVTT (.vtt): each cue's text is translated; numbers, timings, cue settings, the WEBVTT
header and NOTE, STYLE and REGION blocks come out byte for byte.

A line-based rewriter (no subtitle library: the ones tested re-format timings on write). The file is cut
into blocks at blank lines; in a block, a line with ``-->`` is a timing line, the lines before it (the SRT
number, a VTT cue identifier) and it are copied, the lines after it are the cue text. Only those lines change;
each cue keeps its number of lines when the translation allows it (no empty lines are written).

A sentence spanning several cues (a cue that does not end in ``.``, ``?``, ``!``, ``…`` and the next does not
start a new speaker with ``-``) is translated whole: up to four such cues are one block whose cues are marks,
so each cue gets the part of the translation placed over its words, in order, and its timing stays. Tags
(``<i>``, ``<b>``, ``<font …>``, VTT ``<v Name>``, ``<c.x>``, timestamps, SRT ``{\\an8}``) are marks or points
inside their cue; VTT entities are decoded for the model and ``&``, ``<``, ``>`` escaped again.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.limits import check_depth
from enzh.documents.markup import Tag, Token, break_gaps, sentence_breaks, tag_of, tokens
from enzh.runtime.segment import needs_translation

logger = logging.getLogger("enzh")

_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
_TAG = re.compile(r"<[^<>\r\n]*>|\{\\[^{}\r\n]*\}")
_OPEN_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9]*)")
_CLOSE_NAME = re.compile(r"</([A-Za-z][A-Za-z0-9]*)\s*>")
_VTT_VERBATIM = re.compile(r"(?:NOTE|STYLE|REGION|WEBVTT)(?:[ \t]|$)")
_SENTENCE_END = re.compile(r"[.?!…。？！♪][\"'”’)\]]*$")
_DASH = ("-", "–", "—")  # a cue line starting with one of these is a new speaker
_SPEAKER = re.compile(r"\s*[-–—]\s*")
_MAX_GROUP = 4
_BLANK_CUE = "……"  # written for a cue left without text by the placement (a cue cannot be empty)


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
    places: tuple[tuple[int, float, str], ...] = ()
    dashes: dict[int, str] = field(default_factory=dict)  # line of the text -> its speaker dash, copied


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
    """Plain text, tag marks and line breaks of a cue (tags are kept as raw source)."""
    text = ""
    marks: list[_Raw] = []  # in document order; a tag opened and never closed stays a point
    parents: list[int | None] = []
    stack: list[tuple[str, int]] = []  # open tags: (name, mark index)
    soft: list[tuple[int, str]] = []
    hard: list[tuple[int, str]] = []
    for number, line in enumerate(texts):
        dash = _SPEAKER.match(line)
        if number:
            (hard if dash else soft).append((len(text), cue.newline))
            text += "\n" if dash else " "
        if dash:  # the model sees the line without it; it is written back at the start of the same line
            cue.dashes[text.count("\n")] = dash.group()
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
    cue.text, cue.places, _ = sentence_breaks(text, soft, hard)


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
    """Each cue's new text lines, from its share of the translation (text outside every cue goes to the cue
    before it, or to the first). When the placement leaves a cue of a group without text, the group's
    translation is cut again in proportion to the cues' source lengths, between tags."""
    shares: list[list[Token]] = [[] for _ in group]
    current = 0
    cue_of = {i: tag_of(m).index for i, m in enumerate(block.marks) if tag_of(m).kind == "cue"}
    for item in tokens(block, translated):
        if item.kind in ("o", "c") and item.mark in cue_of:
            current = cue_of[item.mark]
            continue
        shares[current].append(item)
    if len(group) > 1 and not all(_has_text(share) for share in shares):
        flat = [item for share in shares for item in share]
        ends = [m.end for m in block.marks if tag_of(m).kind == "cue"][:-1]
        gaps = break_gaps(flat, [(-1, end / max(len(block.text), 1)) for end in ends], outside_marks=True)
        shares = [flat[a:b] for a, b in zip([0, *gaps], [*gaps, len(flat)], strict=True)]
    return [_cue_lines(cue, items, vtt) for cue, items in zip(group, shares, strict=True)]


def _has_text(items: list[Token]) -> bool:
    return any(item.kind == "t" and not item.text.isspace() for item in items)


def _cue_lines(cue: _Cue, items: list[Token], vtt: bool) -> list[str]:
    gaps = set(break_gaps(items, [(line, fraction) for line, fraction, _ in cue.places]))
    out: list[str] = [cue.dashes.get(0, "")]
    line = 0
    for index, item in enumerate(items):
        if index in gaps:
            out.append("\n")
        if item.kind == "t" and item.text == "\n":
            line += 1
            out.append("\n" + cue.dashes.get(line, ""))
            continue
        text = item.text
        if item.kind == "t" and vtt:
            text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out.append(text)
    lines = [line.strip(" \t") for line in (cue.prefix + "".join(out) + cue.suffix).split("\n")]
    lines = [line for line in lines if line]
    if not "".join(_TAG.sub("", line) for line in lines).strip():
        logger.warning("a cue got no text from the translation of its sentence; writing %s", _BLANK_CUE)
        lines = [cue.prefix + "".join(item.text for item in items if item.kind != "t") + _BLANK_CUE + cue.suffix]
    return lines


SRT = SubtitleFormat("srt", (".srt",), vtt=False)
VTT = SubtitleFormat("vtt", (".vtt",), vtt=True)
