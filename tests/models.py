"""The tests' random-weight Marian builders: the shared ones live in enzh.tools.models (also used by bench and
the reports); the ones below only tests need (single-target pairs, id-level models saved for export)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from enzh.tools.models import (
    HANZI,
    REFERENCE_CONFIG,
    WORDS,
    build_reference_shaped,
    build_tiny_marian,
    corpus,
    save_random_marian,
    train_spm,
    write_tokenizer,
)

__all__ = [
    "GERMAN",
    "HANZI",
    "REFERENCE_CONFIG",
    "WORDS",
    "build_reference_shaped",
    "build_single_target_marian",
    "build_tiny_marian",
    "corpus",
    "save_for_export",
    "save_random_marian",
    "train_spm",
    "write_tokenizer",
]


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


def generate_reference(model: Any, sources: list[list[int]], pad: int, num_beams: int, max_length: int) -> Any:
    """``model.generate()`` of the padded batch ``sources``: (each row's ids after the decoder start, up to and
    including eos, as tuples; the raw output tensor)."""
    import torch

    from enzh.runtime.batching import pad_batch

    ids, mask = pad_batch(sources, pad)
    with torch.no_grad():
        out = model.generate(
            input_ids=torch.from_numpy(ids),
            attention_mask=torch.from_numpy(mask),
            num_beams=num_beams,
            max_length=max_length,
        )
    rows = []
    for row in out.tolist():
        row = row[1:]
        rows.append(tuple(row[: row.index(0) + 1] if 0 in row else row))
    return rows, out
