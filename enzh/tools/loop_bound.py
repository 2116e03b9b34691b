"""The least a decode loop over enzh's graphs can cost, against CTranslate2's whole call (docs/profile.md).

    .venv/bin/python -m enzh.tools.loop_bound [--sentences 32] [--repeats 5] [--rounds 3] [--out FILE]

For the natural cells of ``enzh bench`` (the demo model's first N test sentences, batch 1 and 16, greedy and
beam 4; the same source ids, the same bound of new tokens, each engine through the bench's own runner), every
configuration runs in its own fresh process (the bench's worker environment), rounds alternating:

* **enzh**, three decoder thread settings: the defaults (a small model's batch decoded in two shards at once,
  each on a one-thread session; a single sentence's steps of at most 16 rows on one thread, the rest on two),
  every step on two threads, everything on one thread. Each gives the whole calls' time and, inside them, the
  time spent in ONNX Runtime alone: the encoder's ``run`` and every decoder step's ``run_with_iobinding``,
  summed per thread (with shards, the busiest thread's sum: the threads' kernels overlap). That sum is what
  these graphs' kernels cost on that thread setting: a decode loop without any Python around them (a leaner
  search, or the loop compiled or moved into ONNX Runtime over the same graphs and the same threads) would still
  pay it.
* **CTranslate2 float32**, whole calls with two threads and with one.
* the decoder steps and rows that transformers' stopping rule takes (enzh's search reproduces it), and the
  tokens of the returned hypotheses.

The report's last column compares the smallest ONNX Runtime-only time with CTranslate2's whole call: above 1,
no loop over these kernels on this machine can match CTranslate2 in that cell.

Needs ctranslate2 and transformers (the ``bench`` and ``export`` extras) to convert the demo model once (cached
like ``enzh bench``'s models).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.cpu import cpu_features
from enzh.tools.bench.settings import BenchSettings

CELLS = ((1, 1), (1, 4), (16, 1), (16, 4))  # (batch, beams)
# Configuration name -> (intra-op threads, serial_decoder_rows: None = the default for the model, 0 = never).
ENZH_CONFIGS = {"enzh default": (2, None), "enzh 2 threads": (2, 0), "enzh 1 thread": (1, 0)}
CT2_CONFIGS = {"CTranslate2 2 threads": 2, "CTranslate2 1 thread": 1}
NEW_TOKENS = BenchSettings().natural_max_new_tokens  # the natural cells' bound, as enzh bench sets it


def _cell_name(batch: int, beams: int) -> str:
    return f"batch {batch} {'greedy' if beams == 1 else f'beam {beams}'}"


def _timed(run: Callable[[], dict[str, float]], repeats: int) -> list[dict[str, float]]:
    run()  # warm-up
    return [run() for _ in range(repeats)]


def _enzh_child(config: str, sources: list[list[int]], repeats: int) -> dict[str, Any]:
    """enzh as ``enzh bench`` runs it (its runner and natural bound), with ONNX Runtime's share and the steps."""
    from enzh.runtime.default_model import DEMO_DIR
    from enzh.runtime.sessions import OrtDecoder
    from enzh.tools.bench.engines import EnzhRunner

    threads, serial = ENZH_CONFIGS[config]
    runner = EnzhRunner(str(DEMO_DIR), threads, serial_decoder_rows=serial)
    sessions = runner.translator.sessions
    count: collections.Counter[str] = collections.Counter()  # decoder steps and rows
    # ONNX Runtime's time per thread (each thread adds to its own entry only): shards run at once.
    ort_by_thread: collections.defaultdict[int, float] = collections.defaultdict(float)

    def in_ort(inner: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                ort_by_thread[threading.get_ident()] += time.perf_counter() - start

        return timed

    for session in sessions.encoder_sessions:
        session.run = in_ort(session.run)
    for session in sessions.decoder_sessions:
        session.run_with_iobinding = in_ort(session.run_with_iobinding)
    decoder_for = sessions.decoder_for

    def counted_decoder(*args: Any, **kwargs: Any) -> OrtDecoder:
        decoder = decoder_for(*args, **kwargs)
        step = decoder.step

        def counted(*step_args: Any, **step_kwargs: Any) -> Any:
            with lock:
                count["steps"] += 1
                count["rows"] += decoder.rows
            return step(*step_args, **step_kwargs)

        decoder.step = counted  # type: ignore[method-assign]
        return decoder

    sessions.decoder_for = counted_decoder  # type: ignore[method-assign]
    lock = threading.Lock()

    def cell_run(groups: list[list[list[int]]], beams: int) -> Callable[[], dict[str, float]]:
        def run() -> dict[str, float]:
            ort_by_thread.clear()
            count.clear()
            start = time.perf_counter()
            hyps = [h for group in groups for h in runner.generate(group, beams, NEW_TOKENS, False)]
            total = time.perf_counter() - start
            return {
                "call_ms": total * 1e3,
                "ort_ms": max(ort_by_thread.values()) * 1e3,
                "steps": count["steps"],
                "rows": count["rows"],
                "tokens": sum(len(h) for h in hyps),
            }

        return run

    result: dict[str, Any] = {}
    for batch, beams in CELLS:
        groups = [sources[i : i + batch] for i in range(0, len(sources), batch)]
        runs = _timed(cell_run(groups, beams), repeats)
        result[_cell_name(batch, beams)] = {
            "call_ms": [r["call_ms"] for r in runs],
            "ort_ms": [r["ort_ms"] for r in runs],
            **{key: runs[-1][key] for key in ("steps", "rows", "tokens")},
        }
    return result


def _ct2_child(config: str, ct2_dir: str, sources: list[list[int]], repeats: int) -> dict[str, Any]:
    """CTranslate2 float32 as ``enzh bench`` runs it (its runner, on the same ids as its own pieces)."""
    from enzh.tools.bench.engines import CT2Runner, ct2_vocabulary

    vocab = ct2_vocabulary(Path(ct2_dir))
    runner = CT2Runner(ct2_dir, CT2_CONFIGS[config], "float32")
    pieces = [[vocab[i] for i in source] for source in sources]

    def cell_run(groups: list[list[list[str]]], beams: int) -> Callable[[], dict[str, float]]:
        def run() -> dict[str, float]:
            start = time.perf_counter()
            for group in groups:
                runner.generate(group, beams, NEW_TOKENS, False)
            return {"call_ms": (time.perf_counter() - start) * 1e3}

        return run

    result: dict[str, Any] = {}
    for batch, beams in CELLS:
        groups = [pieces[i : i + batch] for i in range(0, len(pieces), batch)]
        result[_cell_name(batch, beams)] = {"call_ms": [r["call_ms"] for r in _timed(cell_run(groups, beams), repeats)]}
    return result


def _ct2_directory() -> Path:
    from enzh.demo import HF_MODEL_DIR
    from enzh.tools.bench.prepare import _dir_fingerprint, code_fingerprint, default_cache_dir, prepare_engines

    root = default_cache_dir() / f"demo-{_dir_fingerprint(HF_MODEL_DIR)}"
    dirs, unavailable = prepare_engines(HF_MODEL_DIR, root, ["ct2-float32"], code_fingerprint())
    if "ct2-float32" not in dirs:
        raise SystemExit(f"enzh.tools.loop_bound: CTranslate2 is not available: {unavailable['ct2-float32']}")
    return dirs["ct2-float32"]


def _sources(count: int) -> list[list[int]]:
    from enzh.demo import HF_MODEL_DIR
    from enzh.runtime.default_model import DEMO_TEST_SET
    from enzh.tools.bench.cases import natural_sources, natural_texts

    return [list(s) for s in natural_sources(HF_MODEL_DIR, natural_texts(DEMO_TEST_SET, count))]


def _run_child(config: str, ct2_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    from enzh.tools.bench.worker import worker_env

    threads = ENZH_CONFIGS[config][0] if config in ENZH_CONFIGS else CT2_CONFIGS[config]
    env = worker_env(threads)
    command = [sys.executable, "-m", "enzh.tools.loop_bound", "--child", config, "--ct2-dir", str(ct2_dir)]
    command += ["--sentences", str(args.sentences), "--repeats", str(args.repeats)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"enzh.tools.loop_bound: {config} failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _merge(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for result in rounds:
        for cell, values in result.items():
            into = merged.setdefault(cell, {key: [] if isinstance(v, list) else v for key, v in values.items()})
            for key, value in values.items():
                if isinstance(value, list):
                    into[key] += value
    return merged


def report(results: dict[str, dict[str, Any]], command: str, args: argparse.Namespace) -> list[str]:
    import onnxruntime

    cells = [_cell_name(b, k) for b, k in CELLS]
    med = {c: {cell: float(np.median(r[cell]["call_ms"])) for cell in cells} for c, r in results.items()}
    ort = {c: {cell: float(np.median(results[c][cell]["ort_ms"])) for cell in cells} for c in ENZH_CONFIGS}
    lines = [
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({platform.machine()}, {os.cpu_count()} logical "
        f"CPUs, {cpu_features().summary()}, onnxruntime {onnxruntime.__version__}): the demo model's first "
        f"{args.sentences} test sentences, "
        f"{args.rounds} rounds x {args.repeats} timed runs per configuration (each its own process, order "
        "alternating); medians, ms for all the sentences.",
        "",
        "| cell | "
        + " | ".join(f"{c} call" for c in ENZH_CONFIGS)
        + " | "
        + " | ".join(f"{c} ORT only" for c in ENZH_CONFIGS)
        + " | "
        + " | ".join(CT2_CONFIGS)
        + " | decoder steps, rows (enzh) | tokens returned "
        "| smallest ORT only ÷ CTranslate2 2 threads |",
        "|---" * (2 * len(ENZH_CONFIGS) + len(CT2_CONFIGS) + 4) + "|",
    ]
    for cell in cells:
        first = results["enzh default"][cell]
        floor = min(ort[c][cell] for c in ENZH_CONFIGS)
        row = [cell]
        row += [f"{med[c][cell]:.1f}" for c in ENZH_CONFIGS]
        row += [f"{ort[c][cell]:.1f}" for c in ENZH_CONFIGS]
        row += [f"{med[c][cell]:.1f}" for c in CT2_CONFIGS]
        row += [f"{first['steps']}, {first['rows']}", str(first["tokens"])]
        row.append(f"{floor / med['CTranslate2 2 threads'][cell]:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.tools.loop_bound", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per cell and process")
    parser.add_argument("--rounds", type=int, default=3, help="processes per configuration, order alternating")
    parser.add_argument("--out", type=Path, help="markdown file to write (default: print)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--ct2-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sources = _sources(args.sentences)
    if args.child:
        if args.child in ENZH_CONFIGS:
            print(json.dumps(_enzh_child(args.child, sources, args.repeats)))
        else:
            print(json.dumps(_ct2_child(args.child, args.ct2_dir, sources, args.repeats)))
        return 0
    ct2_dir = _ct2_directory()
    configs = [*ENZH_CONFIGS, *CT2_CONFIGS]
    per_config: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    for round_index in range(args.rounds):
        shift = round_index % len(configs)
        for config in configs[shift:] + configs[:shift]:
            print(f"round {round_index + 1}/{args.rounds}: {config}", file=sys.stderr)
            per_config[config].append(_run_child(config, ct2_dir, args))
    results = {c: _merge(r) for c, r in per_config.items()}
    command = "python -m enzh.tools.loop_bound " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join(report(results, command.strip(), args)) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
