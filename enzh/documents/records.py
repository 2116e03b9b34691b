"""JSON Lines and TSV: one field of every record is translated; every other byte of the file stays.

JSONL: ``--field`` names a top-level key (default ``text``). Its string value is replaced inside the original
line (the span of the value is found by scanning the object), so other fields, their order, spacing and number
formatting stay byte for byte; the new string is written with JSON escapes only where needed (``\\uXXXX`` only
when the line already used them and had no other non-ASCII text). A ``null`` value stays; a record without the
field, a non-string value or a line that is not a JSON object is an error naming the line. Blank lines stay.

TSV: ``--field`` is a header name (then the first line is the header and stays) or a 0-based column index
(then every line is data). Lines are split on tabs as they are (no quoting rules), so other columns are byte for
byte; tabs and line breaks in a translation become spaces. A row without that column is an error.

CSV (the csv module): ``--field`` as for TSV. The delimiter is the one of ``, ; TAB |`` that the csv module's
sniffer finds in the first 64 KiB (else a comma); quotes are ``"``, doubled inside a field (RFC 4180), and a
quoted field may hold line breaks. Records without a translated cell stay byte for byte; a record with one is
written again by the csv module, with its own line end and its quoting (every field quoted when it had every
field quoted, else only the fields that need it): what is normalised is a quote the csv module would not write
(around a field that needs none, in a record that does not quote every field). A malformed record (a stray
quote, a field over the csv module's 131,072 characters) is an error naming its line.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, TranslatedBlock
from enzh.runtime.segment import needs_translation

_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
_DECODER = json.JSONDecoder()
DEFAULT_FIELD = "text"


def _lines(source: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _LINE.finditer(source) if m.group()]


@dataclass(frozen=True)
class JsonlFormat:
    name: str = "jsonl"
    extensions: tuple[str, ...] = (".jsonl", ".ndjson")
    binary: bool = False

    def read(self, source: str, field: str | None = None) -> Units:
        name = field or DEFAULT_FIELD
        lines = _lines(source)
        blocks: list[Block] = []
        spans: list[tuple[int, int, int]] = []  # (line, value start, value end)
        for number, (content, _) in enumerate(lines, start=1):
            if not content.strip():
                continue
            value, start, end = _field_span(content, name, number)
            if value is not None and needs_translation(value):
                blocks.append(Block(value))
                spans.append((number - 1, start, end))
        return Units(blocks, (lines, spans))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        lines, spans = units.layout
        out = [content for content, _ in lines]
        for (index, start, end), done in zip(spans, translated, strict=True):
            line = out[index]
            ascii_only = "\\u" in line and line.isascii()
            out[index] = line[:start] + json.dumps(done.text, ensure_ascii=ascii_only) + line[end:]
        return "".join(content + newline for content, (_, newline) in zip(out, lines, strict=True))


def _field_span(line: str, name: str, number: int) -> tuple[str | None, int, int]:
    """The value of top-level key ``name`` in the JSON object ``line`` and its span (the last one wins, as in
    ``json.loads``)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:  # the C scanner gives up at Python's recursion limit, after a few microseconds
        raise DocumentError(
            f"line {number} nests JSON arrays or objects deeper than the parser's limit ({sys.getrecursionlimit()})"
        ) from None
    if not isinstance(record, dict):
        raise DocumentError(f"line {number} is a JSON {type(record).__name__}, not an object with a {name!r} field")
    if name not in record:
        fields = ", ".join(record) or "none"
        raise DocumentError(f"line {number} has no field {name!r} (its fields: {fields}); choose one with --field")
    value = record[name]
    if value is not None and not isinstance(value, str):
        raise DocumentError(f"field {name!r} on line {number} is a JSON {type(value).__name__}, not a string")
    span = (0, 0)
    position = _skip_space(line, 0) + 1  # after "{"
    while True:
        position = _skip_space(line, position)
        if line[position] == "}":
            break
        key, position = json.decoder.scanstring(line, position + 1)  # type: ignore[attr-defined]
        position = _skip_space(line, _skip_space(line, position) + 1)  # after ":"
        _, end = _DECODER.raw_decode(line, position)
        if key == name:
            span = (position, end)
        position = _skip_space(line, end)
        position += line[position] == ","
    return value, span[0], span[1]


def _skip_space(line: str, position: int) -> int:
    while position < len(line) and line[position] in " \t\r\n":
        position += 1
    return position


@dataclass(frozen=True)
class TsvFormat:
    name: str = "tsv"
    extensions: tuple[str, ...] = (".tsv",)
    binary: bool = False

    def read(self, source: str, field: str | None = None) -> Units:
        lines = _lines(source)
        if not any(content.strip() for content, _ in lines):
            return Units([], (lines, []))
        column, header = _column(lines, field or DEFAULT_FIELD)
        blocks: list[Block] = []
        cells: list[tuple[int, int]] = []
        for number, (content, _) in enumerate(lines, start=1):
            if (header and number == 1) or not content.strip():
                continue
            row = content.split("\t")
            if column >= len(row):
                raise DocumentError(
                    f"line {number} has {len(row)} column(s), so no column {column} ({field or DEFAULT_FIELD!r})"
                )
            if needs_translation(row[column]):
                blocks.append(Block(row[column]))
                cells.append((number - 1, column))
        return Units(blocks, (lines, cells))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        lines, cells = units.layout
        rows: dict[int, list[str]] = {}
        for (index, column), done in zip(cells, translated, strict=True):
            row = rows.setdefault(index, lines[index][0].split("\t"))
            row[column] = re.sub(r"[\t\r\n]+", " ", done.text)
        return "".join(
            ("\t".join(rows[i]) if i in rows else content) + newline for i, (content, newline) in enumerate(lines)
        )


def _column(lines: list[tuple[str, str]], field: str) -> tuple[int, bool]:
    """The column index of ``field`` and whether the first line is a header (field given by name)."""
    header = lines[0][0].split("\t") if lines else []
    if field in header:
        return header.index(field), True
    if field.isdigit():
        return int(field), False
    shown = ", ".join(repr(name) for name in header) or "none (the file is empty)"
    raise DocumentError(f"no column named {field!r} in the header (columns: {shown}); name one or give its index")


_DELIMITERS = ",;\t|"
_SNIFF = 64 * 1024


@dataclass(frozen=True)
class CsvFormat:
    name: str = "csv"
    extensions: tuple[str, ...] = (".csv",)
    binary: bool = False

    def read(self, source: str, field: str | None = None) -> Units:
        dialect = _dialect(source)
        records = _records(source, dialect)
        rows = [row for _, row in records if row]
        if not rows:
            return Units([], (records, [], dialect))
        name = field or DEFAULT_FIELD
        header = rows[0]
        if name in header:
            column, first = header.index(name), 1
        elif name.isdigit():
            column, first = int(name), 0
        else:
            shown = ", ".join(repr(cell) for cell in header)
            raise DocumentError(
                f"no column named {name!r} in the header (columns: {shown}); name one or give its index"
            )
        blocks: list[Block] = []
        cells: list[int] = []
        data = [i for i, (_, row) in enumerate(records) if row][first:]
        for index in data:
            (start, _), row = records[index]
            if column >= len(row):
                raise DocumentError(
                    f"the record on line {start + 1} has {len(row)} field(s), so no column {column} ({name!r})"
                )
            if needs_translation(row[column]):
                blocks.append(Block(row[column]))
                cells.append(index)
        return Units(blocks, (records, [(i, column) for i in cells], dialect))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        records, cells, dialect = units.layout
        changed: dict[int, list[str]] = {}
        for (index, column), done in zip(cells, translated, strict=True):
            changed.setdefault(index, list(records[index][1]))[column] = done.text
        out = []
        for index, ((_, raw), row) in enumerate(records):
            out.append(_rewrite(raw, row, changed[index], dialect) if index in changed else raw)
        return "".join(out)


def _dialect(source: str) -> type[csv.Dialect]:
    """The excel dialect with the delimiter the sniffer finds (a comma when it finds none)."""
    try:
        delimiter = csv.Sniffer().sniff(source[:_SNIFF], delimiters=_DELIMITERS).delimiter
    except csv.Error:
        delimiter = ","

    class Found(csv.excel):
        pass

    Found.delimiter = delimiter
    Found.strict = True
    return Found


def _records(source: str, dialect: type[csv.Dialect]) -> list[tuple[tuple[int, str], list[str]]]:
    """Every record: ((its first line's index, its raw text with its line end), its fields; [] for a blank line)."""
    lines = [content + newline for content, newline in _lines(source)]
    reader = csv.reader(iter(lines), dialect)
    found: list[tuple[tuple[int, str], list[str]]] = []
    start = 0
    while start < len(lines):
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise DocumentError(f"the record on line {start + 1} is not valid CSV: {exc}") from None
        found.append(((start, "".join(lines[start : reader.line_num])), row))
        start = reader.line_num
    return found


def csv_records(source: str) -> list[tuple[int, list[str]]]:
    """Every record of a CSV document: the index of its first line and its fields ([] for a blank line)."""
    return [(start, row) for (start, _), row in _records(source, _dialect(source))]


def _rewrite(raw: str, row: list[str], new: list[str], dialect: type[csv.Dialect]) -> str:
    """``new`` written as ``raw`` was: its line end, and all fields quoted when ``raw`` quoted them all."""
    end = raw[len(raw.rstrip("\r\n")) :]
    quoting: Literal[0, 1, 2, 3] = csv.QUOTE_MINIMAL
    if _written(row, dialect, csv.QUOTE_MINIMAL, end) != raw and _written(row, dialect, csv.QUOTE_ALL, end) == raw:
        quoting = csv.QUOTE_ALL
    return _written(new, dialect, quoting, end)


def _written(row: list[str], dialect: type[csv.Dialect], quoting: Literal[0, 1, 2, 3], end: str) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, dialect, quoting=quoting, lineterminator=end or "\n").writerow(row)
    text = buffer.getvalue()
    return text if end else text[:-1]


JSONL = JsonlFormat()
TSV = TsvFormat()
CSV = CsvFormat()
