"""Simplified -> Traditional Chinese with OpenCC (the official ``opencc`` package, optional: ``[documents]``).

Applied to each sentence the model translated, before marks are placed, so markup, untranslated text and text
that was already Chinese are never converted. docs/documents.md compares the conversions on the demo model.
"""

from __future__ import annotations

from collections.abc import Callable

from enzh.runtime.optional import import_optional


def converter(name: str | None) -> Callable[[str], str]:
    """A function converting Simplified Chinese text with OpenCC config ``name`` (None: unchanged)."""
    if name is None:
        return _same
    opencc = import_optional("opencc", f"--convert {name}")
    return opencc.OpenCC(f"{name}.json").convert


def _same(text: str) -> str:
    return text
