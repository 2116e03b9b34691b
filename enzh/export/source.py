"""Where an export starts: SOURCE (a local HF model directory or a hub id) as a local directory."""

from __future__ import annotations

from pathlib import Path

from enzh.runtime.errors import ExportError


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
            allow_patterns=["*.json", "*.spm", "*.model", "*.safetensors", "*.bin", "*.md"],
        )
    except Exception as exc:  # hub errors come in many types (offline, 404, auth)
        raise ExportError(
            f"could not fetch {source!r} from the HuggingFace hub ({type(exc).__name__}: {exc}). "
            "Check the model id and your network, or download the model elsewhere and pass its directory."
        ) from exc
    resolved = Path(local)
    return resolved, source, revision or resolved.name
