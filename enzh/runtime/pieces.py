"""SentencePiece pieces with the character range each covers in the text (what alignments map back to).

sentencepiece reports byte offsets in a serialized ``SentencePieceText``; reading it needs the protobuf
package, which enzh does not depend on, so the wire format is read here directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import sentencepiece

Span = tuple[int, int]


def pieces_with_spans(processor: Any, text: str) -> list[tuple[str, Span]] | None:
    """SentencePiece's pieces of ``text`` with the character range each covers in ``text`` (without the space a
    word-initial piece starts with); None for text that is not valid UTF-8 (a lone surrogate)."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    # byte offset -> character offset (a byte inside a character maps to that character's start)
    chars = np.zeros(len(raw) + 1, dtype=np.int64)
    position = 0
    for i, ch in enumerate(text):
        width = len(ch.encode("utf-8"))
        chars[position : position + width] = i
        position += width
    chars[len(raw)] = len(text)
    out = []
    for piece, begin, end in proto_pieces(processor.encode(text, out_type="serialized_proto")):
        lo, hi = int(chars[min(begin, len(raw))]), int(chars[min(end, len(raw))])
        while lo < hi and text[lo].isspace():
            lo += 1
        out.append((piece, (lo, hi)))
    return out


def proto_pieces(data: bytes) -> list[tuple[str, int, int]]:
    """(piece, begin, end) of a serialized ``SentencePieceText`` (offsets in bytes of the input), read from the
    protobuf wire format directly: sentencepiece's own reader needs the protobuf package, which enzh does not."""
    pieces = []
    for field, value in _fields(data):
        if field == 2 and isinstance(value, bytes):  # repeated SentencePiece pieces = 2
            piece, begin, end = "", 0, 0
            for sub, item in _fields(value):
                if sub == 1 and isinstance(item, bytes):
                    piece = item.decode("utf-8")
                elif sub == 4 and isinstance(item, int):
                    begin = item
                elif sub == 5 and isinstance(item, int):
                    end = item
            pieces.append((piece, begin, end))
    return pieces


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one protobuf message: varints as int, length-delimited as bytes; fixed
    32/64-bit values (a piece's score) are skipped."""
    return [(field, value) for field, wire, value in protobuf_fields(data) if wire in (0, 2)]


def protobuf_fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of one protobuf message (a SentencePiece model or result): varints and
    fixed-width values as ints, length-delimited ones as bytes."""
    i = 0
    n = len(data)
    while i < n:
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            yield field, wire, value
        elif wire == 2:
            length, i = _varint(data, i)
            yield field, wire, data[i : i + length]
            i += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield field, wire, int.from_bytes(data[i : i + width], "little")
            i += width
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} in a SentencePiece message")


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def load_spm(path: Path) -> Any:
    """A SentencePiece model from ``path`` (ValueError naming the file when it cannot be read)."""
    sp = sentencepiece.SentencePieceProcessor()
    try:
        sp.Load(str(path))
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"cannot load SentencePiece model {path}: {exc}") from exc
    return sp
