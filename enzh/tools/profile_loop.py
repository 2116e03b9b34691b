"""The decode loop split per decoder step, on natural sentences: ``scripts/profile_decoder.py --loop MODEL_DIR``.

For each cell (batch 1 and 16, greedy and beam 4) the model translates the first 16 sentences of its test.tsv
(batch 1: one call per sentence; batch 16: one call), ``repeats`` times; the fastest repeat is reported. Three
passes, each in fresh sessions so that one's instruments do not slow the others:

1. timing: the time around the encoder's ``run``, the decoder's ``run_with_iobinding`` (ONNX Runtime), the
   decoder's ``reorder``, and the whole call; Python = call - ONNX Runtime, split into reorders, the step's own
   bookkeeping (``OrtDecoder.step`` outside the run) and the search (the rest);
2. nodes: ONNX Runtime's profiler counts the graph nodes (kernels) executed per decoder run;
3. copies: the arrays that ``np.concatenate`` and ``np.zeros``/``full``/``empty`` return when called from the
   search modules (decoding, processors, topk), with their bytes (indexing copies such as ``a[rows]`` are not
   seen), and every reorder counts the cache rows it moves and the cross keys/values it re-gathers.
"""

from __future__ import annotations

import collections
import contextlib
import glob
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.cpu import cpu_features

CELLS = ((1, 1), (1, 4), (16, 1), (16, 4))  # (batch, beams)
SENTENCES = 16
SEARCH_MODULES = ("enzh.runtime.decoding", "enzh.runtime.processors", "enzh.runtime.topk")
# The numpy functions whose arrays are counted as the search's copies: concatenations (histories, merges of
# finished and new hypotheses) and fresh buffers (e.g. a [sentences, candidates, max_length] array per step).
COUNTED = {"concatenate": "concat", "zeros": "fresh", "full": "fresh", "empty": "fresh"}


def natural_sources(translator: Any, count: int = SENTENCES) -> list[list[int]]:
    """Source ids of the first ``count`` English sentences of the model's test.tsv."""
    lines = (translator.directory / "test.tsv").read_text(encoding="utf-8").splitlines()
    return [translator.tokenizer.encode(line.split("\t")[0]) for line in lines[:count]]


def _load(model: Path, threads: int, profile_prefix: str | None = None) -> Any:
    import enzh.runtime.sessions as sessions_module
    from enzh.runtime.translator import Translator

    original = sessions_module.session_options

    def with_profiling(options: Any) -> Any:
        so = original(options)
        if profile_prefix is not None:
            so.enable_profiling = True
            so.profile_file_prefix = os.path.join(profile_prefix, "ort")
        return so

    sessions_module.session_options = with_profiling
    try:
        # One decoder per batch (no shards on other threads): the split below is of one thread's loop.
        return Translator.load(model, intra_op_threads=threads, inter_op_threads=1, decode_shards=1)
    finally:
        sessions_module.session_options = original


def _calls(translator: Any, sources: list[list[int]], batch: int, beams: int) -> Callable[[], None]:
    groups = [sources[i : i + batch] for i in range(0, len(sources), batch)]

    def run() -> None:
        for group in groups:
            translator.generate_ids(group, beam_size=beams)

    return run


class Timers:
    """Seconds spent inside wrapped callables, by name, and how often each ran."""

    def __init__(self) -> None:
        self.seconds: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.count: collections.Counter[str] = collections.Counter()

    def wrap(self, name: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start
                self.count[name] += 1

        return timed


@contextlib.contextmanager
def _patched(target: Any, name: str, value: Any) -> Iterator[None]:
    original = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, original)


def time_cell(model: Path, batch: int, beams: int, threads: int, repeats: int) -> dict[str, float]:
    """Pass 1: milliseconds per call of the fastest repeat, split as the module docstring says."""
    from enzh.runtime.sessions import OrtDecoder

    translator = _load(model, threads)
    run = _calls(translator, natural_sources(translator), batch, beams)
    calls = -(-SENTENCES // batch)
    timers = Timers()
    sessions = translator.sessions
    sessions.encoder.run = timers.wrap("encoder", sessions.encoder.run)
    for session in sessions.decoder_sessions:  # both, when a small model runs steps of few rows on one thread
        session.run_with_iobinding = timers.wrap("decoder", session.run_with_iobinding)
    best: dict[str, float] = {}
    with (
        _patched(OrtDecoder, "step", timers.wrap("step", OrtDecoder.step)),
        _patched(OrtDecoder, "reorder", timers.wrap("reorder", OrtDecoder.reorder)),
    ):
        run()  # warm-up
        for _ in range(repeats):
            timers.seconds.clear()
            timers.count.clear()
            start = time.perf_counter()
            run()
            total = time.perf_counter() - start
            if best and total * 1e3 / calls >= best["call_ms"]:
                continue
            s, steps = timers.seconds, max(1, timers.count["decoder"])
            ort = s["encoder"] + s["decoder"]
            best = {
                "call_ms": total * 1e3 / calls,
                "encoder_ms": s["encoder"] * 1e3 / calls,
                "steps": timers.count["decoder"] / calls,
                "ort_step_us": s["decoder"] * 1e6 / steps,
                "python_ms": (total - ort) * 1e3 / calls,
                "python_step_us": (total - ort) * 1e6 / steps,
                "step_glue_us": (s["step"] - s["decoder"]) * 1e6 / steps,
                "reorder_us": s["reorder"] * 1e6 / steps,
                "search_us": (total - ort - (s["step"] - s["decoder"]) - s["reorder"]) * 1e6 / steps,
            }
    return best


def count_nodes(model: Path, batch: int, beams: int, threads: int) -> float:
    """Pass 2: graph nodes executed per decoder run (ONNX Runtime's profiler, one call of the cell)."""
    prefix = tempfile.mkdtemp(prefix="enzh-profile-")
    try:
        translator = _load(model, threads, prefix)
        _calls(translator, natural_sources(translator), batch, beams)()
        events = [
            event
            for session in translator.sessions.decoder_sessions
            for event in json.loads(Path(session.end_profiling()).read_text())
        ]
        runs = sum(1 for e in events if e.get("cat") == "Session" and e["name"] == "model_run")
        nodes = sum(1 for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"))
        return nodes / max(1, runs)
    finally:
        for path in glob.glob(os.path.join(prefix, "*")):
            os.remove(path)
        os.rmdir(prefix)


class _CountingNumpy:
    """Stands in for ``numpy`` in the search modules: counts the arrays numpy functions return, and their bytes."""

    def __init__(self, ledger: collections.Counter[str]) -> None:
        self._ledger = ledger

    def __getattr__(self, name: str) -> Any:
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, (type, np.ufunc)):  # ufuncs: arithmetic, not copies
            return attr
        ledger = self._ledger

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            if isinstance(result, np.ndarray) and name in COUNTED:
                ledger[COUNTED[name]] += 1
                ledger[COUNTED[name] + "_bytes"] += result.nbytes
            return result

        return counted


def count_copies(model: Path, batch: int, beams: int, threads: int) -> dict[str, float]:
    """Pass 3: numpy arrays made by the search and bytes moved by reorders, per call."""
    import importlib

    from enzh.runtime.sessions import OrtDecoder

    translator = _load(model, threads)
    run = _calls(translator, natural_sources(translator), batch, beams)
    ledger: collections.Counter[str] = collections.Counter()
    original_reorder = OrtDecoder.reorder

    def reorder(decoder: OrtDecoder, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        cross = [decoder.cross_bias, *decoder.cross]
        before = [array.copy() for array in cross]
        if decoder._cache and decoder.position:  # the cache rows it copies, filled positions only
            moved = int((rows != np.arange(len(rows))).sum())
            per_row = sum(c[0, :, : decoder.position].nbytes for c in decoder._cache)
            ledger["cache_rows"] += moved
            ledger["cache_bytes"] += moved * per_row
        original_reorder(decoder, rows)
        ledger["reorders"] += 1
        for old, new, copy in zip(cross, [decoder.cross_bias, *decoder.cross], before, strict=True):
            if new is old:
                continue
            if not np.shares_memory(new, old):  # re-gathered into new arrays
                ledger["cross_bytes"] += new.nbytes
                continue
            # Moved in place: the entries whose contents changed.
            changed = (new != copy[: len(new)]).reshape(len(new), -1).any(axis=1)
            ledger["cross_bytes"] += int(changed.sum()) * (new.nbytes // max(1, len(new)))

    modules = [importlib.import_module(name) for name in SEARCH_MODULES]
    with contextlib.ExitStack() as stack:
        stack.enter_context(_patched(OrtDecoder, "reorder", reorder))
        for module in modules:
            stack.enter_context(_patched(module, "np", _CountingNumpy(ledger)))
        run()
    calls = -(-SENTENCES // batch)
    return {key: value / calls for key, value in ledger.items()}


def loop_report(models: list[Path], command: str, threads: int, repeats: int) -> list[str]:
    """The markdown section: one table per model."""
    import onnxruntime

    lines = [
        "## The decode loop per step (natural sentences)",
        "",
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs, {cpu_features().summary()}, {threads} ONNX Runtime threads, "
        f"onnxruntime {onnxruntime.__version__}, "
        f"numpy {np.__version__}): the first {SENTENCES} sentences of the model's test.tsv, default lengths, the "
        f"fastest of {repeats} repeats. Per call = per generate_ids() call (batch 1: the mean over the "
        f"{SENTENCES} calls). ORT = time inside ONNX Runtime's run; Python = call - ORT (encoder and decoder), "
        "split into the step's bookkeeping (`OrtDecoder.step` outside the run: binding, outputs), reorders "
        "(`OrtDecoder.reorder`) and the search (the rest: decoding.py, processors, top-k, batching, settings). Nodes "
        "= kernels executed per decoder run (ONNX Runtime's profiler). Copies per call: arrays made by "
        "np.concatenate and by np.zeros/full/empty in decoding/processors/topk (count, KB), and what reorders "
        "move (calls, KB of cache rows, KB of cross keys/values re-gathered).",
        "",
    ]
    for model in models:
        lines += [
            f"### `{model.name}` ({model})",
            "",
            "| cell | call ms | encoder ms | steps | ORT µs/step | nodes/step | Python ms | Python µs/step | "
            "of which step µs | reorder µs | search µs | concatenations (KB) | zeros/full/empty (KB) | "
            "reorders: calls, cache KB, cross KB |",
            "|---|" + "---|" * 13,
        ]
        for batch, beams in CELLS:
            label = f"batch {batch} " + ("greedy" if beams == 1 else f"beam {beams}")
            print(f"{model.name}: {label} ...", flush=True, file=sys.stderr)
            t = time_cell(model, batch, beams, threads, repeats)
            nodes = count_nodes(model, batch, beams, threads)
            c = collections.defaultdict(float, count_copies(model, batch, beams, threads))
            lines.append(
                f"| {label} | {t['call_ms']:.2f} | {t['encoder_ms']:.2f} | {t['steps']:.1f} | "
                f"{t['ort_step_us']:.0f} | {nodes:.0f} | {t['python_ms']:.2f} | {t['python_step_us']:.0f} | "
                f"{t['step_glue_us']:.0f} | {t['reorder_us']:.0f} | {t['search_us']:.0f} | "
                f"{c['concat']:.0f} ({c['concat_bytes'] / 1e3:.0f}) | "
                f"{c['fresh']:.0f} ({c['fresh_bytes'] / 1e3:.0f}) | "
                f"{c['reorders']:.0f}, {c['cache_bytes'] / 1e3:.0f}, {c['cross_bytes'] / 1e3:.0f} |"
            )
        lines.append("")
    return lines
