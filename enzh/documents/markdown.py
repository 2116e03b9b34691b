"""Markdown (CommonMark with tables and strikethrough): the text of headings, paragraphs, list items, quotes
and table cells is translated; everything else is kept byte for byte.

markdown-it-py finds the inline content of every block and its source lines; only the character range of
that content is rewritten, so block prefixes (``#``, ``>``, ``-``, ``|``, indentation), fenced and indented
code, HTML blocks, link reference definitions and front matter never change. Inside the content, emphasis,
strikethrough and link text are marks over the translated words (their raw markup and every URL and title
are re-emitted as written); inline code, images, autolinks, inline HTML and reference links written as
``[label]`` are copied verbatim (the model sees the text of code and labels, not images, URLs or HTML).
Entities and backslash escapes are decoded for the model. A paragraph is translated whole and re-broken at
the same number of soft line breaks (a break between two sentences stays between them; one inside a sentence
goes near the same relative position, after punctuation when some is close, and between the same two pieces
of markup), so the output has exactly the input's lines. Every rendered block is read back with markdown-it
and must give the source's inline markup; else it is written again with spaces outside the emphasis
delimiters, else the source is kept (docs/documents.md).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.limits import check_depth
from enzh.documents.markup import Tag, Token, break_gaps, sentence_breaks, tag_of, tokens
from enzh.runtime.optional import import_optional
from enzh.runtime.segment import needs_translation

_EMPHASIS = {"em_open": "em", "strong_open": "strong", "s_open": "s"}
_CLOSERS = {"em_close": "em", "strong_close": "strong", "s_close": "s"}
_ESCAPES = {c: "\\" + c for c in "\\*_`[]<"}
_ENTITY_LIKE = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?:.*\r?\n)*?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE_MARKUP = re.compile(r"[#>+=|-]")
_SHORT_LINES = 40  # a paragraph of 3 lines or more, shorter than this on average, is translated line by line
logger = logging.getLogger("enzh")


@dataclass(frozen=True)
class _Atom:
    """A piece of an inline token's content: [start, end) in the content, what the model sees, and its role."""

    kind: str  # text, open, close, verbatim, soft, hard
    start: int
    end: int
    plain: str = ""
    mark: str = ""  # em, strong, s, link (open/close)


@dataclass(frozen=True)
class _Region:
    """Where a translated block goes: source[start:end], its soft breaks and the raw source of its hard breaks."""

    start: int
    end: int
    soft: tuple[tuple[int, float, str], ...]  # (line of the text, relative position in it, raw source)
    hard: tuple[str, ...]  # raw source of each "\n" of the text
    table: bool
    slots: tuple[int, ...] = ()  # per soft break: the pieces of markup before it in the source
    verbatims: tuple[tuple[int, str], ...] = ()  # (mark, its text in the inline content) where the raw differs
    signature: tuple[Any, ...] = ()  # the inline tokens' structure (markup_signature), which the output must have


def _parser() -> Any:
    markdown_it = import_optional("markdown_it", "Markdown translation")
    # text_join off: escapes and entities stay separate tokens, so every text token is verbatim source.
    return markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable("text_join")


@dataclass(frozen=True)
class MarkdownFormat:
    name: str = "md"
    extensions: tuple[str, ...] = (".md", ".markdown")
    binary: bool = False

    def read(self, source: str, field: str | None = None) -> Units:
        lines = _NEWLINE.split(source)  # as markdown-it counts them: \r\n, \r and \n all end a line
        starts = [0] + [match.end() for match in _NEWLINE.finditer(source)]
        front = _FRONT_MATTER.match(source)
        front_lines = source[: front.end()].count("\n") if front else 0
        cursors: dict[int, int] = {}
        blocks: list[Block] = []
        regions: list[_Region] = []
        previous = ""
        env: dict[str, Any] = {}
        for token in _parser().parse(source, env):
            if token.type == "inline" and token.map is not None and token.map[0] >= front_lines:
                found = _inline_block(token, source, lines, starts, cursors, table=previous in ("th_open", "td_open"))
                if found is not None and needs_translation(_outside_verbatim(found[0])):
                    blocks.append(found[0])
                    regions.append(found[1])
            previous = token.type
        return Units(blocks, (source, regions, env))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        source, regions, env = units.layout
        parser = _parser()
        out: list[str] = []
        last = 0
        kept = 0
        for block, region, done in zip(units.blocks, regions, translated, strict=True):
            out.append(source[last : region.start])
            for spaced in (False, True):
                if _verified(parser, env, _render(block, done, region, spaced=spaced, content=True), region):
                    out.append(_render(block, done, region, spaced=spaced))
                    break
            else:  # no rendering reads back as the same markup: the source is kept (its structure is exact)
                out.append(source[region.start : region.end])
                kept += 1
            last = region.end
        out.append(source[last:])
        if kept:
            logger.warning(
                "Markdown: %d of %d blocks kept untranslated (their translation read back as other markup)",
                kept,
                len(regions),
            )
        return "".join(out)


def _outside_verbatim(block: Block) -> str:
    """The block's text without what is copied verbatim (a cell holding only inline code is not translated)."""
    text = block.text
    for mark in reversed(block.marks):
        if tag_of(mark).verbatim is not None:
            text = text[: mark.start] + " " + text[mark.end :]
    return text


def _line_map(token: Any, lines: list[str], starts: list[int], cursors: dict[int, int]) -> list[tuple[int, int, int]]:
    """(content offset, source offset, length) of each content line; raises ValueError when one is not found."""
    table, offset = [], 0
    for k, content_line in enumerate(token.content.split("\n")):
        number = token.map[0] + k
        column = lines[number].index(content_line, cursors.get(number, 0))
        cursors[number] = column + len(content_line)
        table.append((offset, starts[number] + column, len(content_line)))
        offset += len(content_line) + 1
    return table


def _inline_block(
    token: Any, source: str, lines: list[str], starts: list[int], cursors: dict[int, int], *, table: bool
) -> tuple[Block, _Region] | None:
    """The block of one inline token and where it goes, or None when its source cannot be mapped exactly
    (then it is left untranslated)."""
    try:
        line_map = _line_map(token, lines, starts, cursors)
        atoms = _atoms(token)
    except (ValueError, IndexError):
        return None

    def to_source(offset: int) -> int:
        for content_offset, source_offset, length in line_map:
            if content_offset <= offset <= content_offset + length:
                return source_offset + offset - content_offset
        raise ValueError(offset)

    try:
        raw = [source[to_source(a.start) : to_source(a.end)] for a in atoms]
    except ValueError:
        return None
    if any(
        a.kind == "text" and a.plain == token.content[a.start : a.end] != r for a, r in zip(atoms, raw, strict=True)
    ):
        return None
    text = ""
    marks: list[Mark] = []
    open_marks: list[tuple[int, int, str, int]] = []  # (atom index, mark start, raw open, its number in order)
    soft: list[tuple[int, str]] = []  # (position of the space that stands for it, raw source)
    hard: list[tuple[int, str]] = []
    spans: dict[int, tuple[int, int, Tag]] = {}
    order: list[int] = []  # atom index of each mark, in order of opening
    events = 0  # pieces of markup (opening, closing, verbatim) so far
    slots: list[int] = []  # of each soft break
    verbatims: list[tuple[int, str]] = []
    runs: list[tuple[int, int, int | None, list[int]]] = []  # text between two pieces of markup with soft breaks
    run_from = 0  # where the text since the last piece of markup starts
    for i, (atom, atom_raw) in enumerate(zip(atoms, raw, strict=True)):
        if atom.kind in ("open", "close", "verbatim"):
            events += 1
            if runs and runs[-1][1] < 0:
                runs[-1] = (runs[-1][0], len(text), *runs[-1][2:])
            run_from = len(text) + (len(atom.plain) if atom.kind == "verbatim" else 0)
        parent = open_marks[-1][3] if open_marks else None
        if atom.kind == "open":
            check_depth(len(open_marks) + 1)  # refused while reading (markdown-it itself nests them flat)
            open_marks.append((i, len(text), atom_raw, len(order)))
            order.append(i)
        elif atom.kind == "close":
            j, start, raw_open, _ = open_marks.pop()
            parent = open_marks[-1][3] if open_marks else None
            spans[j] = (start, len(text), Tag(atoms[j].mark, raw_open, atom_raw, parent))
        elif atom.kind == "verbatim":
            if token.content[atom.start : atom.end] != atom_raw:  # a line prefix inside (code across lines)
                verbatims.append((len(order), token.content[atom.start : atom.end]))
            order.append(i)
            spans[i] = (len(text), len(text) + len(atom.plain), Tag("verbatim", parent=parent, verbatim=atom_raw))
            text += atom.plain
        elif atom.kind == "soft":
            if not runs or runs[-1][1] >= 0:
                runs.append((run_from, -1, parent, []))
            runs[-1][3].append(len(text))
            soft.append((len(text), atom_raw))
            slots.append(events)
            text += " "
        elif atom.kind == "hard":
            hard.append((len(text), atom_raw))
            text += "\n"
        else:
            text += atom.plain
    if runs and runs[-1][1] < 0:
        runs[-1] = (runs[-1][0], len(text), *runs[-1][2:])
    marks = [Mark(*spans[i]) for i in order]
    if len(soft) >= 2 and len(text) / (len(soft) + 1) < _SHORT_LINES:  # short lines (a list, an address)
        chars = list(text)
        for at, _ in soft:
            chars[at] = "\n"
        text = "".join(chars)
        hard = sorted(hard + soft)
        soft, slots, runs = [], [], []
    broken, places, newlines = sentence_breaks(text, soft, hard)
    slots = [slot for (at, _), slot in zip(soft, slots, strict=True) if broken[at] != "\n"]
    # A run of text with a soft break in a sentence must keep words of its own, or the break has no place between
    # the same two pieces of markup: it becomes an invisible mark (kind "line"), which the placement keeps non-empty
    # (in a block with markup only).
    kept_runs = [
        (start, end, parent)
        for start, end, parent, breaks in runs
        if marks and any(broken[at] != "\n" for at in breaks) and any(char.isalnum() for char in text[start:end])
    ]
    marks, renumber = _with_runs(marks, kept_runs)
    verbatims = [(renumber[number], inline) for number, inline in verbatims]
    region = _Region(
        to_source(0),
        to_source(len(token.content)),
        places,
        newlines,
        table,
        slots=tuple(slots),
        signature=markup_signature(token.children),
        verbatims=tuple(verbatims),
    )
    return Block(broken, tuple(marks)), region


def _with_runs(marks: list[Mark], runs: list[tuple[int, int, int | None]]) -> tuple[list[Mark], list[int]]:
    """``marks`` with a "line" mark for each run (start, end, parent number), in document order (a run comes after
    the marks that start where it does: they open before its text); and each old mark's new number."""
    if not runs:
        return marks, list(range(len(marks)))
    keyed = [(m.start, 0, n, m) for n, m in enumerate(marks)]
    keyed += [
        (start, 1, n, Mark(start, end, Tag("line", parent=parent))) for n, (start, end, parent) in enumerate(runs)
    ]
    keyed.sort(key=lambda item: item[:3])
    renumber = [0] * len(marks)
    for new, (_, is_run, old, _) in enumerate(keyed):
        if not is_run:
            renumber[old] = new
    out = []
    for _, _, _, mark in keyed:
        tag = tag_of(mark)
        out.append(mark if tag.parent is None else replace(mark, tag=replace(tag, parent=renumber[tag.parent])))
    return out, renumber


def markup_signature(children: Sequence[Any] | None) -> tuple[Any, ...]:
    """The structure of an inline token's children: every token but text, with its markup, attributes and (code,
    HTML) content; line breaks included. A translation must read back with the same signature."""
    out = []
    for child in children or []:
        if child.type in ("text", "text_special"):
            continue
        content = child.content if child.type in ("code_inline", "html_inline") else None
        out.append((child.type, child.markup, tuple(sorted((child.attrs or {}).items())), child.info, content))
    return tuple(out)


def _verified(parser: Any, env: dict[str, Any], content: str, region: _Region) -> bool:
    """Whether ``content`` (a rendered block, line breaks as in the inline content) reads back as the source's
    markup: the same signature, and no blank line (it would end the paragraph)."""
    if any(not line.strip() for line in content.split("\n")):
        return False
    found = parser.parseInline(content, dict(env))
    return bool(found) and markup_signature(found[0].children) == region.signature


def _atoms(token: Any) -> list[_Atom]:  # one branch per inline token type; long but flat
    """Tile the token's content with atoms; ValueError when the children do not match the content."""
    content: str = token.content
    atoms: list[_Atom] = []
    cursor = 0
    in_autolink = False

    def expect(text: str) -> int:
        if not content.startswith(text, cursor):
            raise ValueError(text)
        return cursor + len(text)

    for child in token.children or []:
        kind = child.type
        if in_autolink:
            in_autolink = kind != "link_close"
            continue
        if kind == "text":
            if not child.content:
                continue
            if atoms and atoms[-1].kind in ("soft", "hard"):  # the next line's indentation belongs to the break
                skip = len(content[cursor:]) - len(content[cursor:].lstrip(" \t"))
                atoms[-1] = replace(atoms[-1], end=cursor + skip)
                cursor += skip
            end = expect(child.content)
            atoms.append(_Atom("text", cursor, end, child.content))
        elif kind == "text_special":
            end = expect(child.markup)
            atoms.append(_Atom("special", cursor, end, child.content))
        elif kind in ("softbreak", "hardbreak"):
            end = cursor
            if kind == "hardbreak" and content.startswith("\\\n", cursor):
                end = cursor + 1
            while content[end] in " \t":
                end += 1
            if content[end] != "\n":
                raise ValueError("break")
            atoms.append(_Atom("soft" if kind == "softbreak" else "hard", cursor, end + 1))
            end += 1
        elif kind in _EMPHASIS or kind in _CLOSERS:
            end = expect(child.markup)
            role = "open" if kind in _EMPHASIS else "close"
            atoms.append(_Atom(role, cursor, end, mark=_EMPHASIS.get(kind) or _CLOSERS[kind]))
        elif kind == "code_inline":
            end = expect(child.markup)
            closing = re.compile(r"(?<!`)" + re.escape(child.markup) + r"(?!`)").search(content, end)
            if closing is None:
                raise ValueError("code")
            end = closing.end()
            atoms.append(_Atom("verbatim", cursor, end, child.content))
        elif kind == "html_inline":
            end = expect(child.content)
            atoms.append(_Atom("verbatim", cursor, end))
        elif kind == "image":
            end = _skip_label(content, expect("!["))
            end, _ = _skip_link_tail(content, end)
            atoms.append(_Atom("verbatim", cursor, end))  # a point: the model never sees the alt text
        elif kind == "link_open" and child.markup == "autolink":
            end = content.index(">", expect("<")) + 1
            atoms.append(_Atom("verbatim", cursor, end))  # a point: a URL is not for the model
            in_autolink = True
        elif kind == "link_open":
            end = expect("[")
            atoms.append(_Atom("open", cursor, end, mark="link"))
        elif kind == "link_close":
            end, label_is_text = _skip_link_tail(content, expect("]"))
            if label_is_text:  # [label] or [label][]: the text is the reference, so it cannot change
                opened = max(i for i, a in enumerate(atoms) if a.kind == "open" and a.mark == "link")
                plain = "".join(a.plain for a in atoms[opened:] if a.kind in ("text", "special", "verbatim"))
                start = atoms[opened].start
                del atoms[opened:]
                atoms.append(_Atom("verbatim", start, end, plain))
            else:
                atoms.append(_Atom("close", cursor, end, mark="link"))
        else:
            raise ValueError(kind)
        cursor = end
    if cursor != len(content):
        raise ValueError("trailing content")
    return [replace(a, kind="text") if a.kind == "special" else a for a in atoms]


def _skip_label(content: str, position: int) -> int:
    """Index just after the ``]`` closing a label that starts at ``position``."""
    depth = 1
    while depth:
        char = content[position]
        if char == "\\":
            position += 2
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        position += 1
    return position


def _skip_link_tail(content: str, position: int) -> tuple[int, bool]:
    """After a link's ``]``: the end of ``(dest "title")`` or ``[ref]``, and whether the link text is the
    reference label itself (``[label]``, ``[label][]``)."""
    from markdown_it.helpers import parseLinkDestination, parseLinkTitle

    def blank(i: int) -> int:
        while i < len(content) and content[i] in " \t\n":
            i += 1
        return i

    if content.startswith("(", position):
        i = blank(position + 1)
        destination = parseLinkDestination(content, i, len(content))
        i = blank(destination.pos if destination.ok else i)
        title = parseLinkTitle(content, i, len(content))
        i = blank(title.pos if title.ok else i)
        if not content.startswith(")", i):
            raise ValueError("link")
        return i + 1, False
    if content.startswith("[]", position):
        return position + 2, True
    if content.startswith("[", position):
        return _skip_label(content, position + 1), False
    return position, True


# -- writing --------------------------------------------------------------------------------------------------


def _is_space(char: str) -> bool:
    return not char or char.isspace()


def _is_punct(char: str) -> bool:
    return bool(char) and unicodedata.category(char).startswith(("P", "S"))


def _render(
    block: Block, translated: TranslatedBlock, region: _Region, *, spaced: bool = False, content: bool = False
) -> str:
    """The translated block as Markdown source. ``spaced``: a space outside every emphasis delimiter that is
    not next to whitespace or punctuation (between Chinese characters a delimiter may both open and close, and
    nested emphasis can then pair up otherwise). ``content``: line breaks as in the inline content (no line
    prefixes), for reading it back."""
    items = [i for i in tokens(block, translated) if i.kind == "t" or tag_of(block.marks[i.mark or 0]).kind != "line"]
    if content and region.verbatims:
        inline = dict(region.verbatims)
        items = [replace(i, text=inline[i.mark]) if i.kind == "v" and i.mark in inline else i for i in items]
    if spaced:
        _space_emphasis(block, items)
    _fix_emphasis(block, items)
    gaps = break_gaps(items, [(line, fraction) for line, fraction, _ in region.soft], slots=region.slots or None)
    breaks = dict(zip(gaps, (_content_break(raw) if content else raw for _, _, raw in region.soft), strict=True))
    hard = iter([_content_break(raw) for raw in region.hard] if content else region.hard)
    escapes = {**_ESCAPES, "|": "\\|"} if region.table else _ESCAPES
    out: list[str] = []
    line_start = True  # at the start of a line of the block: what could read as block markup is escaped
    escape_at: set[int] = set()
    for index, item in enumerate(items):
        if index in breaks:
            while out and out[-1] in (" ", "\t"):
                out.pop()
            out.append(breaks[index])
            line_start = True
        if item.kind != "t":
            if item.text.startswith("[") and out and out[-1] == "!":
                out[-1] = "\\!"  # "!" before a link would make it an image
            if item.text.startswith("`") and out and out[-1].endswith("`"):
                out.append(" ")  # two code spans side by side would read as one
            out.append(item.text)
            line_start = False
            continue
        char = item.text
        ahead = "".join(i.text for i in items[index : index + 40])
        if char == "\n":
            out.append(next(hard, "\n"))
            line_start = True
        elif line_start and char in (" ", "\t"):
            continue  # no indentation after a break (four spaces would make code)
        elif line_start and char.isdigit():
            digits = len(ahead) - len(ahead.lstrip("0123456789"))
            rest = ahead[digits:]
            if digits <= 9 and rest[:1] in (".", ")") and (len(rest) == 1 or rest[1].isspace()):
                escape_at.add(index + digits)  # "1. " would start an ordered list: escape its "."
            out.append(char)
            line_start = False
        elif index in escape_at:
            out.append("\\" + char)
        elif line_start and _LINE_MARKUP.match(ahead):
            out.append("\\" + char)
            line_start = False
        else:
            out.append(escapes.get(char, char) if char != "&" or not _ENTITY_LIKE.match(ahead) else "&amp;")
            line_start = False
    return "".join(out)


def _content_break(raw: str) -> str:
    """A break's raw source as it is in the inline content: up to its newline (the next line's prefix is not)."""
    return raw[: raw.index("\n") + 1] if "\n" in raw else raw


def _space_emphasis(block: Block, items: list[Token]) -> None:
    """A space before every emphasis opener and after every closer that has no whitespace or punctuation on its
    outer side, or other markup than an enclosing opener or closer (it goes outside the mark, in the enclosing
    mark's text)."""
    for number, mark in enumerate(block.marks):
        tag = tag_of(mark)
        if tag.kind not in ("em", "strong", "s"):
            continue
        opener = next(i for i, item in enumerate(items) if item.kind == "o" and item.mark == number)
        before = items[opener - 1] if opener > 0 else None
        if before is not None and (
            before.kind in ("c", "v") or (before.kind == "t" and not (_is_space(before.text) or _is_punct(before.text)))
        ):
            items.insert(opener, Token("t", " ", tag.parent))
        closer = next(i for i, item in enumerate(items) if item.kind == "c" and item.mark == number)
        after = items[closer + 1] if closer + 1 < len(items) else None
        if after is not None and (
            after.kind in ("o", "v") or (after.kind == "t" and not (_is_space(after.text) or _is_punct(after.text)))
        ):
            items.insert(closer + 1, Token("t", " ", tag.parent))


def _fix_emphasis(block: Block, items: list[Token]) -> None:
    """Make every emphasis delimiter still open or close after translation: whitespace and edge punctuation
    move outside the mark where CommonMark's flanking rules need it. (Between Chinese characters a delimiter
    may still not open or close, an underscore never does inside a word: :func:`_space_emphasis` is the next
    try, and the delimiters are always written as in the source.)"""
    for number, mark in enumerate(block.marks):
        tag = tag_of(mark)
        if tag.kind not in ("em", "strong", "s"):
            continue
        opener = next(i for i, item in enumerate(items) if item.kind == "o" and item.mark == number)
        closer = next(i for i, item in enumerate(items) if item.kind == "c" and item.mark == number)

        def before(i: int) -> str:
            return items[i - 1].text[-1:] if i > 0 else ""

        def after(i: int) -> str:
            return items[i + 1].text[:1] if i + 1 < len(items) else ""

        def movable(i: int, test: Any, low: int, high: int) -> bool:
            return low < i < high and items[i].kind == "t" and test(items[i].text)

        # Opening: not followed by whitespace; followed by punctuation only after whitespace or punctuation.
        while movable(opener + 1, _is_space, opener, closer) or (
            movable(opener + 1, _is_punct, opener, closer)
            and not (_is_space(before(opener)) or _is_punct(before(opener)))
        ):
            items[opener], items[opener + 1] = items[opener + 1], items[opener]
            opener += 1
        while movable(closer - 1, _is_space, opener, closer) or (
            movable(closer - 1, _is_punct, opener, closer)
            and not (_is_space(after(closer)) or _is_punct(after(closer)))
        ):
            items[closer - 1], items[closer] = items[closer], items[closer - 1]
            closer -= 1


FORMAT = MarkdownFormat()
