"""Option dataclasses shared by the Python API, the CLI and the HTTP service.

Every option set is a frozen keyword-only dataclass validated in ``__post_init__`` so a bad value fails
where it is made, with a message that names the accepted values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from enzh.runtime.errors import require


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
    # The token the first generated position is forced to (the target language of M2M100/NLLB/mBART-50).
    forced_bos_token_id: int | None = None
    no_repeat_ngram_size: int = 0
    repetition_penalty: float = 1.0
    min_length: int = 0

    def __post_init__(self) -> None:
        require(
            self.max_length >= 2,
            f"max_length must be >= 2 (start token + one generated), got {self.max_length}",
        )
        require(self.num_beams >= 1, f"num_beams must be >= 1, got {self.num_beams}")
        require(
            self.early_stopping in (True, False, "never"),
            f"early_stopping must be True, False or 'never', got {self.early_stopping!r}",
        )
        require(
            self.no_repeat_ngram_size >= 0,
            f"no_repeat_ngram_size must be >= 0, got {self.no_repeat_ngram_size}",
        )
        require(self.repetition_penalty > 0, f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        require(self.min_length >= 0, f"min_length must be >= 0, got {self.min_length}")
        object.__setattr__(self, "bad_words_ids", tuple(tuple(int(t) for t in seq) for seq in self.bad_words_ids))
        require(all(len(seq) > 0 for seq in self.bad_words_ids), "bad_words_ids must not contain empty sequences")


# A small model's decoder step is a few hundred microseconds between two search steps in Python: with few rows,
# waking a second ONNX Runtime thread for each of its small matrix products costs more than it saves, and from
# about 64 rows on it pays (docs/profile.md, "Threads"). Below SMALL_MODEL_PARAMETERS, steps of at most
# SERIAL_DECODER_ROWS rows therefore run in a second, one-thread decoder session by default.
SMALL_MODEL_PARAMETERS = 20_000_000
SERIAL_DECODER_ROWS = 16


@dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
    """How ONNX Runtime sessions are created for a model directory."""

    intra_op_threads: int = 0
    inter_op_threads: int = 1
    # Decoder steps of at most this many rows run on one thread (0: never); None: SERIAL_DECODER_ROWS for models
    # under SMALL_MODEL_PARAMETERS, else 0. Costs a second decoder session (its own packed weights).
    serial_decoder_rows: int | None = None
    # A batch's sentences split into this many shards, decoded at once by as many threads, each on the one-thread
    # decoder session (1: never). None: the intra-op thread count for a small model (the ones with that session)
    # of fp32 weights, else 1. fp32 rows are computed independently, so the results are bit-identical; with
    # int8's per-batch activation scales they would not be.
    decode_shards: int | None = None
    # ONNX Runtime's worker threads busy-wait for the next operator by default. Off here: measured faster for
    # batch-1 decoding on the 2-core benchmark machine, where the Python search runs between decoder steps.
    spin_threads: bool = False
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    verify_hashes: bool = True
    max_batch_tokens: int = 4096
    max_batch_size: int = 64

    def __post_init__(self) -> None:
        require(
            self.intra_op_threads >= 0,
            f"intra_op_threads must be >= 0 (0 = all cores), got {self.intra_op_threads}",
        )
        require(self.inter_op_threads >= 1, f"inter_op_threads must be >= 1, got {self.inter_op_threads}")
        require(
            self.serial_decoder_rows is None or self.serial_decoder_rows >= 0,
            f"serial_decoder_rows must be None (automatic), 0 (never) or a row count, got {self.serial_decoder_rows}",
        )
        require(
            self.decode_shards is None or self.decode_shards >= 1,
            f"decode_shards must be None (automatic) or a thread count >= 1 (1: no sharding), got {self.decode_shards}",
        )
        require(len(self.providers) > 0, "providers must name at least one ONNX Runtime execution provider")
        require(self.max_batch_tokens >= 1, f"max_batch_tokens must be >= 1, got {self.max_batch_tokens}")
        require(self.max_batch_size >= 1, f"max_batch_size must be >= 1, got {self.max_batch_size}")
        object.__setattr__(self, "providers", tuple(self.providers))

    def serial_rows_for(self, parameters: int) -> int:
        """Decoder steps of at most this many rows use the one-thread session (0: none) for a model of
        ``parameters`` weights; 0 when every session runs on one thread anyway."""
        if self.intra_op_threads == 1:
            return 0
        if self.serial_decoder_rows is not None:
            return self.serial_decoder_rows
        return SERIAL_DECODER_ROWS if 0 < parameters < SMALL_MODEL_PARAMETERS else 0

    def shards_for(self, parameters: int, precision: str) -> int:
        """How many threads decode a batch's sentences at once (1: the calling thread alone) for a model of
        ``parameters`` weights stored in ``precision``."""
        if self.decode_shards is not None:
            return self.decode_shards
        if precision != "fp32" or not self.serial_rows_for(parameters):
            return 1
        return self.intra_op_threads or os.cpu_count() or 1


@dataclass(frozen=True, kw_only=True)
class TranslateOptions:
    """Per-call translation options; ``None`` means "the model directory's default" (from manifest.json)."""

    beam_size: int | None = None
    max_new_tokens: int | None = None
    target: str | None = None

    def __post_init__(self) -> None:
        require(self.beam_size is None or self.beam_size >= 1, f"beam_size must be >= 1, got {self.beam_size}")
        require(
            self.max_new_tokens is None or self.max_new_tokens >= 1,
            f"max_new_tokens must be >= 1, got {self.max_new_tokens}",
        )
