"""A whole run: prepare every model, run every engine in its own processes (rounds, rotated), and assemble
the report (layout: ``enzh-bench/1``, checked by :func:`enzh.tools.bench.report.check_report`)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from enzh.tools.bench.machine import describe_machine, load_average
from enzh.tools.bench.prepare import model_size, prepare_groups
from enzh.tools.bench.settings import ENGINE_BY_ID, LOAD_KEYS, SCHEMA, BenchSettings, Engine, ModelGroup, log
from enzh.tools.bench.stats import add_stats, finish_results, load_info, merge_rounds, summary_line
from enzh.tools.bench.worker import run_worker

Items = dict[tuple[str, str], list[dict[str, Any]]]  # (case, engine) or (engine, group) -> one item per process


def run_bench(
    settings: BenchSettings,
    *,
    cache_dir: Path,
    command: str,
    fixed_model: Path | None = None,
    shaped_config: Path | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """Prepare every model, run every engine in its own processes, and return the report (see ``SCHEMA``).

    With ``settings.rounds`` > 1 the whole sweep (every engine, one after another, in an order rotated each
    round) runs that many times with fresh processes, and each cell pools the timed runs of all rounds: load
    that comes and goes on a shared machine then hits every engine alike instead of whichever ran at the time.
    """
    machine = describe_machine()
    started = time.time()
    groups = prepare_groups(settings, cache_dir, fixed_model, shaped_config)
    engines = [ENGINE_BY_ID[e] for e in settings.engines]
    entries = {e.id: _engine_entry(e, groups) for e in engines}
    per_round: Items = {}  # (case, engine) -> one item per round
    workers: Items = {}  # (engine, group) -> load info of each process
    with tempfile.TemporaryDirectory(prefix="enzh-bench-") as tmp:
        for number in range(settings.rounds):
            shift = number % len(engines)
            if settings.rounds > 1:
                log(f"round {number + 1} of {settings.rounds}")
            for engine in engines[shift:] + engines[:shift]:
                _run_engine(engine, groups, settings, Path(tmp), per_round, workers)
    results = _collect(engines, groups, entries, per_round, workers)
    machine["load_average_end"] = load_average()
    return {
        "schema": SCHEMA,
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "duration_s": round(time.time() - started, 1),
        "command": command,
        "note": note,
        "machine": machine,
        "settings": {**asdict(settings)},
        "models": {g.group: {"name": g.name, "description": g.description, "hf_dir": str(g.hf_dir)} for g in groups},
        "engines": [entries[e.id] for e in engines],
        "cases": [c.describe() for g in groups for c in g.cases],
        "results": results,
    }


def _collect(
    engines: Sequence[Engine],
    groups: Sequence[ModelGroup],
    entries: dict[str, dict[str, Any]],
    per_round: Items,
    workers: Items,
) -> list[dict[str, Any]]:
    """Every cell (merged over rounds, or skipped), with each engine entry's load times and peak RSS filled in."""
    results: list[dict[str, Any]] = []
    for engine in engines:
        for group in groups:
            info = entries[engine.id]["groups"][group.group]
            for case in group.cases:
                if "unavailable" in info:
                    results.append(
                        {"case": case.id, "engine": engine.id, "status": "skipped"} | {"error": info["unavailable"]}
                    )
                else:
                    results.append(merge_rounds(case.id, engine.id, per_round.get((case.id, engine.id), [])))
            if workers.get((engine.id, group.group)):
                info.update(load_info(workers[(engine.id, group.group)]))
    finish_results(results, [c for g in groups for c in g.cases])
    for engine in engines:
        for group in groups:
            ids = {c.id for c in group.cases}
            peaks = [
                r["peak_rss_mib"]
                for r in results
                if r["engine"] == engine.id and r["status"] == "ok" and r["case"] in ids
            ]
            info = entries[engine.id]["groups"][group.group]
            if peaks or "load_peak_rss_mib" in info:
                info["peak_rss_mib"] = max([*peaks, info.get("load_peak_rss_mib", 0.0)])
    return results


def _engine_entry(engine: Engine, groups: Sequence[ModelGroup]) -> dict[str, Any]:
    entry: dict[str, Any] = {**asdict(engine), "groups": {}}
    for group in groups:
        if engine.id in group.dirs:
            directory = group.dirs[engine.id]
            entry["groups"][group.group] = {"model_dir": str(directory), "model_bytes": model_size(engine, directory)}
        else:
            reason = group.unavailable.get(engine.id, "not prepared")
            entry["groups"][group.group] = {"unavailable": reason}
            log(f"{engine.id} on {group.name}: skipped ({reason})")
    return entry


def _run_engine(
    engine: Engine,
    groups: Sequence[ModelGroup],
    settings: BenchSettings,
    workdir: Path,
    per_round: Items,
    workers: Items,
) -> None:
    """One round of ``engine`` on every group's cases: fresh process(es), items appended to ``per_round``.

    Groups whose model is the same directory for this engine (``--quick``: the demo model for both) share
    one process.
    """
    buckets: dict[Path, list[ModelGroup]] = {}
    for group in groups:
        if engine.id in group.dirs:
            buckets.setdefault(group.dirs[engine.id], []).append(group)
    for directory, members in buckets.items():
        cases = [c for g in members for c in g.cases]
        for batch in [cases] if settings.isolate == "engine" else [[c] for c in cases]:
            log(f"{engine.id}: {', '.join(c.id for c in batch)} ...")
            out = run_worker(engine, directory, batch, settings, workdir, members[0].hf_dir)
            load = {k: out[k] for k in LOAD_KEYS if k in out}
            if "load_s" in load:
                for group in members:
                    if any(c in group.cases for c in batch):
                        workers.setdefault((engine.id, group.group), []).append(load)
            for item in out["results"]:
                item = {"engine": engine.id, **item, **{k: load.get(k) for k in LOAD_KEYS[:3]}}
                per_round.setdefault((item["case"], engine.id), []).append(item)
                shown = dict(item)
                if shown["status"] == "ok":
                    add_stats(shown)
                log(f"  {summary_line(shown)}")
