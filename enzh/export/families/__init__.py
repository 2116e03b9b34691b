"""The model families enzh exports, one loader each (:class:`~enzh.export.families.base.Loader` and its quirks).

``loader_for(config)`` picks the loader by ``config.json``'s ``model_type``; an unsupported one is refused with
the supported families named.
"""

from __future__ import annotations

import json
from pathlib import Path

from enzh.export.families.base import Loader
from enzh.export.families.m2m100 import M2M100Loader
from enzh.export.families.marian import MarianLoader
from enzh.export.families.mbart import MBartLoader
from enzh.runtime.errors import ExportError

LOADERS: tuple[type[Loader], ...] = (MarianLoader, M2M100Loader, MBartLoader)


def supported() -> str:
    return ", ".join(t for loader in LOADERS for t in loader.model_types)


def loader_for(directory: Path) -> Loader:
    """The loader of the model in ``directory`` (read from its config.json before anything is loaded)."""
    path = directory / "config.json"
    if not path.is_file():
        raise ExportError(f"{directory} has no config.json; a HuggingFace model directory holds one")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path} is not valid JSON ({exc})") from exc
    model_type = config.get("model_type") if isinstance(config, dict) else None
    for loader in LOADERS:
        if model_type in loader.model_types:
            return loader()
    raise ExportError(
        f"{directory} holds a {model_type!r} model; enzh exports these families (config.json model_type): {supported()}"
    )


__all__ = ["LOADERS", "Loader", "loader_for", "supported"]
