"""NLLB-200, M2M100 and mBART-50 tokenizers on plain ``sentencepiece`` and ``json``: no transformers, no torch.

Each class gives the ids and strings of its transformers 5.23 counterpart (``tokenizers`` 0.23) for the same HF
model directory:

* ``encode(text, lang)`` == ``tokenizer(text)["input_ids"]`` with ``tokenizer.src_lang = lang``
* ``decode(ids)`` == ``tokenizer.decode(ids, skip_special_tokens=True)``

:class:`M2M100Tokenizer` mirrors a Python ("slow") transformers tokenizer: SentencePiece pieces looked up in
``vocab.json``. :class:`NllbTokenizer` (BPE) and :class:`MBart50Tokenizer` (Unigram) mirror tokenizers that
transformers 5 backs by the Rust ``tokenizers`` library, whose pipeline differs from SentencePiece's own encoder
(no trimming of outer spaces, a grapheme-wise normalizer, its own BPE merge order and Unigram lattice over a
vocabulary that also holds the special tokens): that pipeline is reimplemented here step by step, from
``tokenizer.json`` when the directory has one (as transformers reads it) or else from ``sentencepiece.bpe.model``
(as transformers converts it). ``sentencepiece`` then only serves :meth:`source_spans` / :meth:`target_spans`.

The comments marked "quirk" describe transformers/tokenizers behaviour that is reproduced on purpose. Deliberate
differences: text with a lone surrogate -> ValueError (transformers raises an opaque TypeError/RuntimeError); an id
no token has -> IndexError (transformers drops it silently, or writes "<unk>" for M2M100); an unknown language ->
ValueError (transformers uses the <unk> id or raises KeyError); an NLLB directory without ``tokenizer.json`` gets
the fairseq layout (language codes after the SentencePiece pieces, then <mask>) where transformers 5.23 loses the
language codes (they become <unk>); M2M100's language tokens are always special tokens (cut out of the text,
skipped when decoding), as with the hub's files, where transformers 5.23 ignores them in a directory whose config
does not list them (one it saved itself); ``truncation`` stored in ``tokenizer.json`` is not applied.

The stages, one module each: :mod:`~enzh.runtime.fairseq.files` (the directory's files), ``normalizer`` (graphemes
and the precompiled charsmap), ``added`` (added tokens and their matcher), ``models`` (BPE and Unigram), ``base``
(the shared base and the ``tokenizers`` pipeline), and one module per family: ``nllb``, ``mbart50``, ``m2m100``.
"""

from __future__ import annotations

from enzh.runtime.fairseq.base import FairseqTokenizer
from enzh.runtime.fairseq.m2m100 import M2M100_LANGUAGE_CODES, WMT21_LANGUAGE_CODES, M2M100Tokenizer
from enzh.runtime.fairseq.mbart50 import MBART50_LANGUAGE_CODES, MBart50Tokenizer
from enzh.runtime.fairseq.nllb import NLLB_LANGUAGE_CODES, NllbTokenizer

__all__ = [
    "M2M100_LANGUAGE_CODES",
    "MBART50_LANGUAGE_CODES",
    "NLLB_LANGUAGE_CODES",
    "TOKENIZERS",
    "WMT21_LANGUAGE_CODES",
    "M2M100Tokenizer",
    "MBart50Tokenizer",
    "NllbTokenizer",
]


# manifest.tokenizer["kind"] -> class (enzh.runtime.tokenizer.tokenizer_for)
TOKENIZERS: dict[str, type[FairseqTokenizer]] = {
    "nllb": NllbTokenizer,
    "m2m100": M2M100Tokenizer,
    "mbart50": MBart50Tokenizer,
}
