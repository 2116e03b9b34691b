"""Marian (OPUS-MT) tokenizer on plain ``sentencepiece``: no transformers, no torch.

Gives the same ids and strings as ``transformers.MarianTokenizer`` (checked against 5.23.0) for the same
``source.spm`` / ``target.spm`` / ``vocab.json``:

* ``encode(text)`` == ``MarianTokenizer(...)(text)["input_ids"]``
* ``decode(ids)`` == ``MarianTokenizer(...).decode(ids, skip_special_tokens=True)``

Both vocabulary layouts: one ``vocab.json`` for both sides (Helsinki-NLP/opus-mt-en-zh), or, for models
converted with separate source and target vocabularies (``separate_vocabs`` in tokenizer_config.json),
``vocab.json`` for the source and ``target_vocab.json`` for the target (pass ``target_vocab``).
The comments marked "quirk" describe transformers behaviour that is reproduced on purpose. Deliberate
differences: clearer errors (text with a lone surrogate -> ValueError where transformers raises an opaque
RuntimeError; eos/pad missing from vocab.json -> ValueError instead of silently adding tokens).
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from enzh.runtime.pieces import Span, load_spm, pieces_with_spans

__all__ = ["MarianTokenizer", "tokenizer_for"]

_SPIECE_UNDERLINE = "▁"


def _is_language_code(token: str) -> bool:
    # Same test transformers uses for `supported_language_codes`; note ">><<" (empty code) also counts.
    return token.startswith(">>") and token.endswith("<<")


def _split_language_code(text: str) -> tuple[str | None, str]:
    """Split a leading ``>>code<<`` off ``text`` exactly like MarianTokenizer.remove_language_code."""
    # quirk: only a code at the very start counts (no lstrip: " >>cmn_Hans<< x" is plain text for spm).
    if text.startswith(">>"):
        # quirk: the code ends at the FIRST "<<" (not a regex; may contain spaces/newlines: ">>a b<<" is a
        # code); a code missing from vocab.json becomes <unk>, and only one code is removed.
        end = text.find("<<")
        if end != -1:
            return text[: end + 2], text[end + 2 :]
    return None, text


def _load_vocab(path: Path) -> dict[str, int]:
    try:
        # an exported model directory stores it gzipped (vocab.json.gz), a HF model directory as plain JSON
        with (
            gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8") as f
        ):
            data = json.load(f)  # duplicate keys: last one wins, as in transformers
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object token -> id, got {type(data).__name__}")
    for token, idx in data.items():
        if type(idx) is not int or idx < 0:
            raise ValueError(f"{path}: id of token {token!r} must be a non-negative integer, got {idx!r}")
    return data


class MarianTokenizer:
    """Encode English source text to Marian ids and decode Marian target ids to text.

    Build it with :meth:`from_dir`. Instances are immutable and safe to share between threads.
    """

    eos_id: int
    unk_id: int
    pad_id: int
    vocab_size: int
    language_tokens: tuple[str, ...]

    def __init__(
        self,
        source_spm: Any,
        target_spm: Any,
        vocab: dict[str, int],
        *,
        unk_token: str = "<unk>",
        eos_token: str = "</s>",
        pad_token: str = "<pad>",
        vocab_name: str = "vocab.json",
        target_vocab: dict[str, int] | None = None,
    ) -> None:
        """Low-level constructor from loaded ``SentencePieceProcessor`` objects; prefer :meth:`from_dir`.
        ``target_vocab``: the target side's own token -> id table (separate vocabularies); by default the
        target side shares ``vocab``."""
        for role, token in (("unk", unk_token), ("eos", eos_token), ("pad", pad_token)):
            if not isinstance(token, str) or not token:
                raise TypeError(f"{role}_token must be a non-empty str, got {token!r}")
            if token not in vocab:
                raise ValueError(f"{role}_token {token!r} is not in {vocab_name}")
            if target_vocab is not None and target_vocab.get(token) != vocab[token]:
                # one id per special token for both sides (pad starts decoding, eos ends it, decode skips both)
                raise ValueError(
                    f"{role}_token {token!r} has id {target_vocab.get(token)} in the target vocabulary and "
                    f"{vocab[token]} in {vocab_name}; Marian's separate vocabularies give special tokens one id"
                )
        self._sp_source = source_spm
        self._sp_target = target_spm
        self._encoder: dict[str, int] = dict(vocab)
        self.unk_token, self.eos_token, self.pad_token = unk_token, eos_token, pad_token
        self.unk_id = vocab[unk_token]
        self.eos_id = vocab[eos_token]
        self.pad_id = vocab[pad_token]
        # quirk: vocab_size is len(vocab.json), not max id + 1 (the two agree for the opus layout).
        self.vocab_size = len(vocab)

        # Target side: token -> id and id -> token; an id listed twice keeps the later token (transformers
        # inverts the dict the same way). Separate vocabularies decode through the target's own table.
        # (One shared vocabulary: the same dict, not a second copy of its 65k entries.)
        self._target_encoder: dict[str, int] = self._encoder if target_vocab is None else dict(target_vocab)
        self._decoder: dict[int, str] = {idx: token for token, idx in self._target_encoder.items()}
        # source spm id -> vocab id (the spm unk id is handled by string, see _chunk_ids).
        self._sp_source_unk: int = source_spm.unk_id()
        self._spm_to_vocab = [
            vocab.get(source_spm.id_to_piece(i), self.unk_id) for i in range(source_spm.get_piece_size())
        ]
        self.language_tokens = tuple(sorted((t for t in vocab if _is_language_code(t)), key=lambda t: (vocab[t], t)))

        specials = (eos_token, unk_token, pad_token)
        # transformers' all_special_ids: skipped by decode(skip_special_tokens=True).
        # quirk: <unk> is skipped too, so unknown words vanish from decoded text instead of showing "<unk>".
        self._skip_ids = frozenset(vocab[t] for t in specials)
        self._special_tokens = frozenset(specials)
        # quirk: special-token strings typed in the input text ("a</s>b", "<unk>", "<pad>") are not text:
        # they are cut out before SentencePiece and become their special ids (transformers' added-token trie,
        # which matches leftmost, longest first; every piece between them is tokenized on its own).
        alternatives = sorted(set(specials), key=len, reverse=True)
        self._special_re = re.compile("|".join(re.escape(t) for t in alternatives))

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_model_dir(cls, path: str | os.PathLike[str], files: dict[str, str]) -> MarianTokenizer:
        """The tokenizer of an exported model directory, named by its manifest's ``tokenizer`` record
        (``target_vocab`` only for models with separate vocabularies)."""
        return cls.from_dir(
            path,
            source_spm=files["source_spm"],
            target_spm=files["target_spm"],
            vocab=files["vocab"],
            target_vocab=files.get("target_vocab"),
        )

    @classmethod
    def from_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        source_spm: str = "source.spm",
        target_spm: str = "target.spm",
        vocab: str = "vocab.json",
        unk_token: str = "<unk>",
        eos_token: str = "</s>",
        pad_token: str = "<pad>",
        target_vocab: str | None = None,
    ) -> MarianTokenizer:
        """Load ``source.spm``, ``target.spm`` and ``vocab.json`` from a Marian model directory, and
        ``target_vocab`` (e.g. ``target_vocab.json``) when the model has separate vocabularies."""
        directory = Path(path)
        if not directory.is_dir():
            raise FileNotFoundError(
                f"tokenizer directory {str(directory)!r} does not exist or is not a directory "
                f"(expected {source_spm}, {target_spm} and {vocab} in it)"
            )
        files = {}
        for name in (source_spm, target_spm, vocab, *([target_vocab] if target_vocab else [])):
            file = directory / name
            if not file.is_file():
                raise FileNotFoundError(f"tokenizer file {name!r} not found in directory {str(directory)!r}")
            files[name] = file
        return cls(
            load_spm(files[source_spm]),
            load_spm(files[target_spm]),
            _load_vocab(files[vocab]),
            unk_token=unk_token,
            eos_token=eos_token,
            pad_token=pad_token,
            vocab_name=str(files[vocab]),
            target_vocab=_load_vocab(files[target_vocab]) if target_vocab else None,
        )

    # ------------------------------------------------------------------ lookups

    def frequent_target_ids(self, texts: Iterable[str], count: int) -> list[int]:
        """Vocabulary ids of the ``count`` target pieces most frequent in ``texts`` (target-language sentences,
        split by target.spm), plus eos and unk; sorted. Pad is never included (it must never be generated).
        (SentencePiece's own piece scores are no substitute: a unigram model ranks single characters that it
        mostly saw inside longer pieces last, and those are among the commonest Chinese tokens.)"""
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        counts: collections.Counter[int] = collections.Counter()
        for text in texts:
            for piece in self._sp_target.encode(text, out_type=str):
                counts[self._target_encoder.get(piece, self.unk_id)] += 1
        for special in (self.eos_id, self.unk_id, self.pad_id):
            counts.pop(special, None)
        ranked = sorted(counts, key=lambda token: (-counts[token], token))
        return sorted({self.eos_id, self.unk_id, *ranked[:count]})

    def target_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Target vocabulary ids of target-language sentences, split by target.spm (no eos); a piece the target
        vocabulary lacks is unk. What the shortlists count (:mod:`enzh.quantize.lexical`)."""
        pieces = [self._sp_target.encode(text, out_type=str) for text in texts]  # (one by one: see _spm_encode)
        return [[self._target_encoder.get(piece, self.unk_id) for piece in line] for line in pieces]

    def token_to_id(self, token: str) -> int | None:
        """Id of ``token`` in vocab.json, or None when it is not there."""
        return self._encoder.get(token)

    def id_to_token(self, idx: int) -> str | None:
        """Token of the target id ``idx`` (in vocab.json, or in target_vocab.json with separate vocabularies),
        or None when no token has that id."""
        return self._decoder.get(idx)

    def source_spans(self, text: str) -> list[tuple[str, Span]] | None:
        """source.spm's pieces of ``text`` with their character ranges (None: not valid UTF-8)."""
        return pieces_with_spans(self._sp_source, text)

    def target_spans(self, text: str) -> list[tuple[str, Span]] | None:
        """target.spm's pieces of ``text`` with their character ranges (None: not valid UTF-8)."""
        return pieces_with_spans(self._sp_target, text)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocab_size={self.vocab_size}, eos_id={self.eos_id}, "
            f"unk_id={self.unk_id}, pad_id={self.pad_id}, language_tokens={self.language_tokens!r})"
        )

    # ------------------------------------------------------------------ source side

    def _plan(self, text: object, where: str) -> tuple[list[str | int], list[str]]:
        """Split ``text`` into special tokens / language codes (kept as str) and spm chunks (as indices).

        Returns ``(plan, chunks)``: plan items are either a token string to emit as is, or an int index
        into ``chunks`` (the texts to run through the source SentencePiece model).
        """
        if not isinstance(text, str):
            raise TypeError(f"{where} expects str, got {type(text).__module__}.{type(text).__qualname__}")
        plan: list[str | int] = []
        chunks: list[str] = []
        # Fast path: no special-token string in the text (the common case) -> one segment.
        segments: list[str]
        if self._special_re.search(text) is None:
            segments = [text]
        else:
            segments = []
            pos = 0
            for m in self._special_re.finditer(text):
                segments.append(text[pos : m.start()])
                segments.append(m.group())
                pos = m.end()
            segments.append(text[pos:])
        for segment in segments:
            if not segment:
                continue
            if segment in self._special_tokens:
                plan.append(segment)
                continue
            # quirk: the code test runs per segment, so a code right after a special string counts too
            # ("</s>>>cmn_Hans<< x" -> eos, >>cmn_Hans<<, ...).
            code, rest = _split_language_code(segment)
            if code is not None:
                plan.append(code)
            # quirk: Moses punctuation normalisation (MarianTokenizer.normalize / sacremoses) is never applied
            # by transformers' encode path; the only normalisation is the spm model's own (e.g. nmt_nfkc).
            plan.append(len(chunks))
            chunks.append(rest)
        return plan, chunks

    def _spm_encode(self, chunks: list[str], out_type: type) -> list[list[Any]]:
        sp = self._sp_source
        try:
            # One by one: SentencePiece's list calls start a thread pool each time, a quarter of a millisecond on a
            # 2-core machine, more than fifty short sentences cost one by one.
            return [sp.encode(chunk, out_type=out_type) for chunk in chunks]
        except (RuntimeError, TypeError) as exc:
            # spm's own message for text that is not valid UTF-8 is an opaque pybind11 cast error.
            for chunk in chunks:
                try:
                    chunk.encode("utf-8")
                except UnicodeEncodeError as bad:
                    raise ValueError(
                        f"text cannot be encoded as UTF-8 (lone surrogate {chunk[bad.start]!r} at chunk "
                        f"offset {bad.start}): {chunk[max(0, bad.start - 20) : bad.start + 20]!r}"
                    ) from exc
            raise

    def _chunk_ids(self, chunks: list[str]) -> list[list[int]]:
        """Vocab ids of the source-spm pieces of each chunk (fast: via spm ids, strings only around unk)."""
        if not chunks:
            return []
        table = self._spm_to_vocab
        sp_unk = self._sp_source_unk
        get = self._encoder.get
        unk = self.unk_id
        out: list[list[int]] = []
        for chunk, spm_ids in zip(chunks, self._spm_encode(chunks, int), strict=True):
            if sp_unk in spm_ids:
                # quirk: pieces are looked up by their STRING in vocab.json, not by spm id: a span the source
                # model does not know (spm unk) still gets a real id when vocab.json has that exact string
                # (e.g. a Chinese character that only target.spm has).
                out.append([get(p, unk) for p in self._spm_encode([chunk], str)[0]])
            else:
                out.append([table[i] for i in spm_ids])
        return out

    def source_pieces(self, text: str) -> list[str]:
        """Source-side tokens before id mapping (== ``transformers.MarianTokenizer.tokenize(text)``).

        Language codes and special-token strings appear as single tokens; no eos.
        """
        plan, chunks = self._plan(text, "source_pieces()")
        pieces = self._spm_encode(chunks, str) if chunks else []
        out: list[str] = []
        for item in plan:
            if isinstance(item, str):
                out.append(item)
            else:
                out.extend(pieces[item])
        return out

    def _assemble_ids(self, plan: list[str | int], chunk_ids: list[list[int]], offset: int) -> list[int]:
        get = self._encoder.get
        unk = self.unk_id
        out: list[int] = []
        for item in plan:
            if isinstance(item, str):
                out.append(get(item, unk))  # a special token or a language code (unknown code -> unk)
            else:
                out.extend(chunk_ids[offset + item])
        out.append(self.eos_id)
        return out

    def encode(self, text: str) -> list[int]:
        """Source ids for ``text``, with the trailing eos (== ``MarianTokenizer(...)(text)["input_ids"]``)."""
        plan, chunks = self._plan(text, "encode()")
        return self._assemble_ids(plan, self._chunk_ids(chunks), 0)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``[encode(t) for t in texts]``."""
        if isinstance(texts, (str, bytes)):
            raise TypeError(f"encode_batch() expects a sequence of str, got a single {type(texts).__name__}")
        plans: list[list[str | int]] = []
        offsets: list[int] = []
        chunks: list[str] = []
        for i, text in enumerate(texts):
            plan, own = self._plan(text, f"encode_batch() item {i}")
            plans.append(plan)
            offsets.append(len(chunks))
            chunks.extend(own)
        chunk_ids = self._chunk_ids(chunks)
        return [self._assemble_ids(plan, chunk_ids, off) for plan, off in zip(plans, offsets, strict=True)]

    # ------------------------------------------------------------------ target side

    def _tokens(self, ids: Sequence[int], where: str) -> list[str]:
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise TypeError(f"{where} expects a sequence of int ids, got {type(ids).__name__}")
        skip = self._skip_ids
        decoder = self._decoder
        try:  # fast path: every id is in vocab.json (numpy ints hash like ints)
            return [decoder[i] for i in ids if i not in skip]
        except (KeyError, TypeError):
            pass
        tokens: list[str] = []
        for raw in ids:
            idx = int(raw)  # like transformers: int() of whatever comes in
            if idx in skip:
                continue
            token = decoder.get(idx)
            tokens.append(token if token is not None else self._fallback_token(idx))
        return tokens

    def _fallback_token(self, idx: int) -> str:
        # quirk: an id missing from vocab.json falls back to the spm model's OWN id -> piece table (another
        # id space; never happens with a contiguous vocab.json such as opus-mt-en-zh's).
        sp = self._sp_target
        if 0 <= idx < sp.get_piece_size():
            piece: str = sp.id_to_piece(idx)
            return piece or self.unk_token
        raise IndexError(
            f"token id {idx} is out of range: not in vocab.json (size {self.vocab_size}) "
            f"nor in target.spm (size {sp.get_piece_size()})"
        )

    def _groups(self, tokens: list[str]) -> tuple[list[list[str]], list[str]]:
        """Split at special-token strings -> ``(groups, separators)``, one more group than separators."""
        specials = self._special_tokens
        if specials.isdisjoint(tokens):
            return [tokens], []
        groups: list[list[str]] = []
        seps: list[str] = []
        current: list[str] = []
        for token in tokens:
            if token in specials:
                groups.append(current)
                seps.append(token)
                current = []
            else:
                current.append(token)
        groups.append(current)
        return groups, seps

    @staticmethod
    def _join(decoded: list[str], seps: list[str]) -> str:
        # quirk: a special token that survives skip_special_tokens (only reachable via the spm fallback above)
        # is kept literally and followed by one space.
        out = "".join(d + s + " " for d, s in zip(decoded[:-1], seps, strict=True)) + decoded[-1]
        # quirk: "▁" is replaced by a space also in pieces spm did not know (spm copies those verbatim), then
        # str.strip() removes ALL Unicode whitespace at both ends (not only " ").
        return out.replace(_SPIECE_UNDERLINE, " ").strip()

    def decode(self, ids: Sequence[int]) -> str:
        """Target ids -> text (== ``MarianTokenizer.decode(ids, skip_special_tokens=True)``).

        eos, pad and unk are dropped; language tokens such as ``>>cmn_Hans<<`` are NOT special and come out
        as text, exactly as in transformers.
        """
        # quirk: decoding goes through target.spm (transformers 4.x and `use_source_tokenizer=False`);
        # transformers 5.23 defaults to source.spm when vocabularies are shared, which yields the same text
        # unless the models use byte-fallback pieces or vocab.json has holes.
        groups, seps = self._groups(self._tokens(ids, "decode()"))
        if not seps:
            return self._join([self._sp_target.decode(groups[0])], seps)
        return self._join(self._decode_groups(groups), seps)

    def _decode_groups(self, groups: list[list[str]]) -> list[str]:
        if not any(groups):
            return [""] * len(groups)
        return [self._sp_target.decode(group) for group in groups]  # (one by one: see _spm_encode)

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """``[decode(ids) for ids in batch]``."""
        if isinstance(batch, (str, bytes)):
            raise TypeError(f"decode_batch() expects a sequence of id sequences, got {type(batch).__name__}")
        split = [self._groups(self._tokens(ids, f"decode_batch() item {i}")) for i, ids in enumerate(batch)]
        flat = [g for groups, _ in split for g in groups]
        decoded = self._decode_groups(flat) if flat else []
        out: list[str] = []
        pos = 0
        for groups, seps in split:
            out.append(self._join(decoded[pos : pos + len(groups)], seps))
            pos += len(groups)
        return out


def tokenizer_for(directory: str | os.PathLike[str], manifest: Any) -> Any:
    """The tokenizer of an exported model directory: Marian's, or the multilingual family's its manifest names
    (``tokenizer.kind``: nllb, m2m100, mbart50; :mod:`enzh.runtime.fairseq`)."""
    kind = manifest.tokenizer.get("kind", "marian")
    if kind == "marian":
        return MarianTokenizer.from_model_dir(directory, manifest.tokenizer)
    from enzh.runtime.fairseq import TOKENIZERS

    if kind not in TOKENIZERS:
        raise ValueError(
            f"{directory}: unknown tokenizer kind {kind!r} in manifest.json; known: {', '.join(TOKENIZERS)}"
        )
    return TOKENIZERS[kind].from_model_dir(directory, manifest.tokenizer)
