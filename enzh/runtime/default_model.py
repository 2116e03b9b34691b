"""The embedded default: the demo model, shipped inside the package already exported (no torch needed)."""

from __future__ import annotations

from pathlib import Path

from enzh.runtime.errors import ModelDirError

# An exported (fp32) enzh model directory: manifest, graphs, weights, tokenizers, model card and test set.
DEMO_DIR = Path(__file__).resolve().parent / "assets" / "demo"
DEMO_TEST_SET = DEMO_DIR / "test.tsv"
DEMO_NAME = "enzh-demo"


def default_model_dir() -> Path:
    """Return the embedded demo model directory (``enzh/runtime/assets/demo``)."""
    if not (DEMO_DIR / "manifest.json").is_file():
        raise ModelDirError(
            f"the embedded demo model is missing from {DEMO_DIR}; reinstall enzh-onnx or pass --model DIR"
        )
    return DEMO_DIR


def is_default_model(directory: str | Path) -> bool:
    """True when ``directory`` is the embedded demo model."""
    return Path(directory).resolve() == DEMO_DIR.resolve()
