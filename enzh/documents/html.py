"""HTML: the text of every block (paragraph, heading, list item, cell, title...) translated as whole sentences,
inline tags kept around the words they covered, and everything else byte for byte.

The document is never re-serialized. The stdlib tokenizer (``html.parser`` with ``convert_charrefs=False``)
only says where each token starts; a token's raw text is the source between its start and the next token's,
so the tokens put together are the input exactly. A *unit* is the run of inline content between two block
boundaries (any tag that is not inline, ``<br>`` included): its text (entities decoded, inner whitespace
collapsed) becomes one :class:`~enzh.documents.inline.Block`, its inline tags become marks whose raw slices are
written back around the translated words (:mod:`enzh.documents.inline` places them). Comments, processing
instructions, void elements (``<img>``, ``<wbr>``), stray end tags and whitespace at the edges of a unit are
zero-width marks: they come back once each, in order. Inline ``code``, ``kbd``, ``samp``, ``var`` and inline
elements with ``translate="no"`` or class ``notranslate`` are read by the model (the sentence stays whole) but
written back verbatim; ``script``, ``style``, ``pre``, ``textarea``, ``template``, ``svg``, ``math`` and
block elements with ``translate="no"``/``notranslate`` are copied untouched. Of the attributes, only ``alt`` and
``title`` are translated, inside the raw tag, keeping its quotes. Broken markup (unclosed or stray tags) is
tolerated: an inline tag still open at a block boundary is closed there without writing anything, and a stray
end tag is written where it was, so the output has the same sequence of tags as the input. docs/html.md.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, SentenceTranslator, TranslatedBlock, translate_blocks
from enzh.documents.limits import check_count, check_depth
from enzh.documents.markup import Tag, render
from enzh.runtime.segment import needs_translation

INLINE = frozenset(
    "a abbr acronym b bdi bdo big button cite data del dfn em font i ins label mark nobr q rp rt ruby s small "
    "span strike strong sub sup time tt u".split()
)
VOID_INLINE = frozenset("img wbr input area embed source track audio video canvas".split())  # zero-width marks
VERBATIM = frozenset("code kbd samp var".split())  # read by the model, written back as they are
UNTOUCHED = frozenset("script style pre textarea template svg math noscript iframe object xmp listing".split())
_PHRASING = INLINE | VERBATIM | VOID_INLINE
_TAGS = ("start", "end", "startend")
_ESCAPE = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))
_SPACE = re.compile(r"\s+")  # what the segmenter strips too (HTML's own five, and &nbsp; and other Unicode spaces)
_PIECES = re.compile(r"\s+|\S+")
# One attribute inside a raw start tag: its name, and its value double-, single- or un-quoted.
_ATTRIBUTE = re.compile(
    r"""(?P<pre>[\s/]+(?P<name>[^\s"'>/=]+)\s*=\s*)(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<uq>[^\s"'=<>`]+))"""
)
TRANSLATED_ATTRIBUTES = ("alt", "title")


@dataclass(frozen=True)
class Token:
    """``kind``: start, startend, end, data, entity, charref, comment, decl, pi or cdata; ``raw``: its source."""

    kind: str
    raw: str
    name: str = ""
    attrs: tuple[tuple[str, str | None], ...] = ()


class _Tokenizer(HTMLParser):
    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=False)
        self.source = source
        self.found: list[tuple[str, int, str, tuple[tuple[str, str | None], ...]]] = []
        self.line_starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]

    def _at(self, kind: str, name: str = "", attrs: Sequence[tuple[str, str | None]] = ()) -> None:
        line, column = self.getpos()
        self.found.append((kind, self.line_starts[line - 1] + column, name, tuple(attrs)))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._at("start", tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._at("startend", tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._at("end", tag)

    def handle_data(self, data: str) -> None:
        self._at("data")

    def handle_entityref(self, name: str) -> None:
        self._at("entity")

    def handle_charref(self, name: str) -> None:
        self._at("charref")

    def handle_comment(self, data: str) -> None:
        self._at("comment")

    def handle_decl(self, decl: str) -> None:
        self._at("decl")

    def handle_pi(self, data: str) -> None:
        self._at("pi")

    def unknown_decl(self, data: str) -> None:
        self._at("cdata")


def tokenize(source: str) -> list[Token]:
    """The tokens of ``source``; their raw texts put together are ``source`` exactly."""
    parser = _Tokenizer(source)
    parser.feed(source)
    parser.close()
    starts = [start for _, start, _, _ in parser.found] + [len(source)]
    if (parser.found and starts[0] != 0) or any(a > b for a, b in itertools.pairwise(starts)):
        raise ValueError("html.parser reported tokens out of order")  # never seen; the check keeps it exact
    tokens = [
        Token(kind, source[start:end], name, attrs)
        for (kind, start, name, attrs), end in zip(parser.found, starts[1:], strict=True)
        if end > start
    ]
    # An unclosed comment hides the rest of the document (html.parser gives it as text): keep it as one comment.
    for i, token in enumerate(tokens):
        if token.kind != "data" or (i and tokens[i - 1].kind == "start" and tokens[i - 1].name in ("script", "style")):
            continue
        if token.raw.startswith("<!--") or (
            token.raw == "<" and tokens[i + 1 : i + 2] and tokens[i + 1].raw[:3] == "!--"
        ):
            return [*tokens[:i], Token("comment", "".join(t.raw for t in tokens[i:]))]
    assert "".join(t.raw for t in tokens) == source
    return tokens


def _skipped(token: Token) -> bool:
    """``translate="no"`` or class ``notranslate`` on a start tag."""
    attrs = dict(token.attrs)
    return (attrs.get("translate") or "").strip().lower() == "no" or "notranslate" in (attrs.get("class") or "").split()


@dataclass
class _MarkDraft:
    start: int
    kind: str
    open: str
    parent: int | None
    token: int = -1  # the start tag's token (its alt/title are rewritten on output)
    end: int | None = None
    close: str = ""
    verbatim: str | None = None


@dataclass
class _Unit:
    """Inline content being read: its plain text, marks, open marks, and whitespace not yet decided on."""

    first: int  # index of its first token
    text: list[str] = field(default_factory=list)
    length: int = 0
    marks: list[_MarkDraft] = field(default_factory=list)
    stack: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)  # whitespace marks that may become a collapsed space
    translatable: bool = False

    def parent(self) -> int | None:
        return self.stack[-1] if self.stack else None

    def add_text(self, raw: str, decoded: str, counts: bool = True) -> None:
        for piece in _PIECES.findall(decoded):
            if _SPACE.fullmatch(piece):
                # Whitespace at an edge is written back raw (a zero-width mark); inside, it is one space.
                self.pending.append(len(self.marks))
                space = raw if piece == decoded else piece
                self.marks.append(_MarkDraft(self.length, "space", space, self.parent(), end=self.length))
                continue
            self._space()
            self.text.append(piece)
            self.length += len(piece)
            self.translatable = self.translatable or (counts and needs_translation(piece))

    def _space(self) -> None:
        """Whitespace followed by more text: one space in the text (its raw whitespace is not written back)."""
        if self.pending and self.length:
            for i in self.pending:
                self.marks[i].open = ""
            self.text.append(" ")
            self.length += 1
        self.pending = []

    def point(self, kind: str, raw: str, token: int = -1) -> None:
        check_count(len(self.marks) + 1)
        self.marks.append(_MarkDraft(self.length, kind, raw, self.parent(), token, end=self.length))

    def open(self, token: Token, index: int) -> None:
        self._space()  # the space before a tag is not inside its mark
        check_depth(len(self.stack) + 1)  # refused while reading: the nesting is never walked
        check_count(len(self.marks) + 1)
        self.marks.append(_MarkDraft(self.length, token.name, token.raw, self.parent(), index))
        self.stack.append(len(self.marks) - 1)

    def close(self, name: str, raw: str) -> bool:
        """Close the innermost open mark ``name`` (inner ones close with it, writing nothing); False if none."""
        names = [self.marks[i].kind for i in self.stack]
        if name not in names:
            return False
        while self.stack:
            draft = self.marks[self.stack.pop()]
            draft.end = self.length
            if draft.kind == name:
                draft.close = raw
                return True
        return True  # pragma: no cover

    def block(self) -> Block:
        for i in self.stack:
            self.marks[i].end = self.length
        marks = tuple(
            Mark(
                d.start,
                d.end if d.end is not None else self.length,
                Tag(d.kind, d.open, d.close, d.parent, d.verbatim, d.token),
            )
            for d in self.marks
        )
        return Block("".join(self.text), marks)


@dataclass
class _Layout:
    """What :meth:`HtmlFormat.read` keeps: the tokens, the output plan and the translated attributes."""

    tokens: list[Token]
    plan: list[tuple[str, int, int]]  # ("raw", first token, end token) or ("block", block index, 0)
    attributes: dict[int, list[tuple[str, int]]]  # token -> [(attribute name, block index of its text)]


class _Reader:
    """One pass over the tokens (it tracks skipped subtrees and the unit being read)."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.blocks: list[Block] = []
        self.plan: list[tuple[str, int, int]] = []
        self.attributes: dict[int, list[tuple[str, int]]] = {}
        self.unit: _Unit | None = None
        self.raw_from = 0

    def run(self) -> _Layout:
        i = 0
        while i < len(self.tokens):
            i = self._token(i)
        self._end_unit(len(self.tokens))
        self._flush_raw(len(self.tokens))
        return _Layout(self.tokens, self.plan, self.attributes)

    def _token(self, i: int) -> int:
        """Read token ``i``; returns the index of the next token to read."""
        token = self.tokens[i]
        kind, name = token.kind, token.name
        if kind in ("data", "entity", "charref"):
            text = html.unescape(token.raw)
            if self.unit is not None or text.strip(" \t\n\r\f"):  # whitespace between blocks stays raw
                self._unit(i).add_text(token.raw, text)
            return i + 1
        if kind in ("start", "startend"):
            return self._start_tag(i, token)
        if kind == "end" and name in _PHRASING:
            unit = self._unit(i)
            if not unit.close(name, token.raw):
                unit.point("stray", token.raw)
            return i + 1
        if kind in ("comment", "pi"):
            if self.unit is not None:
                self.unit.point(kind, token.raw)
            return i + 1
        self._end_unit(i)  # block tags, doctype, CDATA: a boundary, written as is
        return i + 1

    def _start_tag(self, i: int, token: Token) -> int:
        name, alone = token.name, token.kind == "startend"
        skipped = _skipped(token)
        if name in UNTOUCHED or (skipped and name not in _PHRASING):
            end = i + 1 if alone else self._subtree_end(i, stop_at_blocks=False)
            if self.unit is not None and name not in ("pre", "textarea", "listing", "xmp"):
                self.unit.point(name, "".join(t.raw for t in self.tokens[i:end]))
            else:
                self._end_unit(i)
            return end
        if name in VERBATIM or (skipped and name in INLINE):
            return self._verbatim(i, i + 1 if alone else self._subtree_end(i, stop_at_blocks=True))
        if skipped:  # a void element with translate="no": written as it is
            if self.unit is not None:
                self.unit.point(name, token.raw)
            return i + 1
        self._attributes(i)
        if name in INLINE and not alone:
            self._unit(i).open(token, i)
        elif name in INLINE | VOID_INLINE:
            if self.unit is not None or name in VOID_INLINE:
                self._unit(i).point(name, token.raw, i)
        else:
            self._end_unit(i)
        return i + 1

    def _verbatim(self, i: int, end: int) -> int:
        """Inline code or an inline element not to translate: its text is read, its source written back."""
        unit = self._unit(i)
        draft = _MarkDraft(unit.length, self.tokens[i].name, "", unit.parent(), i)
        index = len(unit.marks)
        unit.marks.append(draft)
        for inner in self.tokens[i + 1 : end]:
            if inner.kind in ("data", "entity", "charref"):
                unit.add_text(inner.raw, html.unescape(inner.raw), counts=False)
        draft.end, draft.verbatim = unit.length, "".join(t.raw for t in self.tokens[i:end])
        for inner_mark in unit.marks[index + 1 :]:  # whitespace inside: part of the verbatim source
            inner_mark.open, inner_mark.parent = "", index
        return end

    def _unit(self, i: int) -> _Unit:
        if self.unit is None:
            self._flush_raw(i)
            self.unit = _Unit(first=i)
        return self.unit

    def _end_unit(self, i: int) -> None:
        unit, self.unit = self.unit, None
        if unit is None:
            return
        if unit.translatable:
            self.plan.append(("block", len(self.blocks), 0))
            self.blocks.append(unit.block())
            self.raw_from = i
        else:
            self.raw_from = unit.first  # nothing to translate: its tokens are written as they are

    def _flush_raw(self, i: int) -> None:
        if i > self.raw_from:
            self.plan.append(("raw", self.raw_from, i))
        self.raw_from = i

    def _subtree_end(self, i: int, stop_at_blocks: bool) -> int:
        """Index after the end tag that closes the element started at token ``i`` (same-name nesting counted);
        for inline verbatim elements, at the latest before the next block boundary."""
        name, depth = self.tokens[i].name, 0
        for j in range(i, len(self.tokens)):
            token = self.tokens[j]
            if token.kind == "start" and token.name == name:
                depth += 1
            elif token.kind == "end" and token.name == name:
                depth -= 1
                if depth == 0:
                    return j + 1
            elif stop_at_blocks and j > i and token.kind in _TAGS and token.name not in _PHRASING:
                return j
        return len(self.tokens)

    def _attributes(self, i: int) -> None:
        for attribute, value in self.tokens[i].attrs:
            if attribute in TRANSLATED_ATTRIBUTES and value is not None:
                text = _SPACE.sub(" ", value).strip()
                if needs_translation(text):
                    self.attributes.setdefault(i, []).append((attribute, len(self.blocks)))
                    self.blocks.append(Block(text))


def set_attribute(raw_tag: str, name: str, value: str) -> str:
    """``raw_tag`` with attribute ``name``'s value replaced, in the same quotes (unquoted: double quotes)."""

    def replace_value(match: re.Match[str]) -> str:
        if match.group("name").lower() != name:
            return match.group(0)
        quote = "'" if match.group("sq") is not None else '"'
        escaped = html.escape(value, quote=False).replace(quote, "&quot;" if quote == '"' else "&#x27;")
        return f"{match.group('pre')}{quote}{escaped}{quote}"

    return _ATTRIBUTE.sub(replace_value, raw_tag, count=0)


@dataclass(frozen=True)
class HtmlFormat:
    name: str = "html"
    extensions: tuple[str, ...] = (".html", ".htm", ".xhtml")
    binary: bool = False

    def read(self, source: str, field: str | None = None) -> Units:
        reader = _Reader(tokenize(source))
        layout = reader.run()
        return Units(reader.blocks, layout)

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        layout: _Layout = units.layout
        raws = [token.raw for token in layout.tokens]
        for index, attributes in layout.attributes.items():
            for attribute, block in attributes:
                raws[index] = set_attribute(raws[index], attribute, translated[block].text)
        out: list[str] = []
        for what, a, b in layout.plan:
            if what == "raw":
                out.extend(raws[a:b])
                continue
            source_block = units.blocks[a]
            marks = tuple(_with_raw(mark, raws) for mark in source_block.marks)
            out.append(render(replace(source_block, marks=marks), translated[a], escape=_ESCAPE))
        return "".join(out)


def _with_raw(mark: Mark, raws: list[str]) -> Mark:
    tag = mark.tag
    assert isinstance(tag, Tag)
    if tag.index < 0 or tag.verbatim is not None or tag.kind in ("space", "stray"):
        return mark
    return replace(mark, tag=replace(tag, open=raws[tag.index]))


FORMAT = HtmlFormat()


def translate_html(text: str, translate_sentences: SentenceTranslator) -> str:
    """``text`` (an HTML document or fragment) with its text, ``alt`` and ``title`` translated."""
    units = FORMAT.read(text)
    return FORMAT.write(units, translate_blocks(units.blocks, translate_sentences))
