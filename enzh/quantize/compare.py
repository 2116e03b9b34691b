"""Measuring a variant against its fp32 source: teacher-forced logits, and a guard that weights were quantized.

Used by the tests and by ``scripts/precision_report.py`` (the numbers of ``docs/precision.md``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from enzh.export.samples import random_source_batches
from enzh.runtime.manifest import Manifest


@dataclass(frozen=True)
class LogitComparison:
    """Teacher-forced comparison of a variant's decoder logits with the fp32 model's."""

    sequences: int
    positions: int
    top1_agreement: float
    max_abs_diff: float
    mean_abs_diff: float


def compare_logits(
    reference_dir: str | os.PathLike[str],
    variant_dir: str | os.PathLike[str],
    *,
    sequences: int = 200,
    source_len: tuple[int, int] = (4, 24),
    target_len: int = 12,
    batch_size: int = 25,
    seed: int = 0,
    threads: int = 0,
) -> LogitComparison:
    """Random source/target id sequences, teacher-forced through both models; top-1 agreement and logit
    differences over every (sequence, target position), the latter over the scored tokens for a shortlisted
    variant. Random ids are harder than text: a pessimistic bound."""
    from enzh.runtime.options import RuntimeOptions
    from enzh.runtime.sessions import ModelSessions

    options = RuntimeOptions(verify_hashes=False, intra_op_threads=threads)
    models = [ModelSessions(Path(d), Manifest.load(d), options) for d in (reference_dir, variant_dir)]
    manifest = models[0].manifest
    ids = manifest.special_ids
    vocab = int(manifest.architecture["source_vocab_size"])
    target_vocab = int(manifest.architecture["target_vocab_size"])
    rng = np.random.default_rng(seed)
    shapes = [
        (min(batch_size, sequences - done), source_len[0], source_len[1]) for done in range(0, sequences, batch_size)
    ]
    # One generator for sources and targets: each batch's source ids, then its target ids (docs/precision.md's
    # numbers depend on this order).
    sources = random_source_batches(rng, shapes, pad=ids["pad"], eos=ids["eos"], high=min(vocab, ids["pad"]))
    totals = _Totals()
    for src in sources:
        rows = src.shape[0]
        mask = (src != ids["pad"]).astype(np.int64)
        targets = rng.integers(2, min(target_vocab, ids["pad"]), size=(rows, target_len - 1))
        steps = np.concatenate([np.full((rows, 1), ids["decoder_start"]), targets], axis=1).astype(np.int64)
        decoders = [m.decoder_for(m.encode(src, mask)) for m in models]
        for t in range(target_len):
            ref, var = (np.asarray(d.step(steps[:, t]).logits) for d in decoders)
            totals.add(ref, var, decoders[1].shortlist)  # the variant's global or this batch's shortlist
    return LogitComparison(
        sequences=sequences,
        positions=totals.positions,
        top1_agreement=totals.agree / totals.positions,
        max_abs_diff=totals.max_diff,
        mean_abs_diff=totals.sum_diff / totals.positions,
    )


@dataclass
class _Totals:
    agree: int = 0
    positions: int = 0
    max_diff: float = 0.0
    sum_diff: float = 0.0

    def add(self, ref: np.ndarray, var: np.ndarray, scored: np.ndarray | None) -> None:
        """One target position of a batch: top-1 over the whole vocabulary, differences over ``scored`` (the
        tokens a shortlisted variant scores; None: all)."""
        rows = ref.shape[0]
        self.agree += int((ref.argmax(-1) == var.argmax(-1)).sum())
        self.positions += rows
        if scored is not None:
            ref, var = ref[:, scored], var[:, scored]
        diff = np.abs(ref.astype(np.float64) - var)
        self.max_diff = max(self.max_diff, float(diff.max()))
        self.sum_diff += float(diff.mean()) * rows


def quantized_report(directory: str | os.PathLike[str], *, min_bytes: int = 64 * 1024) -> dict[str, list[str]]:
    """Per graph, the float MatMul/Gemm/Gather weights larger than ``min_bytes`` (empty lists: all quantized).

    Guards against the "nothing was quantized" failure: a rewrite that silently matched no pattern.
    """
    directory = Path(directory)
    manifest = Manifest.load(directory)
    found: dict[str, list[str]] = {}
    for key in ("encoder", "decoder"):
        model = onnx.load(str(directory / manifest.graphs[key]), load_external_data=False)
        sizes = {
            t.name: int(np.prod(t.dims)) * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
            for t in model.graph.initializer
            # matrices only: a per-token scale vector [V] is part of a quantized table
            if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE) and len(t.dims) >= 2
        }
        big = []
        for node in model.graph.node:
            # Weight matrices feed MatMul/Gemm; the token table feeds Gather(E, input_ids) (positions are
            # gathered by "position" and stay float: 1 MB, shared).
            if node.op_type in ("MatMul", "Gemm") or (node.op_type == "Gather" and node.input[1] == "input_ids"):
                big += [f"{node.op_type}:{name}" for name in node.input if sizes.get(name, 0) > min_bytes]
        found[key] = sorted(set(big))
    return found


__all__ = ["LogitComparison", "compare_logits", "quantized_report"]
