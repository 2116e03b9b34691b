"""Sentence alignments from the model's aligner graph: where each inline mark's words went in the translation.

:class:`ModelAligner` is the ``align`` of the aligner protocol (:mod:`enzh.documents.inline`): for each
(sentence, translation) pair it cuts both sides into the model's SentencePiece pieces, with each piece's
character range, and asks :meth:`enzh.runtime.translator.Translator.align` for the cross-attention of the
translation (teacher forced) on the sentence. The translation is cut again by ``target.spm`` rather than taken
from the search, so a pair read back from a journal aligns exactly as a fresh one.

A pair gets None (its marks then take the anchors and the fallback) when the model has no aligner, when either
side is longer than the model's positions, or when the pieces do not give the ids the tokenizer gives (special
token strings typed in the text).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from enzh.documents.placement import Alignment

if TYPE_CHECKING:
    from enzh.runtime.translator import Translator

_Span = tuple[int, int]


class ModelAligner:
    """``(sentence, translation)`` pairs -> :class:`Alignment` (or None) with ``translator``'s aligner graph.

    ``target``: the language token the sentences were translated with (None: the model's default)."""

    def __init__(self, translator: Translator, target: str | None = None) -> None:
        self.translator = translator
        self.language_token = translator.adapter.resolve_target(target)
        self.available = bool(getattr(translator, "has_aligner", False))  # stand-ins and older directories: no
        self._spm: dict[str, Any] = {}
        self._target_vocab: dict[str, int] | None = None

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[Alignment | None]:
        if not self.available or not pairs:
            return [None] * len(pairs)
        cut = [self._cut(sentence, translation) for sentence, translation in pairs]
        todo = [c for c in cut if c is not None]
        matrices = iter(self.translator.align([c[0] for c in todo], [c[1] for c in todo]) if todo else [])
        out: list[Alignment | None] = []
        for c in cut:
            if c is None:
                out.append(None)
                continue
            _, _, source, target, skip = c
            # rows: the translation's pieces (not eos); columns: the sentence's pieces (not the language token
            # nor eos), renormalized so that each row sums to 1 over them
            weights = next(matrices)[: len(target), skip : skip + len(source)].astype(np.float64)
            weights /= np.maximum(weights.sum(axis=1, keepdims=True), 1e-12)
            out.append(Alignment(tuple(source), tuple(target), weights))
        return out

    def _cut(
        self, sentence: str, translation: str
    ) -> tuple[list[int], list[int], list[_Span], list[_Span], int] | None:
        """Source ids, target ids (with eos), the pieces' character ranges and where the sentence's pieces start
        among the source ids; None when the pair cannot be aligned."""
        translator = self.translator
        tokenizer = translator.tokenizer
        limit = translator.adapter.max_positions
        source = _pieces(self._processor("source_spm"), sentence)
        target = _pieces(self._processor("target_spm"), translation)
        if not source or not target:  # None: not valid UTF-8
            return None
        source_ids = tokenizer.encode(translator.adapter.with_language_token(sentence, self.language_token))
        skip = len(source_ids) - 1 - len(source)  # the language token before the sentence's pieces
        expected = [tokenizer.token_to_id(piece) for piece, _ in source]
        unk = tokenizer.unk_id
        if skip < 0 or source_ids[skip:-1] != [unk if i is None else i for i in expected]:
            return None
        vocab = self._target_ids()
        target_ids = [vocab.get(piece, unk) for piece, _ in target] + [tokenizer.eos_id]
        if len(source_ids) > limit or len(target_ids) > limit:
            return None
        return source_ids, target_ids, [span for _, span in source], [span for _, span in target], skip

    def _processor(self, key: str) -> Any:
        if key not in self._spm:
            import sentencepiece

            name = self.translator.manifest.tokenizer[key]
            self._spm[key] = sentencepiece.SentencePieceProcessor(
                model_file=str(Path(self.translator.directory) / name)
            )
        return self._spm[key]

    def _target_ids(self) -> dict[str, int]:
        """Target piece -> id (the inverse of the tokenizer's id -> token table)."""
        if self._target_vocab is None:
            tokenizer = self.translator.tokenizer
            size = int(self.translator.manifest.architecture["target_vocab_size"])
            vocab: dict[str, int] = {}
            for idx in range(size):
                token = tokenizer.id_to_token(idx)
                if token is not None:
                    vocab.setdefault(token, idx)
            self._target_vocab = vocab
        return self._target_vocab


def _pieces(processor: Any, text: str) -> list[tuple[str, _Span]] | None:
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
    for piece, begin, end in _proto_pieces(processor.encode(text, out_type="serialized_proto")):
        lo, hi = int(chars[min(begin, len(raw))]), int(chars[min(end, len(raw))])
        while lo < hi and text[lo].isspace():
            lo += 1
        out.append((piece, (lo, hi)))
    return out


def _proto_pieces(data: bytes) -> list[tuple[str, int, int]]:
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
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((field, value))
        elif wire == 2:
            length, i = _varint(data, i)
            out.append((field, data[i : i + length]))
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} in a SentencePiece result")
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
