"""Where an export starts: SOURCE (a local HF model directory or a hub id) as a loaded ``MarianMTModel``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from enzh.runtime.errors import ExportError

TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json")


def resolve_source(source: str, revision: str | None = None) -> tuple[Path, str, str | None]:
    """Return (local directory, source id, revision) for a local model directory or a hub model id."""
    path = Path(source)
    if path.is_dir():
        return path, str(path.resolve()), revision
    if path.exists():
        raise ExportError(f"SOURCE {source} is a file; pass a HuggingFace model directory or a hub id")
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(
            source,
            revision=revision,
            allow_patterns=["*.json", "*.spm", "*.safetensors", "*.bin", "*.md"],
        )
    except Exception as exc:  # hub errors come in many types (offline, 404, auth)
        raise ExportError(
            f"could not fetch {source!r} from the HuggingFace hub ({type(exc).__name__}: {exc}). "
            "Check the model id and your network, or download the model elsewhere and pass its directory."
        ) from exc
    resolved = Path(local)
    return resolved, source, revision or resolved.name


def load_model(directory: Path) -> Any:
    from transformers import MarianMTModel

    try:
        model = MarianMTModel.from_pretrained(directory, dtype="float32")
    except Exception as exc:
        raise ExportError(
            f"could not load a MarianMTModel from {directory} ({type(exc).__name__}: {exc}). "
            "enzh exports Marian models (config model_type 'marian') such as Helsinki-NLP/opus-mt-en-zh."
        ) from exc
    model.eval()
    return model


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


def check_tokenizer_files(local: Path, separate: bool) -> None:
    """Refuse a model directory without the Marian tokenizer files the runtime needs."""
    needed = (*TOKENIZER_FILES, "target_vocab.json") if separate else TOKENIZER_FILES
    missing = [name for name in needed if not (local / name).is_file()]
    if missing:
        raise ExportError(
            f"{local} lacks tokenizer file(s) {', '.join(missing)}; a Marian model directory holds "
            f"{', '.join(needed)} next to config.json"
            + (" (its tokenizer_config.json sets separate_vocabs)" if separate else "")
        )
