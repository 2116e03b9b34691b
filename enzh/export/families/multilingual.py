"""The tokenizer stage of the multilingual families (M2M100, NLLB-200, mBART-50): which tokenizer a model
directory holds, the files the runtime reads (:mod:`enzh.runtime.fairseq`), and its languages."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from enzh.export.families.base import TokenizerFiles
from enzh.runtime.adapter import CODE_ALIASES
from enzh.runtime.errors import ExportError

# tokenizer_config.json's tokenizer_class -> the runtime tokenizer kind.
KINDS = {
    "NllbTokenizer": "nllb",
    "NllbTokenizerFast": "nllb",
    "M2M100Tokenizer": "m2m100",
    "MBart50Tokenizer": "mbart50",
    "MBart50TokenizerFast": "mbart50",
}
SPM_FILE = "sentencepiece.bpe.model"
# role in manifest.tokenizer -> the HF file, whether the kind needs it, and whether enzh stores it gzipped
FILES = {
    "spm": (SPM_FILE, True, False),
    "tokenizer_json": ("tokenizer.json", False, True),
    "config": ("tokenizer_config.json", True, False),
    "special_tokens_map": ("special_tokens_map.json", False, False),
    "vocab": ("vocab.json", True, True),  # M2M100 only
}
# The source and target a model translates when none is asked for: English into Simplified Chinese.
DEFAULT_SOURCE = {"nllb": "eng_Latn", "m2m100": "__en__", "mbart50": "en_XX"}
DEFAULT_TARGET = {"nllb": "zho_Hans", "m2m100": "__zh__", "mbart50": "zh_CN"}


def tokenizer_kind(local: Path, kinds: tuple[str, ...]) -> str:
    """The runtime tokenizer kind of the model in ``local`` (from tokenizer_config.json), one of ``kinds``."""
    path = local / "tokenizer_config.json"
    if not path.is_file():
        raise ExportError(f"{local} has no tokenizer_config.json; the model's tokenizer cannot be identified")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path} is not valid JSON ({exc})") from exc
    name = str(config.get("tokenizer_class", "")) if isinstance(config, dict) else ""
    kind = KINDS.get(name)
    if kind not in kinds:
        accepted = ", ".join(sorted(n for n, k in KINDS.items() if k in kinds))
        raise ExportError(
            f"{local}: tokenizer_class {name!r} is not one enzh reads for this model; accepted: {accepted}"
        )
    return kind


def needed_files(kind: str) -> list[str]:
    return [name for role, (name, needed, _) in FILES.items() if needed and (role != "vocab" or kind == "m2m100")]


def check_files(local: Path, kinds: tuple[str, ...]) -> None:
    kind = tokenizer_kind(local, kinds)
    missing = [name for name in needed_files(kind) if not (local / name).is_file()]
    if missing:
        raise ExportError(
            f"{local} lacks tokenizer file(s) {', '.join(missing)}: enzh's {kind} tokenizer reads them without "
            "transformers (a hub repository of the model holds them)"
        )


def write_tokenizer(
    local: Path, out_dir: Path, model: Any, default_target: str | None, kinds: tuple[str, ...]
) -> TokenizerFiles:
    """Copy the tokenizer files (the large JSON ones gzipped), and read the languages back with the runtime's
    tokenizer: the codes with their ids, the default source and target."""
    from enzh.runtime.fairseq import TOKENIZERS

    kind = tokenizer_kind(local, kinds)
    record: dict[str, str] = {"kind": kind}
    files = []
    for role, (name, _, packed) in FILES.items():
        if not (local / name).is_file() or (role == "vocab" and kind != "m2m100"):
            continue
        stored = f"{name}.gz" if packed else name
        if packed:
            with open(local / name, "rb") as raw, gzip.GzipFile(out_dir / stored, mode="wb", mtime=0) as zipped:
                shutil.copyfileobj(raw, zipped)
        else:
            shutil.copyfile(local / name, out_dir / stored)
        record[role] = stored
        files.append(stored)
    tokenizer = TOKENIZERS[kind].from_model_dir(out_dir, record)
    codes = {code: int(tokenizer.language_id(code)) for code in tokenizer.languages}
    config = model.config
    return TokenizerFiles(
        files=files,
        record=record,
        special_ids={
            # These families start decoding from </s> (the config's decoder_start_token_id) and force the target.
            "decoder_start": int(config.decoder_start_token_id),
            "eos": int(config.eos_token_id),
            "pad": int(config.pad_token_id),
            "unk": int(tokenizer.unk_id),
            "bos": int(config.bos_token_id),
        },
        languages={
            "codes": codes,
            "default_source": _pick(DEFAULT_SOURCE[kind], codes, kind, "source"),
            "default_target": _pick(default_target or DEFAULT_TARGET[kind], codes, kind, "--default-target"),
        },
    )


def _pick(code: str, codes: dict[str, int], kind: str, what: str) -> str:
    found = CODE_ALIASES.get(kind, {}).get(code, code)
    if found not in codes:
        raise ExportError(
            f"{what} {code!r} is not a language of this {kind} tokenizer; have: {', '.join(list(codes)[:8])}, ..."
        )
    return found


__all__ = ["KINDS", "check_files", "tokenizer_kind", "write_tokenizer"]
