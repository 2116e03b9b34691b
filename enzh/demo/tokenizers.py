"""Opus-mt style tokenizer files for the demo model, trained on the generated corpus.

Writes into a model directory:

* ``source.spm``: English SentencePiece unigram model (nmt_nfkc normalisation, digits split);
* ``target.spm``: Chinese SentencePiece unigram model (identity normalisation so the full-width
  punctuation ``，？。`` survives, every character of the corpus covered, digits split);
* ``vocab.json``: one shared vocabulary, as in Helsinki-NLP/opus-mt-en-zh: ``</s>`` = 0, ``<unk>`` = 1,
  ``>>cmn_Hans<<`` = 2, ``>>cmn_Hant<<`` = 3, then the source pieces, then the target pieces not already
  there, and ``<pad>`` as the last id (the decoder start token);
* ``tokenizer_config.json`` and ``special_tokens_map.json`` so ``transformers.MarianTokenizer`` /
  ``AutoTokenizer`` load the directory.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

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


def with_lang_token(sentence: str) -> str:
    """The source sentence as the model expects it: ``>>cmn_Hans<< sentence`` (unchanged if it has a code)."""
    return sentence if sentence.startswith(">>") else f"{LANG_TOKEN} {sentence}"


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


def build_vocab(source_pieces: Sequence[str], target_pieces: Sequence[str]) -> dict[str, int]:
    vocab: dict[str, int] = {}
    for piece in [*SPECIAL_TOKENS, *source_pieces, *target_pieces]:
        if piece not in vocab and piece != PAD:
            vocab[piece] = len(vocab)
    vocab[PAD] = len(vocab)
    return vocab


def tokenizer_config() -> dict[str, object]:
    return {
        "tokenizer_class": "MarianTokenizer",
        "source_lang": "en",
        "target_lang": "zh",
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
) -> dict[str, int]:
    """Train both SentencePiece models on ``pairs`` (default: ``samples`` training pairs generated with
    ``seed``), write the tokenizer files into ``out_dir`` and return the vocabulary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if pairs is None:
        pairs = generate_pairs(samples, seed, "train")
    from enzh.demo import lexicon

    # Every lexicon string appears at least once, whatever the sample drew.
    entries = [e for group in lexicon.lexicon().values() for e in group]
    extra_zh = sorted({str(getattr(e, "zh", "")) for e in entries} - {""})
    extra_zh = [z for z in extra_zh if "{" not in z]
    source = _train_spm((en for en, _ in pairs), source_vocab, normalization="nmt_nfkc")
    target = _train_spm([zh for _, zh in pairs] + extra_zh, target_vocab, normalization="identity")
    (out / "source.spm").write_bytes(source)
    (out / "target.spm").write_bytes(target)
    vocab = build_vocab(_pieces(source), _pieces(target))
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(), indent=2) + "\n", encoding="utf-8")
    special = {"eos_token": EOS, "unk_token": UNK, "pad_token": PAD}
    (out / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n", encoding="utf-8")
    return vocab
