"""One engine in a fresh process: the parent writes a job (JSON), starts
``python -m enzh.tools.bench --worker JOB OUT`` and reads what the worker measured from OUT.

A fresh process per engine (and model) makes its load time and RSS its own; the worker imports only the
engine it runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from enzh.tools.bench.engines import Runner, job_calls, make_runner
from enzh.tools.bench.machine import load_average, peak_rss_mib, reset_peak_rss, rss_mib
from enzh.tools.bench.settings import BenchSettings, Case, Engine, LengthError

# The directory holding the enzh package: the worker imports enzh from there, installed or not.
SOURCE_ROOT = Path(__file__).resolve().parents[3]


# -- in the worker ---------------------------------------------------------------------------------------------


def _count_tokens(case: dict[str, Any], hyps: list[list[Any]]) -> int:
    """Generated tokens of one run; a fixed-length case raises LengthError on any other length."""
    new_tokens = case["new_tokens"]
    if case["fixed"]:
        wrong = [len(h) for h in hyps if len(h) != new_tokens]
        if wrong:
            raise LengthError(
                f"fixed-length case {case['id']}: {len(wrong)} of {len(hyps)} outputs do not have exactly "
                f"{new_tokens} tokens (lengths {sorted(set(wrong))})"
            )
    return sum(len(h) for h in hyps)


def measure(runner: Runner, case: dict[str, Any], repeats: int, warmup: int) -> dict[str, Any]:
    """``warmup`` untimed and ``repeats`` timed runs of every call of ``case``; its raw times and outputs (token
    ids, or for a case with texts the translations)."""
    beams, new_tokens, fixed = case["beams"], case["new_tokens"], case["fixed"]
    texts = case.get("texts")
    scope = "case" if reset_peak_rss() else "process"

    def run_all() -> tuple[float, list[Any], int]:
        start = time.perf_counter()
        if texts is not None:  # text in, text out: the engine's tokenizing and detokenizing timed too
            found = [t for call in texts for t in runner.translate(call, beams, new_tokens)]
            seconds = time.perf_counter() - start
            return seconds, [text for text, _ in found], sum(count for _, count in found)
        hyps = [h for call in case["calls"] for h in runner.generate(call, beams, new_tokens, fixed)]
        return time.perf_counter() - start, hyps, _count_tokens(case, hyps)

    outputs: list[Any] = []
    for _ in range(warmup):
        _, outputs, _ = run_all()
    times: list[float] = []
    tokens: list[int] = []
    for _ in range(repeats):
        seconds, outputs, count = run_all()
        times.append(seconds)
        tokens.append(count)
    return {
        "case": case["id"],
        "status": "ok",
        "times_s": times,
        "tokens": tokens,
        "exact_length": True if fixed else None,
        "peak_rss_mib": peak_rss_mib(),
        "rss_scope": scope,
        "outputs": outputs if texts is not None else runner.to_ids(outputs),
    }


def worker_main(job_path: str, out_path: str) -> int:
    """Measure one engine on the job's cases; write the results as JSON. Run as a fresh process."""
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    t0 = float(job["t0"])  # the parent's clock just before it started this process
    load_start = load_average()
    target = job.get("target")
    runner = make_runner(
        job["engine"], job["model_dir"], job["threads"], None if target is None else tuple(target), job.get("hf_dir")
    )
    loaded = time.time()
    rss_loaded = rss_mib()
    first = job["cases"][0]
    runner.generate(first["calls"][0][:1], 1, first["new_tokens"], first["fixed"])
    first_done = time.time()
    load_peak = peak_rss_mib()
    results = []
    for case in job["cases"]:
        try:
            results.append(measure(runner, case, job["repeats"], job["warmup"]))
        except Exception as exc:
            results.append({"case": case["id"], "status": "error", "error": f"{type(exc).__name__}: {exc}"})
    load_end = load_average()
    out = {
        "engine": job["engine"],
        "load_s": loaded - t0,
        "first_translation_s": first_done - t0,
        "rss_after_load_mib": rss_loaded,
        "load_peak_rss_mib": load_peak,
        "load_average": None if load_start is None or load_end is None else [load_start[0], load_end[0]],
        "results": results,
    }
    Path(out_path).write_text(json.dumps(out), encoding="utf-8")
    return 0


# -- in the parent ---------------------------------------------------------------------------------------------


def worker_env(threads: int) -> dict[str, str]:
    """The environment of an engine process: every thread pool sized to ``threads``, enzh importable, offline."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    env.update(TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SOURCE_ROOT), env.get("PYTHONPATH")) if p)
    return env


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:]) or "no output"


def run_worker(
    engine: Engine,
    directory: Path,
    cases: Sequence[Case],
    settings: BenchSettings,
    workdir: Path,
    hf_dir: Path | None = None,
) -> dict[str, Any]:
    """Start a fresh process for ``engine`` on ``cases``; its results, or an error entry for every case.
    ``hf_dir``: the HF model ``directory`` was made from (its tokenizer, for the cases with texts)."""
    tag = f"{engine.id}-{cases[0].id}"
    job_path, out_path = workdir / f"{tag}.job.json", workdir / f"{tag}.out.json"
    job: dict[str, Any] = {
        "engine": engine.id,
        "model_dir": str(directory),
        "hf_dir": None if hf_dir is None else str(hf_dir),
        "threads": settings.threads,
        "repeats": settings.repeats,
        "warmup": settings.warmup,
        "target": cases[0].target,  # every case of one process runs on the same model
        "cases": [
            {
                "id": c.id,
                "beams": c.beams,
                "new_tokens": c.new_tokens,
                "fixed": c.fixed,
                "calls": job_calls(engine.id, c, directory),
                "texts": c.texts,
            }
            for c in cases
        ],
    }
    command = [sys.executable, "-m", "enzh.tools.bench", "--worker", str(job_path), str(out_path)]
    job["t0"] = time.time()  # "process start" for the load time: just before the process is spawned
    job_path.write_text(json.dumps(job), encoding="utf-8")
    try:
        proc = subprocess.run(
            command,
            cwd=workdir,
            env=worker_env(settings.threads),
            capture_output=True,
            text=True,
            timeout=settings.timeout_s,
            check=False,
        )
        failure = None if proc.returncode == 0 and out_path.is_file() else _tail(proc.stderr)
    except subprocess.TimeoutExpired:
        failure = f"timed out after {settings.timeout_s:.0f} s"
    if failure is not None:
        return {
            "engine": engine.id,
            "results": [{"case": c.id, "status": "error", "error": f"worker failed: {failure}"} for c in cases],
        }
    result: dict[str, Any] = json.loads(out_path.read_text(encoding="utf-8"))
    return result
