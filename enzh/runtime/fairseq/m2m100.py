"""M2M100's tokenizer (:class:`M2M100Tokenizer`, transformers' Python tokenizer: SentencePiece pieces looked up
in vocab.json) and its language codes (M2M100's and WMT21's)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from enzh.runtime.fairseq.added import AddedToken, literal_regex
from enzh.runtime.fairseq.base import FairseqTokenizer, clean_up_tokenization
from enzh.runtime.fairseq.files import (
    CONFIG_FILE,
    SPECIAL_TOKENS_MAP_FILE,
    SPM_FILE,
    VOCAB_FILE,
    extra_tokens,
    named_token,
    read_config,
    read_json,
    required,
    tokenizer_directory,
)
from enzh.runtime.pieces import load_spm

# transformers' FAIRSEQ_LANGUAGE_CODES of M2M100 (and of the WMT21 models), in transformers' order (the order of
# their ids).
M2M100_LANGUAGE_CODES = tuple(
    "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he hi hr ht hu "
    "hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or pa pl ps pt "
    "ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu".split()
)
WMT21_LANGUAGE_CODES = tuple("en ha is ja cs ru zh de".split())


class M2M100Tokenizer(FairseqTokenizer):
    """M2M100 (facebook/m2m100_*): SentencePiece pieces looked up BY STRING in vocab.json (fairseq's dictionary
    order, not the SentencePiece order); language tokens ``__en__``, ``__zh__``, ... get the ids right after
    vocab.json (len(vocab.json) + position in :data:`M2M100_LANGUAGE_CODES`, or in :data:`WMT21_LANGUAGE_CODES`
    when tokenizer_config.json says ``language_codes: wmt21``). Source ids: ``[__src__] tokens </s>``.

    :attr:`languages` holds the language tokens (``__en__``); :meth:`language_id` also takes transformers'
    ``src_lang`` codes (``en``).
    """

    family = "M2M100"
    _ROLES: ClassVar[dict[str, str]] = {
        "spm": "spm_file",
        "vocab": "vocab",
        "config": "config",
        "special_tokens_map": "special_tokens_map",
    }

    def __init__(
        self,
        sp: Any,
        vocab: dict[str, int],
        *,
        language_codes: Sequence[str] = M2M100_LANGUAGE_CODES,
        bos_token: str = "<s>",
        eos_token: str = "</s>",
        unk_token: str = "<unk>",
        pad_token: str = "<pad>",
        sep_token: str | None = "</s>",
        extra_special: Sequence[str] = (),
        added_tokens: Sequence[AddedToken] = (),
        clean_up: bool = False,
        vocab_name: str = "vocab.json",
    ) -> None:
        """Low-level constructor; prefer :meth:`from_dir`. ``added_tokens``: tokenizer_config.json's
        ``added_tokens_decoder`` entries beyond the special and language tokens."""
        named = {"bos": bos_token, "eos": eos_token, "unk": unk_token, "pad": pad_token}
        for role, name in named.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"{role}_token must be a non-empty str, got {name!r}")
            if name not in vocab:
                raise ValueError(f"{role}_token {name!r} is not in {vocab_name}")
        self._sp = sp
        self._encoder = dict(vocab)
        self._decoder = {idx: token for token, idx in vocab.items()}
        self.bos_id, self.eos_id = vocab[bos_token], vocab[eos_token]
        self.unk_id, self.pad_id = vocab[unk_token], vocab[pad_token]
        self.unk_token = unk_token
        size = len(vocab)  # quirk: language ids follow len(vocab.json), not its largest id
        lang_tokens = {f"__{code}__": size + i for i, code in enumerate(language_codes)}
        self.languages = tuple(lang_tokens)
        self._language_ids = {**lang_tokens, **{code: size + i for i, code in enumerate(language_codes)}}
        # added tokens: cut out of the text before SentencePiece (transformers' trie, longest first)
        added: dict[str, int] = {t: vocab[t] for t in (bos_token, eos_token, unk_token, pad_token)}
        if sep_token and sep_token in vocab:
            added[sep_token] = vocab[sep_token]
        added.update(lang_tokens)
        for token in added_tokens:
            expected = added.get(token.content)
            if expected is not None and expected != token.id:
                raise ValueError(
                    f"added token {token.content!r} has id {token.id} in tokenizer_config.json, but "
                    f"{expected} by M2M100's layout"
                )
            added[token.content] = token.id
        self._added = added
        self._added_by_id = {idx: token for token, idx in added.items()}
        self._split = literal_regex(list(added))
        # transformers' all_special_tokens / all_special_ids: skipped by decode(skip_special_tokens=True).
        # quirk: <unk> and the language tokens are among them.
        specials = [bos_token, eos_token, unk_token, pad_token, *([sep_token] if sep_token else [])]
        specials += [*lang_tokens, *extra_special]
        specials += [t.content for t in added_tokens if t.special]
        self._special_tokens = frozenset(specials)
        self._skip_ids = frozenset(added.get(t, vocab.get(t, self.unk_id)) for t in specials)
        self._clean_up = clean_up
        self.vocab_size = max([*vocab.values(), *added.values()]) + 1

    @classmethod
    def from_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        vocab: str = VOCAB_FILE,
        spm_file: str = SPM_FILE,
        config: str = CONFIG_FILE,
        special_tokens_map: str = SPECIAL_TOKENS_MAP_FILE,
    ) -> M2M100Tokenizer:
        """Load an M2M100 model directory: ``vocab.json``, ``sentencepiece.bpe.model``, and
        ``tokenizer_config.json`` / ``special_tokens_map.json`` where present (each may also be gzipped)."""
        directory = tokenizer_directory(path, f"{vocab} and {spm_file}")
        vocab_file = required(directory, vocab)
        sp = load_spm(required(directory, spm_file))
        data = read_json(vocab_file)
        if not isinstance(data, dict):
            raise ValueError(f"{vocab_file} must hold a JSON object token -> id, got {type(data).__name__}")
        for token, idx in data.items():
            if type(idx) is not int or idx < 0:
                raise ValueError(f"{vocab_file}: id of token {token!r} must be a non-negative integer, got {idx!r}")
        settings = read_config(directory, config, special_tokens_map)
        name = settings.get("language_codes", "m2m100")
        tables = {"m2m100": M2M100_LANGUAGE_CODES, "wmt21": WMT21_LANGUAGE_CODES}
        if name not in tables:
            raise ValueError(f"{directory}: language_codes must be 'm2m100' or 'wmt21', got {name!r}")
        named = {key: named_token(settings, key, default) for key, default in _M2M100_DEFAULTS.items()}
        decoder = settings.get("added_tokens_decoder")
        added = [
            AddedToken.parse(idx, item, f"{directory} tokenizer_config.json")
            for idx, item in (decoder.items() if isinstance(decoder, dict) else [])
        ]
        return cls(
            sp,
            data,
            language_codes=tables[name],
            bos_token=named["bos_token"] or "<s>",
            eos_token=named["eos_token"] or "</s>",
            unk_token=named["unk_token"] or "<unk>",
            pad_token=named["pad_token"] or "<pad>",
            sep_token=named["sep_token"],
            extra_special=extra_tokens(settings),
            added_tokens=added,
            clean_up=bool(settings.get("clean_up_tokenization_spaces", False)),
            vocab_name=str(vocab_file),
        )

    def _examples(self) -> tuple[str, ...]:
        return ("__en__", "__zh__")

    def language_id(self, code: str) -> int:
        """Id of the language token ``code`` (``__en__``) or of transformers' code for it (``en``)."""
        return super().language_id(code)

    def token_to_id(self, token: str) -> int | None:
        """Id of ``token`` (a special or language token, else vocab.json's entry), or None."""
        idx = self._added.get(token)
        return idx if idx is not None else self._encoder.get(token)

    def id_to_token(self, idx: int) -> str | None:
        """Token of ``idx`` (a special or language token, else vocab.json's entry), or None."""
        token = self._added_by_id.get(idx)
        return token if token is not None else self._decoder.get(idx)

    def _body(self, text: str) -> list[int]:
        segments: list[tuple[str, int | None]]
        if self._split is None:
            segments = [(text, None)]
        else:
            segments = []
            pos = 0
            for m in self._split.finditer(text):
                segments.append((text[pos : m.start()], None))
                segments.append((m.group(), self._added[m.group()]))
                pos = m.end()
            segments.append((text[pos:], None))
        chunks = [segment for segment, idx in segments if idx is None and segment]
        # quirk: each piece between special / language tokens goes through SentencePiece on its own, and the
        # pieces are looked up by STRING in vocab.json (a piece vocab.json lacks -> <unk>)
        # (one by one: a SentencePiece list call starts a thread pool, enzh.runtime.tokenizer._spm_encode)
        pieces = iter([self._sp.encode(chunk, out_type=str) for chunk in chunks])
        get, unk = self._encoder.get, self.unk_id
        out: list[int] = []
        for segment, idx in segments:
            if idx is not None:
                out.append(idx)
            elif segment:
                out.extend(get(piece, unk) for piece in next(pieces))
        return out

    def _decode(self, ids: Sequence[Any], where: str) -> str:
        skip = self._skip_ids
        tokens: list[str] = []
        for raw in ids:
            idx = int(raw)
            if idx in skip:
                continue
            token = self._added_by_id.get(idx)
            if token is None:
                token = self._decoder.get(idx)
                if token is None:
                    if idx < 0:
                        raise self._out_of_range(idx, where)
                    # quirk: an id vocab.json lacks (the model's 8 "madeupword" ids after the language tokens,
                    # which a model may generate) is "<unk>", kept literally as transformers does
                    token = self.unk_token
            tokens.append(token)
        # convert_tokens_to_string: special tokens that survive (a vocab.json entry spelled like one) are kept
        # literally, everything between them goes through SentencePiece; then str.strip().
        specials = self._special_tokens
        sp = self._sp
        out: list[str] = []
        current: list[str] = []
        for token in tokens:
            if token in specials:
                out.append(sp.decode(current) + token)
                current = []
            else:
                current.append(token)
        out.append(sp.decode(current))
        text = "".join(out).strip()
        return clean_up_tokenization(text) if self._clean_up else text


_M2M100_DEFAULTS: dict[str, str | None] = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "sep_token": "</s>",
}
