"""Option dataclasses shared by the Python API, the CLI and the HTTP service.

Every option set is a frozen keyword-only dataclass validated in ``__post_init__`` so a bad value fails
where it is made, with a message that names the accepted values.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass


def positive_int(value: str) -> int:
    """argparse type for the command-line options that take a count (``--repeats 3``, ``--threads 2``)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {number}")
    return number


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass(frozen=True, kw_only=True)
class DecodingSettings:
    """Everything one decode needs, fully resolved (no ``None`` left to guess).

    Semantics follow ``transformers`` ``generate()`` for encoder-decoder models: ``max_length`` counts the
    decoder start token, so at most ``max_length - 1`` tokens are generated.
    """

    decoder_start_token_id: int
    eos_token_id: int
    pad_token_id: int
    max_length: int
    num_beams: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    bad_words_ids: tuple[tuple[int, ...], ...] = ()
    renormalize_logits: bool = False
    forced_eos_token_id: int | None = None
    no_repeat_ngram_size: int = 0
    repetition_penalty: float = 1.0
    min_length: int = 0

    def __post_init__(self) -> None:
        _check(
            self.max_length >= 2,
            f"max_length must be >= 2 (start token + one generated), got {self.max_length}",
        )
        _check(self.num_beams >= 1, f"num_beams must be >= 1, got {self.num_beams}")
        _check(
            self.early_stopping in (True, False, "never"),
            f"early_stopping must be True, False or 'never', got {self.early_stopping!r}",
        )
        _check(
            self.no_repeat_ngram_size >= 0,
            f"no_repeat_ngram_size must be >= 0, got {self.no_repeat_ngram_size}",
        )
        _check(self.repetition_penalty > 0, f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        _check(self.min_length >= 0, f"min_length must be >= 0, got {self.min_length}")
        object.__setattr__(self, "bad_words_ids", tuple(tuple(int(t) for t in seq) for seq in self.bad_words_ids))
        _check(all(len(seq) > 0 for seq in self.bad_words_ids), "bad_words_ids must not contain empty sequences")


@dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
    """How ONNX Runtime sessions are created for a model directory."""

    intra_op_threads: int = 0
    inter_op_threads: int = 1
    # ONNX Runtime's worker threads busy-wait for the next operator by default. Off here: measured faster for
    # batch-1 decoding on the 2-core benchmark machine, where the Python search runs between decoder steps.
    spin_threads: bool = False
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    verify_hashes: bool = True
    max_batch_tokens: int = 4096
    max_batch_size: int = 64

    def __post_init__(self) -> None:
        _check(
            self.intra_op_threads >= 0,
            f"intra_op_threads must be >= 0 (0 = all cores), got {self.intra_op_threads}",
        )
        _check(self.inter_op_threads >= 1, f"inter_op_threads must be >= 1, got {self.inter_op_threads}")
        _check(len(self.providers) > 0, "providers must name at least one ONNX Runtime execution provider")
        _check(self.max_batch_tokens >= 1, f"max_batch_tokens must be >= 1, got {self.max_batch_tokens}")
        _check(self.max_batch_size >= 1, f"max_batch_size must be >= 1, got {self.max_batch_size}")
        object.__setattr__(self, "providers", tuple(self.providers))


@dataclass(frozen=True, kw_only=True)
class TranslateOptions:
    """Per-call translation options; ``None`` means "the model directory's default" (from manifest.json)."""

    beam_size: int | None = None
    max_new_tokens: int | None = None
    target: str | None = None

    def __post_init__(self) -> None:
        _check(self.beam_size is None or self.beam_size >= 1, f"beam_size must be >= 1, got {self.beam_size}")
        _check(
            self.max_new_tokens is None or self.max_new_tokens >= 1,
            f"max_new_tokens must be >= 1, got {self.max_new_tokens}",
        )
