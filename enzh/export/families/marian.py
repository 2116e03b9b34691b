"""Marian (MarianMTModel, the OPUS-MT models such as Helsinki-NLP/opus-mt-en-zh): the base layout with
post-norm layers, static sinusoidal positions and pad as the decoder's start token."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from enzh.export.families.base import Loader, TokenizerFiles, numpy, write_vocab
from enzh.export.graph import ModelArch, WeightStore, sinusoidal_positions
from enzh.runtime.adapter import LANGUAGE_TOKEN, default_language_token
from enzh.runtime.errors import ExportError

TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json")
VOCAB_FILE = "vocab.json.gz"  # the vocabulary as compact gzipped JSON: 65k pieces take 0.5 MB instead of 1.6 MB
TARGET_VOCAB_FILE = "target_vocab.json.gz"  # separate vocabularies only: the target side's own table


class MarianLoader(Loader):
    family = "marian"
    model_types = ("marian",)
    model_class = "MarianMTModel"

    def quirks(self, config: Any) -> dict[str, Any]:
        # HF Marian is always post-norm with no embedding layer norm; refuse configs that claim otherwise.
        if getattr(config, "normalize_before", False):
            raise ExportError("config.normalize_before=True (pre-norm) is not what MarianMTModel computes; unsupported")
        return {}

    def target_vocab_size(self, config: Any) -> int:
        # Separate vocabularies (untied embeddings) size the decoder side by decoder_vocab_size.
        return int(config.vocab_size if config.share_encoder_decoder_embeddings else config.decoder_vocab_size)

    def positions(self, model: Any, arch: ModelArch, store: WeightStore) -> None:
        positions = numpy(model.model.encoder.embed_positions.weight)
        # Marian's positions are static sinusoids (transformers recomputes them when loading); the precision
        # variants rely on it to compute them in the graph instead of storing them.
        if not np.allclose(positions, sinusoidal_positions(arch.max_positions, arch.d_model), atol=1e-5):
            raise ExportError("the model's position embeddings are not Marian's static sinusoids; unsupported model")
        store.add("positions", positions)

    def generation_defaults(self, model: Any) -> dict[str, Any]:
        values = super().generation_defaults(model)
        # Pad is the decoder start token of Marian and must never be generated, even if generation_config forgets.
        pad = int(model.config.pad_token_id)
        if [pad] not in values["bad_words_ids"]:
            values["bad_words_ids"].append([pad])
        return values

    # -- tokenizer ----------------------------------------------------------------------------------------

    def check_files(self, local: Path) -> None:
        """Refuse a model directory without the Marian tokenizer files the runtime needs."""
        separate = separate_vocabs(local)
        needed = (*TOKENIZER_FILES, "target_vocab.json") if separate else TOKENIZER_FILES
        missing = [name for name in needed if not (local / name).is_file()]
        if missing:
            raise ExportError(
                f"{local} lacks tokenizer file(s) {', '.join(missing)}; a Marian model directory holds "
                f"{', '.join(needed)} next to config.json"
                + (" (its tokenizer_config.json sets separate_vocabs)" if separate else "")
            )

    def write_tokenizer(self, local: Path, out_dir: Path, model: Any, default_target: str | None) -> TokenizerFiles:
        """Copy the SentencePiece models, write the vocabularies as gzipped JSON; the language tokens are the
        vocabulary's ``>>xx<<`` entries (added to the source text by the runtime)."""
        for name in ("source.spm", "target.spm"):
            shutil.copyfile(local / name, out_dir / name)
        vocab: dict[str, int] = json.loads((local / "vocab.json").read_text(encoding="utf-8"))
        write_vocab(out_dir / VOCAB_FILE, vocab)
        files = ["source.spm", "target.spm", VOCAB_FILE]
        record = {"source_spm": "source.spm", "target_spm": "target.spm", "vocab": VOCAB_FILE}
        if separate_vocabs(local):
            write_vocab(out_dir / TARGET_VOCAB_FILE, json.loads((local / "target_vocab.json").read_text("utf-8")))
            files.append(TARGET_VOCAB_FILE)
            record["target_vocab"] = TARGET_VOCAB_FILE
        config = model.config
        return TokenizerFiles(
            files=files,
            record=record,
            special_ids={
                "decoder_start": int(config.decoder_start_token_id),
                "eos": int(config.eos_token_id),
                "pad": int(config.pad_token_id),
                "unk": int(vocab.get("<unk>", 1)),
            },
            languages=_languages(vocab, default_target) | _source_and_target(local),
        )


def separate_vocabs(local: Path) -> bool:
    """Whether the model's tokenizer has separate source and target vocabularies (transformers'
    ``separate_vocabs`` in tokenizer_config.json: vocab.json for the source, target_vocab.json for the target)."""
    path = local / "tokenizer_config.json"
    if not path.is_file():
        return False
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path} is not valid JSON ({exc})") from exc
    return bool(config.get("separate_vocabs", False)) if isinstance(config, dict) else False


# tokenizer_config.json's source_lang/target_lang as ISO 639-1 (the OPUS-MT conversions write 639-3 codes).
_ISO_639_1 = {"eng": "en", "zho": "zh", "cmn": "zh", "deu": "de", "fra": "fr", "spa": "es", "jpn": "ja"}


def _source_and_target(local: Path) -> dict[str, str]:
    """``source``/``target`` of the manifest's language record: the languages tokenizer_config.json names (the
    runtime routes texts by them and keeps text already in the target language); nothing when it names none."""
    path = local / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    found = {}
    for role in ("source", "target"):
        code = config.get(f"{role}_lang") if isinstance(config, dict) else None
        if isinstance(code, str) and code.strip():
            code = code.strip().lower()
            found[role] = _ISO_639_1.get(code, code)
    return found if len(found) == 2 else {}


def _languages(vocab: dict[str, int], default_target: str | None) -> dict[str, Any]:
    """The manifest's language record: the vocabulary's ``>>xx<<`` tokens and the default one."""
    languages = sorted((tok for tok in vocab if LANGUAGE_TOKEN.fullmatch(tok)), key=vocab.__getitem__)
    default = default_target or default_language_token(languages)
    if default is not None and default not in languages:
        raise ExportError(f"--default-target {default!r} is not a language token of this model; have: {languages}")
    return {"tokens": languages, "default": default}


__all__ = ["MarianLoader"]
