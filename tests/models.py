"""The tests' random-weight Marian builders: they live in enzh.tools.models (also used by bench and the reports)."""

from enzh.tools.models import (
    HANZI,
    REFERENCE_CONFIG,
    WORDS,
    build_reference_shaped,
    build_tiny_marian,
    corpus,
    train_spm,
    write_tokenizer,
)

__all__ = [
    "HANZI",
    "REFERENCE_CONFIG",
    "WORDS",
    "build_reference_shaped",
    "build_tiny_marian",
    "corpus",
    "train_spm",
    "write_tokenizer",
]
