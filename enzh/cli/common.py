"""Argument types and flag groups shared by several commands."""

from __future__ import annotations

import argparse

from enzh.quantize.settings import INT8_WEIGHTS
from enzh.runtime.manifest import CACHES, PRECISIONS


def positive_int(value: str) -> int:
    """argparse type for the options that take a count (``--repeats 3``, ``--threads 2``)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {number}")
    return number


def add_precision_flags(p: argparse.ArgumentParser, default: str | None) -> None:
    """--precision, --block-size, --accuracy-level, --cache (export: default fp32; quantize: required)."""
    choices = list(PRECISIONS) if default else [p for p in PRECISIONS if p != "fp32"]
    p.add_argument(
        "--precision",
        choices=choices,
        default=default,
        required=default is None,
        help="weights of the written model (see docs/precision.md)" + (f"; default {default}" if default else ""),
    )
    p.add_argument(
        "--block-size",
        type=positive_int,
        help="quantization block, 16..256 (default: int8 128, used by its embedding table; int4 64)",
    )
    p.add_argument("--accuracy-level", type=int, help="int8/int4 MatMulNBits compute type (4 = int8, default)")
    p.add_argument(
        "--int8-weights",
        choices=list(INT8_WEIGHTS),
        help="int8 weight codes: s7 (default: exact and fast on every x86 CPU), u8 (all 255 levels, exact "
        "everywhere, less error, slower) or s8 (exact only on CPUs with VNNI; see docs/precision.md)",
    )
    p.add_argument(
        "--cache",
        choices=list(CACHES),
        help="decoder self-attention cache of a variant: float32 (default, fastest on CPU) or float16 (half the "
        "memory of the largest beam-search buffers)",
    )


def quantize_settings(args: argparse.Namespace) -> dict[str, object]:
    """The quantize() keywords of the precision flags."""
    return {
        "precision": args.precision,
        "block_size": args.block_size,
        "accuracy_level": args.accuracy_level,
        "int8_weights": args.int8_weights,
        "cache": args.cache,
    }
