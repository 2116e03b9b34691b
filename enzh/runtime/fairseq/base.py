"""The tokenizers' shared parts. :class:`FairseqTokenizer`: what all three families share (``[language] tokens
</s>`` sources, language lookups, input and id checks, SentencePiece spans). :class:`PipelineTokenizer`: the
``tokenizers`` pipeline that NLLB and mBART-50 run (added tokens, normalizer, Metaspace pre-tokenizer, BPE or
Unigram model, Metaspace decoder)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from enzh.runtime.fairseq.added import AddedToken, Matcher
from enzh.runtime.fairseq.models import Bpe, Unigram
from enzh.runtime.fairseq.normalizer import Normalizer
from enzh.runtime.pieces import Span, pieces_with_spans

_SPIECE_UNDERLINE = "▁"


def _check_text(text: object, where: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{where} expects str, got {type(text).__module__}.{type(text).__qualname__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as bad:
        raise ValueError(
            f"text cannot be encoded as UTF-8 (lone surrogate {text[bad.start]!r} at offset {bad.start}): "
            f"{text[max(0, bad.start - 20) : bad.start + 20]!r}"
        ) from None
    return text


def _check_ids(ids: object, where: str) -> Sequence[Any]:
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"{where} expects a sequence of int ids, got {type(ids).__name__}")
    return ids  # type: ignore[return-value]


def clean_up_tokenization(text: str) -> str:
    # transformers' clean_up_tokenization (applied when the config sets clean_up_tokenization_spaces)
    return (
        text.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
    )


# ---------------------------------------------------------------------------------------------------- shared base


class FairseqTokenizer:
    """What the three families share: ``[language] tokens </s>`` sources, language lookups, id checks, spans."""

    family: ClassVar[str] = ""
    eos_id: int
    pad_id: int
    unk_id: int
    bos_id: int | None
    vocab_size: int
    languages: tuple[str, ...]

    _sp: Any
    _language_ids: dict[str, int]

    # ------------------------------------------------------------------ languages

    def language_id(self, code: str) -> int:
        """Id of the language token of ``code`` (e.g. ``eng_Latn``, ``en``, ``en_XX``)."""
        idx = self._language_ids.get(code) if isinstance(code, str) else None
        if idx is None:
            shown = ", ".join(self.languages[:4])
            for preferred in self._examples():
                if preferred not in shown and preferred in self._language_ids:
                    shown += f", {preferred}"
            raise ValueError(
                f"unknown {self.family} language {code!r}; this tokenizer knows {len(self.languages)} languages "
                f"(e.g. {shown}, ...; see .languages)"
            )
        return idx

    def _examples(self) -> tuple[str, ...]:
        return ()

    # manifest.tokenizer record role -> from_dir keyword
    _ROLES: ClassVar[dict[str, str]] = {
        "spm": "spm_file",
        "tokenizer_json": "tokenizer_json",
        "config": "config",
        "special_tokens_map": "special_tokens_map",
    }

    @classmethod
    def from_model_dir(cls, path: str | os.PathLike[str], files: dict[str, str]) -> Any:
        """The tokenizer of an exported model directory, whose manifest's ``tokenizer`` record names the files by
        role (``spm``, ``tokenizer_json``, ``config``, ``special_tokens_map``; M2M100 also ``vocab``); a role it
        does not name keeps the HF file name, other entries (``kind``) are ignored."""
        kwargs = {cls._ROLES[role]: name for role, name in files.items() if role in cls._ROLES}
        return cls.from_dir(path, **kwargs)  # type: ignore[attr-defined]  # each family defines its own

    def _frame(self, body: list[int], language: int) -> list[int]:
        return [language, *body, self.eos_id]

    # ------------------------------------------------------------------ encoding

    def _body(self, text: str) -> list[int]:
        raise NotImplementedError

    def encode(self, text: str, source_language: str) -> list[int]:
        """Source ids of ``text`` with its language token and </s> (== transformers' ``input_ids``)."""
        language = self.language_id(source_language)
        return self._frame(self._body(_check_text(text, "encode()")), language)

    def encode_batch(self, texts: Sequence[str], source_language: str) -> list[list[int]]:
        """``[encode(t, source_language) for t in texts]``."""
        if isinstance(texts, (str, bytes)):
            raise TypeError(f"encode_batch() expects a sequence of str, got a single {type(texts).__name__}")
        language = self.language_id(source_language)
        return [
            self._frame(self._body(_check_text(text, f"encode_batch() item {i}")), language)
            for i, text in enumerate(texts)
        ]

    # ------------------------------------------------------------------ decoding

    def _decode(self, ids: Sequence[Any], where: str) -> str:
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        """Ids -> text (== transformers' ``decode(ids, skip_special_tokens=True)``)."""
        return self._decode(_check_ids(ids, "decode()"), "decode()")

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """``[decode(ids) for ids in batch]``."""
        if isinstance(batch, (str, bytes)):
            raise TypeError(f"decode_batch() expects a sequence of id sequences, got {type(batch).__name__}")
        return [
            self._decode(_check_ids(ids, f"decode_batch() item {i}"), f"decode_batch() item {i}")
            for i, ids in enumerate(batch)
        ]

    def _out_of_range(self, idx: int, where: str) -> IndexError:
        return IndexError(f"{where}: token id {idx} is out of range: no token has it (vocab_size {self.vocab_size})")

    # ------------------------------------------------------------------ pieces

    def source_spans(self, text: str) -> list[tuple[str, Span]] | None:
        """sentencepiece.bpe.model's pieces of ``text`` with their character ranges (None: not valid UTF-8).
        These are SentencePiece's own pieces: for NLLB / mBART-50 they can differ from the tokens behind
        :meth:`encode` around runs of whitespace and the grapheme quirks of the normalizer."""
        return pieces_with_spans(self._sp, text)

    def target_spans(self, text: str) -> list[tuple[str, Span]] | None:
        """The same as :meth:`source_spans` (one SentencePiece model serves both sides)."""
        return pieces_with_spans(self._sp, text)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocab_size={self.vocab_size}, eos_id={self.eos_id}, unk_id={self.unk_id}, "
            f"pad_id={self.pad_id}, bos_id={self.bos_id}, languages={len(self.languages)})"
        )


# ---------------------------------------------------------------------------------------------------- pipeline


class PipelineTokenizer(FairseqTokenizer):
    """A transformers 5 tokenizer backed by the ``tokenizers`` library: added tokens, normalizer, Metaspace
    pre-tokenizer (prepend "▁" always, split before every "▁"), BPE or Unigram model, Metaspace decoder."""

    def __init__(
        self,
        sp: Any,
        model: Bpe | Unigram,
        added: Sequence[AddedToken],
        normalizer: Normalizer,
        *,
        codes: Sequence[str],
        eos_token: str,
        pad_token: str,
        unk_token: str,
        bos_token: str | None,
        named_specials: Sequence[str],
        clean_up: bool,
    ) -> None:
        self._sp = sp
        self._model = model
        self._normalize = normalizer
        by_id: dict[int, AddedToken] = {}
        by_content: dict[str, AddedToken] = {}
        for token in sorted(added, key=lambda t: t.id):
            by_id[token.id] = token
            by_content[token.content] = token
        self._added_by_id = {idx: token.content for idx, token in by_id.items()}
        self._added_by_content = {content: token.id for content, token in by_content.items()}
        # tokenizers matches tokens with normalized=False in the raw text, those with normalized=True (NLLB's
        # <mask>) in the normalized text, against their own normalized form.
        self._raw = Matcher({t.content: t for t in by_content.values() if not t.normalized})
        self._normalized = Matcher({normalizer(t.content): t for t in by_content.values() if t.normalized})
        # decode(skip_special_tokens=True) drops every token whose STRING is a special added token (transformers
        # marks the named special tokens special whatever the file says).
        # quirk: <unk> is one of them, so unknown words vanish from decoded text.
        self._special = frozenset({t.content for t in by_content.values() if t.special} | set(named_specials))
        self._clean_up = clean_up

        def required(role: str, token: str) -> int:
            idx = self.token_to_id(token)
            if idx is None:
                raise ValueError(f"{role} token {token!r} is neither an added token nor in the vocabulary")
            return idx

        self.eos_id = required("eos", eos_token)
        self.pad_id = required("pad", pad_token)
        self.unk_id = required("unk", unk_token)
        self.bos_id = self.token_to_id(bos_token) if bos_token else None
        ids = {code: self.token_to_id(code) for code in dict.fromkeys(codes)}
        present = sorted((idx, code) for code, idx in ids.items() if idx is not None)
        if not present:
            raise ValueError(f"none of the {self.family} language codes (e.g. {', '.join(codes[:3])}) is a token")
        self.languages = tuple(code for _, code in present)
        self._language_ids = {code: idx for idx, code in present}
        # the number of ids (transformers' len(tokenizer)); the model's own vocab_size may be padded beyond it
        self.vocab_size = max([-1, *model.vocab.values(), *self._added_by_id]) + 1

    # ------------------------------------------------------------------ lookups

    def token_to_id(self, token: str) -> int | None:
        """Id of ``token`` (an added token, else a model vocabulary entry), or None."""
        idx = self._added_by_content.get(token)
        return idx if idx is not None else self._model.vocab.get(token)

    def id_to_token(self, idx: int) -> str | None:
        """Token of ``idx`` (an added token, else a model vocabulary entry), or None."""
        token = self._added_by_id.get(idx)
        return token if token is not None else self._model.id_to_token(idx)

    # ------------------------------------------------------------------ encoding

    def _words(self, text: str, out: list[int]) -> None:
        # Metaspace pre-tokenizer: " " -> "▁", "▁" prepended unless the piece starts with one (quirk: also after
        # every added token, and a typed "▁" counts), then one word per "▁" (quirk: a leading or trailing space is
        # kept, as a word "▁" of its own, where SentencePiece would drop it).
        text = text.replace(" ", _SPIECE_UNDERLINE)
        if text[0] != _SPIECE_UNDERLINE:
            text = _SPIECE_UNDERLINE + text
        encode = self._model.encode
        for word in text.split(_SPIECE_UNDERLINE)[1:]:
            out.extend(encode(_SPIECE_UNDERLINE + word))

    def _body(self, text: str) -> list[int]:
        out: list[int] = []
        for segment, token in self._raw.split(text):
            if token is not None:
                out.append(token.id)
                continue
            # quirk: each piece between added tokens is normalized and pre-tokenized on its own
            normalized = self._normalize(segment)
            if not normalized:
                continue
            for piece, inner in self._normalized.split(normalized):
                if inner is not None:
                    out.append(inner.id)
                elif piece:
                    self._words(piece, out)
        return out

    # ------------------------------------------------------------------ decoding

    def _decode(self, ids: Sequence[Any], where: str) -> str:
        tokens: list[str] = []
        special = self._special
        added = self._added_by_id
        model = self._model
        for raw in ids:
            idx = int(raw)  # like transformers: int() of whatever comes in (numpy ints included)
            token = added.get(idx)
            if token is None:
                token = model.id_to_token(idx) if idx >= 0 else None
                if token is None:
                    raise self._out_of_range(idx, where)
            if token not in special:
                tokens.append(token)
        if not tokens:
            return ""
        # Metaspace decoder: "▁" -> " ", except that the FIRST token loses all its "▁" (quirk: not only a leading
        # one: "a▁b" first comes out "ab").
        text = tokens[0].replace(_SPIECE_UNDERLINE, "") + "".join(tokens[1:]).replace(_SPIECE_UNDERLINE, " ")
        return clean_up_tokenization(text) if self._clean_up else text
