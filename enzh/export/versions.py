"""The package versions an export or a precision variant records in its manifest."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from enzh.version import __version__

EXPORT_PACKAGES = ("torch", "transformers", "onnx", "onnxruntime")


def package_versions(packages: Sequence[str] = EXPORT_PACKAGES) -> dict[str, str]:
    """``{"enzh": ..., package: version, ...}`` for those of ``packages`` that are installed, in that order."""
    versions = {"enzh": __version__}
    for name in packages:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        versions[name] = module.__version__
    return versions
