"""From the workers' raw timings to the report's cells: statistics, rounds pooled, ratios to the baselines."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from enzh.tools.bench.settings import CT2_BASELINE, LOAD_KEYS, TORCH_BASELINE, Case
from enzh.tools.stats import percentile


def add_stats(item: dict[str, Any]) -> None:
    """Replace a cell's ``times_s`` by milliseconds, their median, spread and quartiles, and tokens/s."""
    times_ms = [t * 1000 for t in item.pop("times_s")]
    median = statistics.median(times_ms)
    tokens = statistics.median(item["tokens"])
    item.update(
        times_ms=[round(t, 3) for t in times_ms],
        median_ms=median,
        min_ms=min(times_ms),
        max_ms=max(times_ms),
        q1_ms=percentile(times_ms, 0.25),
        q3_ms=percentile(times_ms, 0.75),
        tokens_per_s=tokens / (median / 1000),
    )


def load_info(loads: list[dict[str, Any]]) -> dict[str, Any]:
    """Load time and memory of an engine's processes on one model: medians over rounds, the peak's maximum."""
    rss = [o["rss_after_load_mib"] for o in loads if o.get("rss_after_load_mib") is not None]
    averages = [a for o in loads for a in o.get("load_average") or []]
    return {
        "processes": len(loads),
        "load_s": statistics.median(o["load_s"] for o in loads),
        "first_translation_s": statistics.median(o["first_translation_s"] for o in loads),
        "rss_after_load_mib": statistics.median(rss) if rss else None,
        "load_peak_rss_mib": max(o["load_peak_rss_mib"] for o in loads),
        "load_average_range": [min(averages), max(averages)] if averages else None,
    }


def merge_rounds(case: str, engine: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """One cell from its rounds: timed runs pooled, peak RSS the largest, load times the median."""
    if not items:
        return {"case": case, "engine": engine, "status": "error", "error": "no result"}
    failed = [i for i in items if i["status"] != "ok"]
    if failed:
        return {"case": case, "engine": engine, "status": "error", "error": failed[0].get("error")}
    merged: dict[str, Any] = {
        "case": case,
        "engine": engine,
        "status": "ok",
        "rounds": len(items),
        "times_s": [t for i in items for t in i["times_s"]],
        "tokens": [t for i in items for t in i["tokens"]],
        "exact_length": items[0]["exact_length"],
        "peak_rss_mib": max(i["peak_rss_mib"] for i in items),
        "rss_scope": items[0]["rss_scope"],
        "outputs": items[-1]["outputs"],
    }
    for key in LOAD_KEYS[:3]:
        values = [i[key] for i in items if i.get(key) is not None]
        merged[key] = statistics.median(values) if values else None
    add_stats(merged)
    return merged


def finish_results(results: list[dict[str, Any]], cases: Sequence[Case]) -> None:
    """Statistics, ratios to the baselines and agreement with PyTorch; drop the raw outputs."""
    for item in results:
        if item["status"] != "ok" or "median_ms" in item:
            continue
        add_stats(item)
    by_key = {(r["case"], r["engine"]): r for r in results}
    fixed = {c.id: c.fixed for c in cases}
    for item in results:
        if item["status"] != "ok":
            continue
        for name, baseline in (("ratio_ct2_int8", CT2_BASELINE), ("ratio_torch", TORCH_BASELINE)):
            base = by_key.get((item["case"], baseline))
            item[name] = item["median_ms"] / base["median_ms"] if base and base["status"] == "ok" else None
        torch = by_key.get((item["case"], TORCH_BASELINE))
        item["agreement_torch"] = None
        # Agreement only means something on a trained model with natural lengths (random weights tie logits).
        if not fixed[item["case"]] and torch and torch["status"] == "ok":
            pairs = list(zip(item["outputs"], torch["outputs"], strict=True))
            item["agreement_torch"] = sum(a == b for a, b in pairs) / len(pairs)
    for item in results:
        item.pop("outputs", None)


def summary_line(item: dict[str, Any]) -> str:
    """One progress line for a measured (or failed) cell."""
    if item["status"] != "ok":
        return f"{item['case']}: {item['status']}: {item.get('error')}"
    return (
        f"{item['case']}: median {item['median_ms']:.1f} ms (min {item['min_ms']:.1f}, max {item['max_ms']:.1f}), "
        f"{item['tokens_per_s']:.0f} tokens/s, peak RSS {item['peak_rss_mib']:.0f} MiB"
    )
