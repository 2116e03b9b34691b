"""enzh: HuggingFace translation models for Chinese (English<->Chinese) on ONNX Runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from enzh.version import __version__

__all__ = ["Translator", "Translators", "__version__", "translate_document"]

if TYPE_CHECKING:
    from enzh.runtime.router import Translators
    from enzh.runtime.translator import Translator


def __getattr__(name: str) -> Any:
    # Lazy: `import enzh` stays cheap and never touches onnxruntime until it is needed.
    if name == "Translator":
        from enzh.runtime.translator import Translator

        return Translator
    if name == "Translators":
        from enzh.runtime.router import Translators

        return Translators
    if name == "translate_document":
        from enzh.documents.api import translate_document

        return translate_document
    raise AttributeError(f"module 'enzh' has no attribute {name!r}")
