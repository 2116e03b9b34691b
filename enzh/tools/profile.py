"""Where the time of one translation call goes: ONNX Runtime's per-operator profile of the encoder and of every
decoder step, plus the Python side (search bookkeeping, cache reorders), for the cells of ``enzh bench``'s
fixed-length table (24 source tokens, exactly 32 generated tokens).

    .venv/bin/python scripts/profile_decoder.py MODEL_DIR [MODEL_DIR ...] [--out docs/profile.md] [--threads 2]
    .venv/bin/python -m enzh.tools.profile MODEL_DIR ...      (the same)

Each MODEL_DIR is an exported model directory (e.g. the opus-mt-en-zh-shaped fp32 and int8 variants that
``enzh bench`` builds in its cache); each gets its own section. ONNX Runtime's profiler adds a little time to
every operator: the per-operator split is what this is for, ``enzh bench`` reports the speed.

With ``--loop`` it splits a decode call on natural sentences (the first column of MODEL_DIR/test.tsv) per decoder
step instead: ONNX Runtime's run time, the graph nodes executed, the Python bookkeeping around them and the numpy
copies of the search (:mod:`enzh.tools.profile_loop`).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.cpu import cpu_features

CELLS = ((1, 1), (1, 4), (16, 1), (16, 4))  # (batch, beams)
SOURCE_TOKENS = 24
NEW_TOKENS = 32


def profile_cell(model: Path, batch: int, beams: int, threads: int, repeats: int) -> dict[str, Any]:
    """Profile ``repeats`` calls of one cell in this process (fresh sessions with profiling on)."""
    import enzh.runtime.sessions as sessions_module
    from enzh.runtime.translator import Translator

    prefix = tempfile.mkdtemp(prefix="enzh-profile-")
    original = sessions_module.session_options

    def with_profiling(options: Any) -> Any:
        so = original(options)
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(prefix, "ort")
        return so

    sessions_module.session_options = with_profiling
    try:
        translator = Translator.load(model, intra_op_threads=threads, inter_op_threads=1)
    finally:
        sessions_module.session_options = original
    rng = np.random.default_rng(0)
    # Ordinary ids below the pad id, so that any vocabulary works (60000: the shaped model's documented sources).
    # Not enzh.export.samples.random_source_batches (ids from 2, random lengths): docs/profile.md has these ids.
    high = min(60000, translator.manifest.special_ids["pad"], translator.sessions.vocab)
    sources = [(*(int(x) for x in rng.integers(10, high, SOURCE_TOKENS - 1)), 0) for _ in range(batch)]
    # Python-side time: everything outside the two sessions' run calls.
    run_seconds = [0.0]
    for session in (translator.sessions.encoder, *translator.sessions.decoder_sessions):
        for name in ("run", "run_with_iobinding"):
            inner = getattr(session, name)

            def timed(*args: Any, _inner: Any = inner, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return _inner(*args, **kwargs)
                finally:
                    run_seconds[0] += time.perf_counter() - start

            setattr(session, name, timed)
    settings = {"beam_size": beams, "max_new_tokens": NEW_TOKENS, "min_length": NEW_TOKENS + 1}
    translator.generate_ids(sources, **settings)  # warm-up
    run_seconds[0] = 0.0
    start = time.perf_counter()
    for _ in range(repeats):
        translator.generate_ids(sources, **settings)
    total = (time.perf_counter() - start) / repeats
    python_ms = (total - run_seconds[0] / repeats) * 1e3
    result: dict[str, Any] = {"batch": batch, "beams": beams, "call_ms": total * 1e3, "python_ms": python_ms}
    for key, sessions in (
        ("decoder", translator.sessions.decoder_sessions),
        ("encoder", [translator.sessions.encoder]),
    ):
        events = [event for session in sessions for event in json.loads(Path(session.end_profiling()).read_text())]
        runs = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]  # warm-up included
        per_op: collections.Counter[str] = collections.Counter()
        for event in events:
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
                per_op[event["args"]["op_name"]] += event["dur"]
        count = max(1, len(runs))
        result[key] = {
            "runs_per_call": len(runs) / (repeats + 1),
            "run_ms": sum(e["dur"] for e in runs) / count / 1e3,
            "ops_ms": {op: us / count / 1e3 for op, us in per_op.most_common()},
        }
    for path in glob.glob(os.path.join(prefix, "*")):
        os.remove(path)
    os.rmdir(prefix)
    return result


def header(command: str, threads: int) -> list[str]:
    import onnxruntime

    return [
        "# Where the time goes: per-operator profile",
        "",
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs, {cpu_features().summary()}, {threads} ONNX Runtime threads, "
        f"onnxruntime {onnxruntime.__version__}): "
        "24 source tokens, exactly 32 generated tokens, as in `enzh bench`'s fixed-length table. ONNX Runtime's "
        "profiler is on, which adds a little to every operator; `enzh bench` measures the speed.",
        "",
    ]


def render(model: Path, results: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"## `{model.name}` ({model})",
        "",
        "| cell | call ms | encoder ms | decoder steps | ms per decoder step | Python (search, reorders) ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        label = f"batch {r['batch']} " + ("greedy" if r["beams"] == 1 else f"beam {r['beams']}")
        lines.append(
            f"| {label} | {r['call_ms']:.0f} | {r['encoder']['run_ms']:.1f} | {r['decoder']['runs_per_call']:.0f} | "
            f"{r['decoder']['run_ms']:.2f} | {r['python_ms']:.0f} |"
        )
    ops = list(dict.fromkeys(op for r in results for op in list(r["decoder"]["ops_ms"])[:8]))
    lines += [
        "",
        "Milliseconds per decoder step by operator (the largest first; rows = batch x beams):",
        "",
        "| operator | " + " | ".join(f"{r['batch'] * r['beams']} rows" for r in results) + " |",
        "|---|" + "---|" * len(results),
    ]
    for op in ops:
        cells = [f"{r['decoder']['ops_ms'].get(op, 0.0):.2f}" for r in results]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


LEGEND = [
    "What the operators are: `DynamicQuantizeMatMul` = the int8 linear layers (36 per step) and, in the int8 "
    "variant, the output projection onto the 65,001-token vocabulary; `Gemm` = the fp32 linear layers and output "
    "projection (MatMul + bias fused by ONNX Runtime); `MatMulNBits` = 4-/8-bit block-quantized matrices; "
    "`GroupQueryAttention` = self-attention over the in-place cache; `MultiHeadAttention` = cross-attention over "
    "the encoder's keys/values; `Gather` = the int8 embedding lookup; `LogSoftmax`/`TopK` = the log-probabilities "
    "and the best candidates per row.",
    "",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="exported model directories")
    parser.add_argument("--out", help="markdown file to write (default: print)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loop", action="store_true", help="per-step split on natural sentences (test.tsv)")
    args = parser.parse_args(argv)
    command = "python scripts/profile_decoder.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.loop:
        from enzh.tools.profile_loop import loop_report

        lines = loop_report([Path(m) for m in args.models], command, args.threads, args.repeats)
        return _write(lines, args.out)
    lines = header(command, args.threads)
    for model in map(Path, args.models):
        results = []
        for batch, beams in CELLS:
            print(f"{model.name}: profiling batch {batch} x beams {beams} ...", file=sys.stderr, flush=True)
            results.append(profile_cell(model, batch, beams, args.threads, args.repeats))
        lines += render(model, results)
    return _write(lines + LEGEND, args.out)


def _write(lines: list[str], out: str | None) -> int:
    text = "\n".join(lines)
    if out:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
