"""Opus-mt style tokenizer files for a demo model, trained on the generated corpus.

Writes into a model directory (English->Chinese; the Chinese->English model has the sides swapped):

* ``source.spm``: English SentencePiece unigram model (nmt_nfkc normalisation, digits split);
* ``target.spm``: Chinese SentencePiece unigram model (identity normalisation so the full-width
  punctuation ``，？。`` survives, every character of the corpus covered, digits split); Chinese as the
  *source* is nmt_nfkc-normalised like English (full-width letters and digits read as their ASCII forms);
* ``vocab.json``: one shared vocabulary, as in Helsinki-NLP/opus-mt-en-zh: ``</s>`` = 0, ``<unk>`` = 1,
  ``>>cmn_Hans<<`` = 2, ``>>cmn_Hant<<`` = 3 (en->zh only: opus-mt-zh-en has no language tokens), then the
  source pieces, then the target pieces not already there, and ``<pad>`` as the last id (the decoder start);
* ``tokenizer_config.json`` and ``special_tokens_map.json`` so ``transformers.MarianTokenizer`` /
  ``AutoTokenizer`` load the directory.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from enzh.demo import DEFAULT_DIRECTION, Direction
from enzh.demo.corpus import generate_pairs

__all__ = [
    "EOS",
    "LANG_TOKEN",
    "PAD",
    "SPECIAL_TOKENS",
    "UNK",
    "build_tokenizers",
    "with_lang_token",
]

EOS, UNK, PAD = "</s>", "<unk>", "<pad>"
LANG_TOKEN = ">>cmn_Hans<<"  # every source sentence starts with it; all targets are Simplified Chinese
SPECIAL_TOKENS = [EOS, UNK, LANG_TOKEN, ">>cmn_Hant<<"]

SOURCE_VOCAB = 1000
TARGET_VOCAB = 1000
TOKENIZER_SAMPLES = 60_000
TOKENIZER_SEED = 7


def with_lang_token(sentence: str, direction: Direction = DEFAULT_DIRECTION) -> str:
    """The source sentence as the model expects it: ``>>cmn_Hans<< sentence`` (unchanged if it has a code, or
    for a direction without language tokens)."""
    token = direction.language_token
    return sentence if token is None or sentence.startswith(">>") else f"{token} {sentence}"


def _train_spm(sentences: Iterable[str], vocab_size: int, *, normalization: str) -> bytes:
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(sentences)),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        character_coverage=1.0,
        normalization_rule_name=normalization,
        split_digits=True,
        unk_id=0,
        eos_id=1,
        bos_id=-1,
        pad_id=-1,
        unk_piece=UNK,
        eos_piece=EOS,
        num_threads=1,  # deterministic
        input_sentence_size=0,
        shuffle_input_sentence=False,
        minloglevel=2,
    )
    return model.getvalue()


def _pieces(model: bytes) -> list[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=model)
    return [
        sp.id_to_piece(i)
        for i in range(sp.get_piece_size())
        if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))
    ]


def build_vocab(
    source_pieces: Sequence[str], target_pieces: Sequence[str], direction: Direction = DEFAULT_DIRECTION
) -> dict[str, int]:
    vocab: dict[str, int] = {}
    for piece in [EOS, UNK, *direction.language_tokens, *source_pieces, *target_pieces]:
        if piece not in vocab and piece != PAD:
            vocab[piece] = len(vocab)
    vocab[PAD] = len(vocab)
    return vocab


def tokenizer_config(direction: Direction = DEFAULT_DIRECTION) -> dict[str, object]:
    return {
        "tokenizer_class": "MarianTokenizer",
        "source_lang": direction.source,
        "target_lang": direction.target,
        "separate_vocabs": False,
        "model_max_length": 512,
        "eos_token": EOS,
        "unk_token": UNK,
        "pad_token": PAD,
    }


def build_tokenizers(
    out_dir: str | Path,
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    source_vocab: int = SOURCE_VOCAB,
    target_vocab: int = TARGET_VOCAB,
    samples: int = TOKENIZER_SAMPLES,
    seed: int = TOKENIZER_SEED,
    direction: Direction = DEFAULT_DIRECTION,
) -> dict[str, int]:
    """Train both SentencePiece models on the (English, Chinese) ``pairs`` (default: ``samples`` training pairs
    generated with ``seed``), write the tokenizer files of ``direction`` into ``out_dir``, return the vocabulary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if pairs is None:
        pairs = generate_pairs(samples, seed, "train")
    from enzh.demo import lexicon

    # Every lexicon string appears at least once, whatever the sample drew.
    entries = [e for group in lexicon.lexicon().values() for e in group]
    extra_zh = sorted({str(getattr(e, "zh", "")) for e in entries} - {""})
    extra_zh = [z for z in extra_zh if "{" not in z]
    english = _train_spm((en for en, _ in pairs), source_vocab, normalization="nmt_nfkc")
    # Chinese output keeps its full-width punctuation (identity); Chinese input reads full-width forms as ASCII.
    chinese_rule = "identity" if direction.target == "zh" else "nmt_nfkc"
    chinese = _train_spm([zh for _, zh in pairs] + extra_zh, target_vocab, normalization=chinese_rule)
    source, target = (english, chinese) if direction.source == "en" else (chinese, english)
    (out / "source.spm").write_bytes(source)
    (out / "target.spm").write_bytes(target)
    vocab = build_vocab(_pieces(source), _pieces(target), direction)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    config = tokenizer_config(direction)
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    special = {"eos_token": EOS, "unk_token": UNK, "pad_token": PAD}
    (out / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n", encoding="utf-8")
    return vocab
