"""Quality of shortlisted int8 variants of the demo model: global and source-aware, at several sizes.

``python -m enzh.tools.shortlist_report [--beam-size N ...]`` prints the markdown table of docs/shortlist.md's
"Quality on the demo model" section: for each variant the per-batch scored tokens (as ``Translator.translate``
batches the test set), exact match and chrF on the demo's held-out test set, and the share of translations
identical to the int8 variant's. The tables are counted on the demo's training corpus (enzh.demo.train's
pairs). Needs the ``[demo]`` extra (sacrebleu) and onnx. ``--kernels`` times the output projection with a
constant weight against one bound per batch (the measurement behind the source-aware design).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

GLOBAL_SIZES = (600, 800, 990)
SOURCE_SIZES = ((0, 10), (50, 10), (50, 20), (100, 20), (200, 20), (100, 50))
# The table from English alone (`--source-shortlist-corpus english`) against the same English with its
# reference translations: the first this many training pairs, at the default F and K.
MONOLINGUAL = 20_000


def _variants(fp32: Path, root: Path, pairs: list[tuple[str, str]]) -> list[tuple[str, Path]]:
    """(label, directory) of every variant: int8, global shortlists, source-aware ones (tables counted once)."""
    from enzh.quantize.lexical import tokenize_pairs
    from enzh.quantize.pipeline import quantize
    from enzh.quantize.shortlist import corpus_shortlist

    quantize(fp32, root / "int8", precision="int8")
    out = [("int8, whole vocabulary", root / "int8")]
    for size in GLOBAL_SIZES:
        ids = corpus_shortlist(fp32, [zh for _, zh in pairs], size)
        quantize(fp32, root / f"global{size}", precision="int8", shortlist_ids=ids)
        out.append((f"int8, global shortlist of {size}", root / f"global{size}"))
    tokenized = tokenize_pairs(fp32, pairs)
    for frequent, per_source in SOURCE_SIZES:
        name = f"source{frequent}-{per_source}"
        (root / f"{name}.bin").write_bytes(tokenized.table(frequent=frequent, per_source=per_source).to_bytes())
        quantize(fp32, root / name, precision="int8", source_shortlist=root / f"{name}.bin")
        out.append((f"int8, source-aware F={frequent} K={per_source}", root / name))
    return [*out, *_monolingual_variants(fp32, root, pairs[:MONOLINGUAL])]


def _monolingual_variants(fp32: Path, root: Path, pairs: list[tuple[str, str]]) -> list[tuple[str, Path]]:
    """The default table counted on ``pairs``, and on their English side translated by the model itself."""
    from enzh.quantize.pipeline import quantize

    (root / "subset.tsv").write_text("".join(f"{en}\t{zh}\n" for en, zh in pairs), "utf-8")
    (root / "subset.en").write_text("".join(f"{en}\n" for en, _ in pairs), "utf-8")
    quantize(fp32, root / "subset-pairs", precision="int8", source_shortlist=root / "subset.tsv")
    quantize(
        fp32,
        root / "subset-own",
        precision="int8",
        source_shortlist=root / "subset.en",
        source_shortlist_corpus="english",
    )
    size = f"{len(pairs):,}"
    return [
        (f"int8, source-aware F=100 K=20, {size} training pairs", root / "subset-pairs"),
        (
            f"int8, source-aware F=100 K=20, the same {size} English sentences translated by the model",
            root / "subset-own",
        ),
    ]


def _measure(label: str, directory: Path, pairs: list[tuple[str, str]], beams: Sequence[int]) -> dict[str, Any]:
    """Scored tokens per batch and, per beam width, exact match, chrF and the translations."""
    from enzh.demo.evaluate_torch import score
    from enzh.runtime.candidates import Selection
    from enzh.runtime.translator import Translator

    translator = Translator.load(directory)
    sessions = translator.sessions
    counts: list[int] = []
    if sessions.source_shortlist is not None:
        select = sessions.source_shortlist.select

        def counted(ids: np.ndarray, mask: np.ndarray) -> Selection:
            selection = select(ids, mask)
            counts.append(len(selection.ids))
            return selection

        sessions.source_shortlist.select = counted  # type: ignore[method-assign,assignment]
    by_beam: dict[int, tuple[dict[str, float], list[str]]] = {}
    for beam in beams:
        hyps = translator.translate([en for en, _ in pairs], beam_size=beam)
        by_beam[beam] = (score(hyps, [zh for _, zh in pairs]), hyps)
    result: dict[str, Any] = {"label": label, "counts": counts, "scored": sessions.scored, "beams": by_beam}
    return result


def report(beams: Sequence[int] = (1, 4)) -> str:
    from enzh.demo.train import training_pairs
    from enzh.runtime.default_model import DEMO_DIR
    from enzh.tools.evaluate import load_pairs

    pairs = load_pairs(None)
    training = training_pairs()
    with tempfile.TemporaryDirectory(prefix="enzh-shortlist-") as tmp:
        rows = [_measure(label, d, pairs, beams) for label, d in _variants(DEMO_DIR, Path(tmp), training)]
    fp32 = _measure("fp32", DEMO_DIR, pairs, beams)
    header = "| variant | scored tokens per batch (mean / max) |"
    rule = "|---|---|"
    for beam in beams:
        header += f" beam {beam}: exact % | chrF | chrF vs fp32 | same as int8 % |"
        rule += "---|---|---|---|"
    lines = [header, rule]
    for row in [fp32, *rows]:
        counts = row["counts"]
        scored = f"{np.mean(counts):.0f} / {max(counts)}" if counts else f"{row['scored']} (all batches)"
        cells = f"| {row['label']} | {scored} |"
        for beam in beams:
            scores, hyps = row["beams"][beam]
            same = np.mean([a == b for a, b in zip(hyps, rows[0]["beams"][beam][1], strict=True)]) * 100
            loss = scores["chrf"] - fp32["beams"][beam][0]["chrf"]
            cells += f" {scores['exact']:.1f} | {scores['chrf']:.2f} | {loss:+.2f} | {same:.1f} |"
        lines.append(cells)
    return "\n".join(lines) + "\n"


def _projection_ms(op: str, columns: int, constant: bool, rows: int, d_model: int = 512, runs: int = 50) -> float:
    """Median milliseconds of one output projection onto ``columns`` tokens with a constant weight (what a
    global shortlist has) or a weight bound as an input (a source-aware one): DynamicQuantizeMatMul (``dq``) or
    8-bit MatMulNBits (``nbits``), ONNX Runtime, 1 thread."""
    import time

    from onnx import TensorProto, helper, numpy_helper

    from enzh.tools.kernel_probe import MS_DOMAIN, single_op_session

    rng = np.random.default_rng(0)
    if op == "dq":
        weight = rng.integers(-127, 128, (d_model, columns), dtype=np.int8)
        scales = np.full(columns, 0.01, np.float32)
        node = helper.make_node("DynamicQuantizeMatMul", ["h", "w", "s"], ["y"], domain=MS_DOMAIN)
        w_type, w_shape, s_shape = TensorProto.INT8, [d_model, columns], [columns]
    else:
        weight = rng.integers(0, 256, (columns, d_model // 128, 128), dtype=np.uint8)
        scales = np.full((columns, d_model // 128), 0.01, np.float32)
        attrs: dict[str, Any] = {"K": d_model, "N": columns, "bits": 8, "block_size": 128, "accuracy_level": 4}
        node = helper.make_node("MatMulNBits", ["h", "w", "s"], ["y"], domain=MS_DOMAIN, **attrs)
        w_type, w_shape, s_shape = TensorProto.UINT8, list(weight.shape), list(scales.shape)
    inputs = [helper.make_tensor_value_info("h", TensorProto.FLOAT, [rows, d_model])]
    feeds: dict[str, np.ndarray] = {"h": rng.standard_normal((rows, d_model)).astype(np.float32)}
    initializers = []
    if constant:
        initializers = [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(scales, "s")]
    else:
        inputs += [helper.make_tensor_value_info("w", w_type, w_shape)]
        inputs += [helper.make_tensor_value_info("s", TensorProto.FLOAT, s_shape)]
        feeds.update(w=weight, s=scales)
    session = single_op_session([node], inputs, initializers, threads=1)
    session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def kernel_report(columns: int = 8000, d_model: int = 512, vocab: int = 65001) -> str:
    """The projection with a constant weight vs one bound per batch, and the per-batch gather of its columns."""
    import time

    lines = [
        f"| projection onto {columns:,} tokens (d_model {d_model}) | 1 row | 16 rows | 64 rows |",
        "|---|---|---|---|",
    ]
    for op, label in (("dq", "DynamicQuantizeMatMul"), ("nbits", "MatMulNBits, 8-bit")):
        for constant in (True, False):
            cells = [f"{_projection_ms(op, columns, constant, rows, d_model):.3f} ms" for rows in (1, 16, 64)]
            kind = "constant weight" if constant else "weight as an input"
            lines.append(f"| {label}, {kind} | " + " | ".join(cells) + " |")
    table = np.random.default_rng(0).integers(-127, 128, (d_model, vocab), dtype=np.int8)
    ids = np.sort(np.random.default_rng(1).choice(vocab, columns, replace=False))
    times = []
    for _ in range(20):
        start = time.perf_counter()
        np.take(table, ids, axis=1)
        times.append(time.perf_counter() - start)
    gather = f"per-batch gather of the {columns:,} columns from [{d_model}, {vocab:,}] int8 (numpy.take)"
    lines.append(f"| {gather} | {np.median(times) * 1e3:.2f} ms once per batch | | |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.tools.shortlist_report", description=__doc__)
    parser.add_argument("--beam-size", type=int, action="append", help="beam widths (default 1 and 4)")
    parser.add_argument("--kernels", action="store_true", help="time the projection kernels instead (no model)")
    args = parser.parse_args(argv)
    print(kernel_report() if args.kernels else report(args.beam_size or (1, 4)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
