"""Reading a model directory's files: JSON (plain or gzipped), the SentencePiece model, tokenizer_config.json
with special_tokens_map.json, the named and extra special tokens, and the precompiled normalization rules
(tokenizer.json's ``Precompiled`` normalizer, or the SentencePiece model's protobuf ``precompiled_charsmap``).
:class:`PipelineFiles` gathers what NLLB's and mBART-50's ``from_dir`` read."""

from __future__ import annotations

import base64
import gzip
import json
import os
from pathlib import Path
from typing import Any

from enzh.runtime.fairseq.added import added_from_files, token_content
from enzh.runtime.pieces import load_spm, protobuf_fields

# The file names a HF model directory uses.
SPM_FILE = "sentencepiece.bpe.model"
TOKENIZER_JSON_FILE = "tokenizer.json"
CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
VOCAB_FILE = "vocab.json"

_NAMED_SPECIALS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def read_json(path: Path) -> Any:
    try:
        # an exported model directory may store JSON gzipped (name.json.gz), a HF model directory as plain JSON
        with (
            gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8") as f
        ):
            return json.load(f)  # duplicate keys: last one wins, as in transformers
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc


def _find(directory: Path, name: str) -> Path | None:
    """``directory / name``, or its gzipped copy ``name.gz``, or None."""
    for candidate in (directory / name, directory / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def tokenizer_directory(path: str | os.PathLike[str], expected: str) -> Path:
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(
            f"tokenizer directory {str(directory)!r} does not exist or is not a directory (expected {expected} in it)"
        )
    return directory


def required(directory: Path, name: str) -> Path:
    file = _find(directory, name)
    if file is None:
        raise FileNotFoundError(f"tokenizer file {name!r} not found in directory {str(directory)!r}")
    return file


def read_config(
    directory: Path, name: str = "tokenizer_config.json", special_map: str = "special_tokens_map.json"
) -> dict[str, Any]:
    """tokenizer_config.json, updated with special_tokens_map.json's entries when the config has no
    ``added_tokens_decoder`` (when transformers reads that file at all)."""
    config: dict[str, Any] = {}
    file = _find(directory, name)
    if file is not None:
        data = read_json(file)
        if not isinstance(data, dict):
            raise ValueError(f"{file} must hold a JSON object")
        config = data
    file = _find(directory, special_map)
    if file is not None and "added_tokens_decoder" not in config:
        data = read_json(file)
        if isinstance(data, dict):
            config.update(data)  # as in transformers, the map's entries win over the config's
    return config


def extra_tokens(config: dict[str, Any]) -> list[str]:
    """The extra special tokens named by the config (transformers 5 ``extra_special_tokens``, 4.x
    ``additional_special_tokens``)."""
    out: list[str] = []
    for key in ("extra_special_tokens", "additional_special_tokens"):
        values = config.get(key)
        if isinstance(values, list):
            out.extend(token for token in map(token_content, values) if token)
    return out


def _spm_charsmap(sp: Any) -> bytes | None:
    """The precompiled normalization rules of a loaded SentencePiece model (NormalizerSpec.precompiled_charsmap);
    None when it has none (identity normalization), as transformers' SentencePieceExtractor reports it."""
    for field, wire, value in protobuf_fields(sp.serialized_model_proto()):
        if field == 3 and wire == 2 and isinstance(value, bytes):  # ModelProto.normalizer_spec
            for sub, sub_wire, item in protobuf_fields(value):
                if sub == 2 and sub_wire == 2 and isinstance(item, bytes):  # precompiled_charsmap
                    return item or None
            return None
    return None


def _json_charsmap(tokenizer_json: dict[str, Any]) -> bytes | None:
    """The Precompiled charsmap of tokenizer.json's normalizer (what transformers extracts), or None."""
    spec = tokenizer_json.get("normalizer")
    if not spec:
        return None
    items = spec.get("normalizers") if spec.get("type") == "Sequence" else [spec]
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == "Precompiled" and item.get("precompiled_charsmap"):
            return base64.b64decode(item["precompiled_charsmap"])
    return None


def named_token(config: dict[str, Any], key: str, default: str | None) -> str | None:
    if key not in config:
        return default
    return token_content(config[key])


class PipelineFiles:
    """What from_dir reads for NLLB / mBART-50."""

    def __init__(
        self, path: str | os.PathLike[str], spm_file: str, tokenizer_json: str, config: str, special_tokens_map: str
    ) -> None:
        self.directory = tokenizer_directory(path, f"{spm_file} and {tokenizer_json}")
        self.where = str(self.directory)
        self.config = read_config(self.directory, config, special_tokens_map)
        self.sp = load_spm(required(self.directory, spm_file))
        file = _find(self.directory, tokenizer_json)
        self.tokenizer_json: dict[str, Any] | None = None
        if file is not None:
            data = read_json(file)
            if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
                raise ValueError(f"{file} is not a tokenizers serialization (no model object)")
            self.tokenizer_json = data
        self.model: dict[str, Any] = self.tokenizer_json["model"] if self.tokenizer_json else {}
        self.charsmap = _json_charsmap(self.tokenizer_json) if self.tokenizer_json else _spm_charsmap(self.sp)
        self.added = added_from_files(self.config, self.tokenizer_json, self.where)
        self.specials = {key: named_token(self.config, key, None) for key in _NAMED_SPECIALS}

    def token(self, key: str, default: str) -> str:
        value = self.specials.get(key)
        return value if value else default

    def spm_pieces(self) -> list[tuple[str, float]]:
        sp = self.sp
        return [(sp.id_to_piece(i), float(sp.get_score(i))) for i in range(sp.get_piece_size())]

    def flag(self, key: str) -> bool:
        return bool(self.config.get(key, False))
