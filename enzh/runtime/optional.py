"""Optional dependencies in one place: importing one that is missing names the extra that installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from enzh.runtime.errors import MissingExtraError

# Top-level module -> the enzh-onnx extra that installs it.
EXTRAS = {
    "torch": "export",
    "transformers": "export",
    "onnx": "export",
    "safetensors": "export",
    "huggingface_hub": "export",
    "sacrebleu": "demo",
    "ctranslate2": "bench",
    "matplotlib": "bench",
    "fastapi": "serve",
    "starlette": "serve",
    "uvicorn": "serve",
    "prometheus_client": "serve",
    "httpx": "serve",
    "aiohttp": "serve",
    "multipart": "serve",
    "python_multipart": "serve",
    "py3langid": "serve",
    "docx": "documents",
    "lxml": "documents",
    "markdown_it": "documents",
    "opencc": "documents",
    "polib": "documents",
    "ray": "ray",
}


def import_optional(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (e.g. ``"torch"``) or raise :class:`MissingExtraError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        fix = f"pip install 'enzh-onnx[{extra}]'" if extra else f"pip install {top}"
        raise MissingExtraError(f"{purpose} needs {top}, which is not installed: {fix}") from exc
