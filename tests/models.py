"""Builders for tiny random Marian models in opus-mt layout (weights, config, spm tokenizers, vocab.json)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

WORDS = (
    "the a cat dog house tree river city morning evening teacher student book coffee tea water train "
    "station park museum friend brother sister weather today tomorrow yesterday nice big small red blue "
    "green quickly slowly walk run read write drink eat see buy sell go come where what when why how is "
    "are was were have has "
).split()
HANZI = "我你他她们是的了在有不这个人中大上来到说国和地也子时道出而要于就下得可生会自着去之过家学对小多然"


def corpus(seed: int, n: int = 400) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    en = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))).capitalize() + rng.choice(".?!,")
        for _ in range(n)
    ]
    zh = ["".join(rng.choice(HANZI) for _ in range(rng.randint(2, 15))) + rng.choice("。？！，") for _ in range(n)]
    return en, zh


def train_spm(lines: list[str], prefix: Path, vocab_size: int) -> None:
    import io

    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        bos_id=-1,
        eos_id=0,
        unk_id=1,
        pad_id=-1,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
    )
    prefix.write_bytes(model.getvalue())


def write_tokenizer(directory: Path, seed: int = 0, spm_vocab: int = 80) -> dict[str, int]:
    """source.spm/target.spm/vocab.json in opus-mt layout: </s>=0, <unk>=1, language tokens, pieces, <pad> last."""
    import sentencepiece as spm

    en, zh = corpus(seed)
    train_spm(en, directory / "source.spm", spm_vocab)
    train_spm(zh, directory / "target.spm", spm_vocab)
    vocab: dict[str, int] = {"</s>": 0, "<unk>": 1, ">>cmn_Hans<<": 2, ">>cmn_Hant<<": 3}
    for name in ("source.spm", "target.spm"):
        sp = spm.SentencePieceProcessor(model_file=str(directory / name))
        for i in range(sp.get_piece_size()):
            piece = sp.id_to_piece(i)
            if piece not in vocab and piece not in ("<unk>", "</s>", "<s>"):
                vocab[piece] = len(vocab)
    vocab["<pad>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"source_lang": "en", "target_lang": "zh", "model_max_length": 512}), encoding="utf-8"
    )
    return vocab


def build_tiny_marian(directory: Path, *, seed: int = 0, eos_bias: float = 0.0, **overrides: Any) -> Path:
    """A random MarianMTModel saved with its tokenizer files; ``overrides`` go to MarianConfig."""
    directory.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(directory, seed)
    return save_random_marian(directory, len(vocab), seed=seed, eos_bias=eos_bias, **overrides)


def save_random_marian(directory: Path, vocab_size: int, *, seed: int, eos_bias: float, **overrides: Any) -> Path:
    """Save a random MarianMTModel of ``vocab_size`` tokens (pad = the last id) next to tokenizer files."""
    import torch
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    pad = vocab_size - 1
    settings: dict[str, Any] = dict(
        vocab_size=vocab_size,
        decoder_vocab_size=vocab_size,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        pad_token_id=pad,
        decoder_start_token_id=pad,
        eos_token_id=0,
        forced_eos_token_id=0,
        activation_function="swish",
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
    )
    settings.update(overrides)
    torch.manual_seed(seed)
    model = MarianMTModel(MarianConfig(**settings))
    with torch.no_grad():
        # Unit-scale random weights so logits depend strongly on the input (not on the bias alone).
        for pname, p in model.named_parameters():
            if "layer_norm" in pname:
                p.normal_(1.0 if pname.endswith("weight") else 0.0, 0.1)
            elif p.dim() > 1 and not any(k in pname for k in ("embed", "shared", "lm_head")):
                p.normal_(0, p.shape[1] ** -0.5)
            else:
                p.normal_(0, 1.0 if p.dim() > 1 else 0.1)
        model.final_logits_bias.normal_(0, 0.5)
        model.final_logits_bias[0, 0] += eos_bias
    model.generation_config = GenerationConfig(
        bad_words_ids=[[pad]],
        decoder_start_token_id=pad,
        eos_token_id=0,
        forced_eos_token_id=0,
        pad_token_id=pad,
        max_length=settings["max_position_embeddings"],
        num_beams=4,
        renormalize_logits=True,
    )
    model.save_pretrained(directory)
    return directory


GERMAN = (
    "der die das ein eine Katze Hund Haus Baum Fluss Stadt Morgen Abend Lehrer Buch Kaffee Tee Wasser Zug "
    "Bahnhof Park Freund Bruder Schwester Wetter heute morgen gestern schön groß klein rot blau grün schnell "
    "langsam gehen laufen lesen schreiben trinken essen sehen kaufen wo was wann warum wie ist sind war hat"
).split()


def _pieces(spm_file: Path) -> list[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(spm_file))
    pieces = (sp.id_to_piece(i) for i in range(sp.get_piece_size()))
    return [p for p in pieces if p not in ("<unk>", "</s>", "<s>")]


def build_single_target_marian(
    directory: Path, *, separate_vocabs: bool, seed: int = 0, eos_bias: float = 0.0, **overrides: Any
) -> Path:
    """A tiny random Marian model with one target language, so no ``>>xx<<`` tokens in its vocabulary.

    ``separate_vocabs=False``: en->de shaped, one vocab.json for both sides, shared (tied) embeddings.
    ``separate_vocabs=True``: zh->en shaped, as transformers converts Marian models whose embeddings are not
    shared: vocab.json (source pieces) and target_vocab.json (target pieces) of equal size with <pad> last in
    both, ``separate_vocabs`` in tokenizer_config.json, separate encoder and decoder embeddings.
    """
    directory.mkdir(parents=True, exist_ok=True)
    en, zh = corpus(seed)
    rng = random.Random(seed)
    if separate_vocabs:
        source_lines, target_lines, languages = zh, en, ("zh", "en")
    else:
        target_lines = [
            " ".join(rng.choice(GERMAN) for _ in range(rng.randint(2, 12))).capitalize() + rng.choice(".?!,")
            for _ in range(len(en))
        ]
        source_lines, languages = en, ("en", "de")
    train_spm(source_lines, directory / "source.spm", 80)
    train_spm(target_lines, directory / "target.spm", 80)
    source, target = _pieces(directory / "source.spm"), _pieces(directory / "target.spm")
    config: dict[str, Any] = {"source_lang": languages[0], "target_lang": languages[1], "model_max_length": 512}
    if separate_vocabs:
        size = 3 + max(len(source), len(target))  # </s>, <unk>, the pieces (filler for the shorter), <pad>
        for name, pieces in (("vocab.json", source), ("target_vocab.json", target)):
            table = {"</s>": 0, "<unk>": 1}
            table.update({piece: 2 + i for i, piece in enumerate(pieces)})
            table.update({f"▁filler{i}": i for i in range(len(table), size - 1)})
            table["<pad>"] = size - 1
            (directory / name).write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
        config["separate_vocabs"] = True
        overrides = {"share_encoder_decoder_embeddings": False, **overrides}
    else:
        table = {"</s>": 0, "<unk>": 1}
        for piece in (*source, *target):
            table.setdefault(piece, len(table))
        table["<pad>"] = len(table)
        (directory / "vocab.json").write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
        size = len(table)
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return save_random_marian(directory, size, seed=seed, eos_bias=eos_bias, **overrides)


REFERENCE_CONFIG = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "opus-mt-en-zh"


def build_reference_shaped(directory: Path, *, seed: int = 0, config_dir: Path = REFERENCE_CONFIG) -> Path:
    """A model with exactly opus-mt-en-zh's config and generation config, seeded random weights.

    Its vocab.json has the real layout (</s>=0, <unk>=1, language tokens, <pad>=65000); the pieces of a tiny
    SentencePiece model come first and synthetic filler entries complete the 65,001 ids.
    """
    import torch
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    directory.mkdir(parents=True, exist_ok=True)
    config = MarianConfig.from_pretrained(config_dir)
    vocab = write_tokenizer(directory, seed)
    del vocab["<pad>"]
    filler = 0
    while len(vocab) < config.pad_token_id:
        vocab[f"▁filler{filler}"] = len(vocab)
        filler += 1
    vocab["<pad>"] = config.pad_token_id
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    torch.manual_seed(seed)
    model = MarianMTModel(config)
    model.generation_config = GenerationConfig.from_pretrained(config_dir)
    model.save_pretrained(directory)
    return directory


def save_for_export(model: Any, directory: Path, *, seed: int = 0) -> Path:
    """Save an in-memory MarianMTModel built for id-level tests (no tokenizer of its own) with tokenizer files
    that ``enzh export`` accepts: tiny SentencePiece models and a vocab.json of exactly the model's target
    vocabulary (</s>=0, <unk>=1, filler pieces, <pad> at the pad id). Only ids matter to such tests."""
    directory.mkdir(parents=True, exist_ok=True)
    en, zh = corpus(seed)
    train_spm(en, directory / "source.spm", 80)
    train_spm(zh, directory / "target.spm", 80)
    config = model.config
    pad = int(config.pad_token_id)
    size = int(config.vocab_size)
    vocab = {"</s>": 0, "<unk>": 1, **{f"▁w{i}": i for i in range(2, size) if i != pad}, "<pad>": pad}
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    model.save_pretrained(directory)
    return directory
