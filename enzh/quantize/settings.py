"""The settings of a precision variant (everything that decides its bytes) and their measured defaults."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from enzh.runtime.errors import QuantizeError
from enzh.runtime.manifest import CACHES, PRECISIONS

QUANTIZED = ("int8", "int4")
# Defaults per precision, chosen by measurement (docs/precision.md).
DEFAULT_BLOCK_SIZE = {"int8": 128, "int4": 64}
DEFAULT_ACCURACY_LEVEL = {"int8": 4, "int4": 4}
# int8 embedding: one scale per token and DynamicQuantizeMatMul for the output projection (measured with
# `enzh bench`: faster than 8-bit MatMulNBits blocks from 16 rows on, e.g. batch 16 x beam 4, and 0.8 MB smaller).
DEFAULT_EMBEDDING = {"int8": "channels"}
BLOCK_SIZES = (16, 32, 64, 128, 256)
LINEAR_OPS = ("dynamic", "nbits")  # int8 linears: DynamicQuantizeMatMul per channel, or 8-bit MatMulNBits blocks
EMBEDDINGS = ("quantized", "channels", "float")
# How DynamicQuantizeMatMul's int8 weights are stored, which picks ONNX Runtime's kernel (docs/precision.md):
# s7 = signed codes within +-63 (as ONNX Runtime's reduce_range): the u8s8 kernels, fastest everywhere (VNNI where
# the CPU has it), and no pair of products can saturate their 16-bit sums on AVX2 / AVX-512 without VNNI: exact
# integer arithmetic on every x86 CPU; u8 = the full 255 levels + 128 as uint8 with zero point 128: the u8u8
# kernels, exact everywhere and the most accurate, slower in large products (and without VNNI's speed where the
# CPU has it); s8 = the full levels as int8: exact only with VNNI, saturating elsewhere (not portable).
INT8_WEIGHTS = ("s7", "u8", "s8")
# Source-aware shortlist: target pieces kept for every batch, and per source piece (measured on the demo model,
# docs/shortlist.md).
DEFAULT_SHORTLIST_FREQUENT = 100
DEFAULT_SHORTLIST_PER_SOURCE = 20
# What the source_shortlist file holds: English<TAB>Chinese pairs, or English sentences the model translates.
SOURCE_SHORTLIST_CORPORA = ("pairs", "english")


@dataclass(frozen=True, kw_only=True)
class QuantizeSettings:
    """Everything that decides the bytes of a variant; recorded in manifest.json under ``quantization``.

    * ``block_size``: MatMulNBits / GatherBlockQuantized block along the input dimension (16 ... 256).
      For int8 it applies to the shared embedding (the linears use one scale per output channel) unless
      ``linear_op="nbits"``; for int4 to every weight.
    * ``accuracy_level``: MatMulNBits compute type (0 = default, 1 fp32, 2 fp16, 3 bf16, 4 int8 activations).
    * ``linear_op`` (int8 only): ``dynamic`` = DynamicQuantizeMatMul, ``nbits`` = 8-bit MatMulNBits.
    * ``embedding``: ``quantized`` (shared table in blocks, one copy: GatherBlockQuantized + MatMulNBits),
      ``channels`` (int8 only: one scale per token, stored ``[V, d]`` once for the lookup and a
      DynamicQuantizeMatMul output projection over its transpose) or ``float`` (embedding and output projection
      kept fp32: larger, for comparison).
    * ``int8_weights`` (int8 with ``linear_op="dynamic"`` or ``embedding="channels"``): how the
      DynamicQuantizeMatMul weights are stored (:data:`INT8_WEIGHTS`): ``s7`` (default: int8 codes within +-63,
      exact integer arithmetic and full speed on every x86 CPU), ``u8`` (uint8 codes with zero point 128: all 255
      levels, exact everywhere, about a third less logit error than s7; on an AVX2 CPU as fast in decoder steps of
      1-16 rows and 16-30 % slower in the encoder and at 64 rows, docs/precision.md) or ``s8`` (int8 codes within
      +-127: exact only on CPUs with VNNI; on AVX2 and AVX-512 without VNNI ONNX Runtime's u8s8 kernels saturate
      and the logits drift).
    * ``cache``: element type of the decoder's self-attention cache, ``float32`` (default: fastest on CPUs
      without float16 arithmetic) or ``float16`` (half its memory, the largest buffers of a beam search; slower
      on such CPUs; measured in docs/precision.md).
    * ``shortlist_ids``: empty (default) scores the whole target vocabulary; token ids make the output
      projection score only those (plus eos and unk): a smaller matrix in every decoder step, translations
      restricted to those tokens (lossy, opt-in; :func:`enzh.quantize.shortlist.corpus_shortlist` picks the most
      frequent pieces of a target-language corpus).
    * ``source_shortlist``: empty (default), or a parallel corpus (TSV, English TAB Chinese per line): every
      batch's decoder scores only the ``shortlist_frequent`` pieces most frequent in its targets, the
      ``shortlist_per_source`` pieces most associated with each source piece of the batch, eos and unk (lossy,
      opt-in; int8 with ``embedding="channels"`` only; :mod:`enzh.quantize.lexical`). Not with
      ``shortlist_ids``. ``source_shortlist_corpus="english"``: the file holds English sentences, one per line,
      and the pairs are those sentences with the fp32 model's own (greedy) translations.
    """

    precision: str
    block_size: int = 0
    accuracy_level: int = 0
    linear_op: str = "dynamic"
    embedding: str = "quantized"
    int8_weights: str = "s7"
    cache: str = "float32"
    shortlist_ids: tuple[int, ...] = ()
    source_shortlist: str = ""
    shortlist_frequent: int = DEFAULT_SHORTLIST_FREQUENT
    shortlist_per_source: int = DEFAULT_SHORTLIST_PER_SOURCE
    source_shortlist_corpus: str = "pairs"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS or self.precision == "fp32":
            raise QuantizeError(
                f"precision {self.precision!r} is not a variant; choose one of int8, int4, fp16 "
                "(fp32 is what `enzh export` writes)"
            )
        if self.precision in QUANTIZED:
            if self.block_size not in BLOCK_SIZES:
                raise QuantizeError(
                    f"block_size must be one of {', '.join(map(str, BLOCK_SIZES))} (what ONNX Runtime's MatMulNBits "
                    f"kernels accept), got {self.block_size}"
                )
            if self.accuracy_level not in (0, 1, 2, 3, 4):
                raise QuantizeError(f"accuracy_level must be 0..4 (4 = int8 compute), got {self.accuracy_level}")
        if self.linear_op not in LINEAR_OPS:
            raise QuantizeError(f"linear_op must be one of {', '.join(LINEAR_OPS)}, got {self.linear_op!r}")
        if self.embedding not in EMBEDDINGS:
            raise QuantizeError(f"embedding must be one of {', '.join(EMBEDDINGS)}, got {self.embedding!r}")
        if self.int8_weights not in INT8_WEIGHTS:
            raise QuantizeError(
                f"int8_weights must be one of {', '.join(INT8_WEIGHTS)} (s7 and u8 are exact on every CPU), got "
                f"{self.int8_weights!r}"
            )
        object.__setattr__(self, "shortlist_ids", tuple(sorted({int(i) for i in self.shortlist_ids})))
        if self.shortlist_ids and self.shortlist_ids[0] < 0:
            raise QuantizeError(f"shortlist_ids must be token ids >= 0, got {self.shortlist_ids[0]}")
        if self.cache not in CACHES:
            raise QuantizeError(f"cache must be one of {', '.join(CACHES)}, got {self.cache!r}")
        if self.embedding == "channels" and self.precision != "int8":
            raise QuantizeError(
                "embedding='channels' is an int8 layout; use 'quantized' or 'float' for other precisions"
            )
        self._check_source_shortlist()

    def _check_source_shortlist(self) -> None:
        object.__setattr__(self, "source_shortlist", os.fspath(self.source_shortlist))
        if self.shortlist_frequent < 0 or self.shortlist_per_source < 1:
            raise QuantizeError(
                f"shortlist_frequent must be >= 0 and shortlist_per_source >= 1, got {self.shortlist_frequent} and "
                f"{self.shortlist_per_source}"
            )
        if self.source_shortlist_corpus not in SOURCE_SHORTLIST_CORPORA:
            raise QuantizeError(
                f"source_shortlist_corpus must be one of {', '.join(SOURCE_SHORTLIST_CORPORA)} (English<TAB>Chinese "
                f"pairs, or English sentences the model translates), got {self.source_shortlist_corpus!r}"
            )
        if not self.source_shortlist:
            return
        if self.shortlist_ids:
            raise QuantizeError(
                "a source shortlist and a global shortlist exclude each other: give either source_shortlist "
                "(--source-shortlist PAIRS.tsv) or shortlist_ids (--shortlist N), not both"
            )
        if self.precision != "int8" or self.embedding != "channels":
            raise QuantizeError(
                "a source shortlist needs precision='int8' with embedding='channels' (the int8 default): its output "
                "projection is a DynamicQuantizeMatMul that reads the batch's columns as an input (MatMulNBits "
                f"is ~10x slower with a weight that is not a constant); got {self.precision}, "
                f"embedding={self.embedding!r}"
            )
        if not Path(self.source_shortlist).is_file():
            raise QuantizeError(
                f"source_shortlist {self.source_shortlist!r} is not a file; give a TSV of English<TAB>Chinese lines"
            )

    @property
    def bits(self) -> int:
        return {"int8": 8, "int4": 4}.get(self.precision, 16)

    @property
    def quantized(self) -> bool:
        """int8 or int4 (fp16 only changes the element type of the weights)."""
        return self.precision in QUANTIZED

    @classmethod
    def make(
        cls,
        precision: str,
        *,
        block_size: int | None = None,
        accuracy_level: int | None = None,
        linear_op: str | None = None,
        embedding: str | None = None,
        int8_weights: str | None = None,
        cache: str | None = None,
        shortlist_ids: Sequence[int] = (),
        source_shortlist: str | os.PathLike[str] = "",
        shortlist_frequent: int | None = None,
        shortlist_per_source: int | None = None,
        source_shortlist_corpus: str = "pairs",
    ) -> QuantizeSettings:
        """Fill the per-precision defaults for every argument left as ``None``."""
        if precision == "int4" and linear_op not in (None, "nbits"):
            raise QuantizeError("int4 uses MatMulNBits for every linear layer; linear_op does not apply")
        if int8_weights is not None and precision != "int8":
            raise QuantizeError(
                f"int8_weights (--int8-weights) sets the codes of int8 weights; an {precision} variant has none: "
                "drop it or choose precision int8"
            )
        return cls(
            precision=precision,
            block_size=block_size if block_size is not None else DEFAULT_BLOCK_SIZE.get(precision, 0),
            accuracy_level=accuracy_level if accuracy_level is not None else DEFAULT_ACCURACY_LEVEL.get(precision, 0),
            linear_op=linear_op or ("nbits" if precision == "int4" else "dynamic"),
            embedding=embedding or DEFAULT_EMBEDDING.get(precision, "quantized"),
            int8_weights=int8_weights or "s7",
            cache=cache or "float32",
            shortlist_ids=tuple(shortlist_ids),
            source_shortlist=os.fspath(source_shortlist),
            shortlist_frequent=DEFAULT_SHORTLIST_FREQUENT if shortlist_frequent is None else shortlist_frequent,
            shortlist_per_source=DEFAULT_SHORTLIST_PER_SOURCE if shortlist_per_source is None else shortlist_per_source,
            source_shortlist_corpus=source_shortlist_corpus,
        )


__all__ = ["DEFAULT_BLOCK_SIZE", "INT8_WEIGHTS", "QUANTIZED", "QuantizeSettings"]
