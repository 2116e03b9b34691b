"""Cutting a document into shards on the unit boundaries its format defines, each a document of its own.

A shard is translated alone, by :func:`enzh.scale.worker.translate_shard`, and the outputs of all shards, in
order, are the output of the whole document: byte for byte what the in-process run writes. That holds because
each format rewrites only its own units and keeps every byte between them, and because a sentence's translation
does not depend on the other sentences of its batch (tests/runtime checks batched against one by one):

* ``txt``, ``jsonl``: a shard is ``shard_size`` lines. A line is a unit of its own in both formats.
* ``tsv``: the same, and when the first line is a header (``--field`` names a column), every later shard is
  translated with the header in front (so the column resolves the same) and the header is cut from its output.
* ``csv``: the same with records (a quoted field may hold line breaks: a record can be several lines).
* ``po``: a shard is ``shard_size`` entries. The header entry (it gives the plural forms) goes in front of every
  later shard as it is written out (with the Language or Plural-Forms a run fills in, so that it comes back
  unchanged) and is cut from its output.
* ``srt``, ``vtt``: a shard is ``shard_size`` blocks (the parts between blank lines), cut only where a block
  starts after a blank line. A sentence running over several cues is one unit: the cut is moved past it.
* ``html``, ``md``, ``docx``, ``xliff``: no unit boundary is cut (a whole document is one tree): one shard.

Every cut is checked: the blocks (units to translate) of the shards, one after another, must be the blocks of
the whole document; a shard whose blocks differ (its cut fell inside a unit) is merged with the next one.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from enzh.documents.api import parse, render
from enzh.documents.files import Prepared
from enzh.documents.inline import Block
from enzh.documents.options import DocumentOptions
from enzh.documents.po import entry_lines
from enzh.documents.records import csv_records

logger = logging.getLogger("enzh")

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # the line ends every text format uses
LINE_FORMATS = frozenset({"txt", "jsonl", "tsv"})
RECORD_FORMATS = frozenset({"csv", "po"})  # units of several lines, found by the format's parser
BLOCK_FORMATS = frozenset({"srt", "vtt"})
DEFAULT_FIELD = "text"  # jsonl/tsv field when --field is not given (enzh.documents.records)


@dataclass(frozen=True)
class Shard:
    """One shard: ``data`` is a document of the input's format (bytes as in the input file); ``header`` is put
    in front of it for translation and cut from the output (the tsv header line of every shard after the first)."""

    index: int
    data: bytes
    header: bytes = b""
    units: int = 0

    def digest(self) -> str:
        return hashlib.sha256(len(self.header).to_bytes(8, "big") + self.header + self.data).hexdigest()


def cut(prepared: Prepared, size: int) -> list[Shard]:
    """The shards of ``prepared``'s document, ``size`` units each (the last one may be shorter)."""
    options = prepared.options
    decoded = prepared.parsed.decoded
    if decoded is None or options.format not in LINE_FORMATS | BLOCK_FORMATS | RECORD_FORMATS:
        if options.format not in LINE_FORMATS | BLOCK_FORMATS | RECORD_FORMATS:
            logger.info("the %s format is translated as one shard (its units are not cut)", options.format)
        return [Shard(0, prepared.data, units=1)]
    lines = _LINE.findall(decoded.text)
    header = ""
    if options.format == "csv":
        header, lines, starts = _csv_units(decoded.text, lines, options.field)
        later = header
    elif options.format == "po":
        header, later, lines, starts = _po_units(decoded.text, options)
    else:
        if options.format == "tsv" and lines and _has_header(lines[0], options.field):
            header, lines = lines[0], lines[1:]
        starts = _unit_starts(lines, options.format)
        later = header
    pieces = [
        (starts[i], starts[i + size] if i + size < len(starts) else len(lines)) for i in range(0, len(starts), size)
    ]
    if not pieces:
        pieces = [(0, len(lines))]
    pieces[0] = (0, pieces[0][1])  # text before the first unit (blank lines) goes with the first shard

    def source(start: int, end: int, first: bool) -> tuple[bytes, bytes]:
        body = "".join(lines[start:end])
        bom = codecs.BOM_UTF8 if first and decoded.bom else b""
        if first:
            return bom + (header + body).encode("utf-8"), b""
        return body.encode("utf-8"), later.encode("utf-8")

    checked = _check(pieces, prepared.parsed.units.blocks, options, source)
    return [
        Shard(i, *source(start, end, i == 0), units=sum(start <= s < end for s in starts))
        for i, (start, end) in enumerate(checked)
    ]


def _has_header(line: str, field: str | None) -> bool:
    """Whether the tsv's first line is its header: the field is one of its column names (as the format reads it)."""
    return (field or DEFAULT_FIELD) in line.rstrip("\r\n").split("\t")


def _csv_units(text: str, lines: list[str], field: str | None) -> tuple[str, list[str], list[int]]:
    """A CSV document's header (its first record when the field names one of its columns), its other lines and
    the line index where each of their records starts."""
    records = csv_records(text)
    starts = [start for start, _ in records]
    if not records or (field or DEFAULT_FIELD) not in records[0][1]:
        return "", lines, starts
    cut = starts[1] if len(starts) > 1 else len(lines)
    return "".join(lines[:cut]), lines[cut:], [start - cut for start in starts[1:]]


def _po_units(text: str, options: DocumentOptions) -> tuple[str, str, list[str], list[int]]:
    """A po document's header entry as it is and as the format writes it (what goes in front of later shards),
    its other lines (those polib counts) and the line index where each of their entries starts."""
    lines = text.splitlines(keepends=True)
    header_line, starts = entry_lines(text)
    if header_line != 0:  # no header, or not first: nothing to put in front (the cut check merges if needed)
        return "", "", lines, starts
    cut = starts[0] if starts else len(lines)
    header = "".join(lines[:cut])
    written = render(parse(header, options), lambda sentences: sentences, options)
    assert isinstance(written, str)
    return header, written, lines[cut:], [start - cut for start in starts]


def _unit_starts(lines: Sequence[str], format: str) -> list[int]:
    """The line indices where a unit starts: every line, or every block after a blank line (subtitles)."""
    if format in LINE_FORMATS:
        return list(range(len(lines)))
    return [i for i, line in enumerate(lines) if line.strip() and (i == 0 or not lines[i - 1].strip())]


def _check(
    pieces: list[tuple[int, int]],
    whole: Sequence[Block],
    options: DocumentOptions,
    source: Callable[[int, int, bool], tuple[bytes, bytes]],
) -> list[tuple[int, int]]:
    """``pieces`` with every piece whose blocks are not the whole document's next blocks merged into the next."""
    todo = deque(pieces)
    checked: list[tuple[int, int]] = []
    position = 0
    while todo:
        start, end = todo.popleft()
        data, header = source(start, end, not checked)
        blocks = parse(header + data, options).units.blocks
        last = not todo
        if blocks == whole[position : position + len(blocks)] and (not last or position + len(blocks) == len(whole)):
            checked.append((start, end))
            position += len(blocks)
        elif todo:
            _, following = todo.popleft()
            todo.appendleft((start, following))
        else:  # the last piece cannot be merged further: the cut is wrong somewhere before it
            logger.warning(
                "the %s document could not be cut on unit boundaries: translating it as one shard", options.format
            )
            return [(pieces[0][0], pieces[-1][1])]
    return checked
