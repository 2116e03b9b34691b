"""The embedded defaults: the demo models, shipped inside the package already exported (no torch needed).

English->Chinese (``assets/demo``) is the default of every single-model entry point; Chinese->English
(``assets/demo-zh-en``) joins it wherever several models are loaded (the CLI's and the server's defaults).
"""

from __future__ import annotations

from pathlib import Path

from enzh.runtime.errors import ModelDirError

_ASSETS = Path(__file__).resolve().parent / "assets"
# Exported (fp32) enzh model directories: manifest, graphs, weights, tokenizers, model card and test set.
DEMO_DIR = _ASSETS / "demo"
DEMO_ZH_EN_DIR = _ASSETS / "demo-zh-en"
DEMO_TEST_SET = DEMO_DIR / "test.tsv"
DEMO_NAME = "enzh-demo"
DEMO_NAMES = {DEMO_DIR: DEMO_NAME, DEMO_ZH_EN_DIR: "enzh-demo-zh-en"}


def _checked(directory: Path) -> Path:
    if not (directory / "manifest.json").is_file():
        raise ModelDirError(
            f"the embedded demo model is missing from {directory}; reinstall enzh-onnx or pass --model DIR"
        )
    return directory


def default_model_dir() -> Path:
    """Return the embedded English->Chinese demo model directory (``enzh/runtime/assets/demo``)."""
    return _checked(DEMO_DIR)


def default_model_dirs() -> tuple[Path, ...]:
    """The embedded pair: English->Chinese, then Chinese->English."""
    return tuple(_checked(directory) for directory in DEMO_NAMES)


def demo_name(directory: str | Path) -> str | None:
    """The name of the embedded demo model in ``directory``, or None when it is not one."""
    resolved = Path(directory).resolve()
    return next((name for path, name in DEMO_NAMES.items() if resolved == path.resolve()), None)


def is_default_model(directory: str | Path) -> bool:
    """True when ``directory`` is one of the embedded demo models."""
    return demo_name(directory) is not None
