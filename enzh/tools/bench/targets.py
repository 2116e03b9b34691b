"""Issue 6's targets, checked against a run on the opus-mt-en-zh-shaped model, and their markdown table."""

from __future__ import annotations

from typing import Any

from enzh.tools.bench.settings import CT2_BASELINE, SHAPED_NAME, TORCH_BASELINE

# (what, engine, case, baseline engine, max latency ratio).
LATENCY_TARGETS: tuple[tuple[str, str, str, str, float], ...] = (
    ("int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b1-greedy", CT2_BASELINE, 0.5),
    ("int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b1-beam4", CT2_BASELINE, 0.5),
    ("int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b16-greedy", CT2_BASELINE, 0.5),
    ("int8 ≤ 0.8× CTranslate2 int8", "enzh-int8", "fixed-b16-beam4", CT2_BASELINE, 0.8),
    ("int8 ≥ 5× faster than PyTorch", "enzh-int8", "fixed-b1-greedy", TORCH_BASELINE, 0.2),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b1-greedy", "ct2-float32", 1.0),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b1-beam4", "ct2-float32", 1.0),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b16-greedy", "ct2-float32", 1.0),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b16-beam4", "ct2-float32", 1.0),
    ("fp32 ≥ 2.5× faster than PyTorch", "enzh-fp32", "fixed-b1-greedy", TORCH_BASELINE, 0.4),
)
NOISY_SPREAD = 2.0  # a cell whose slowest timed run took more than this many times its fastest is "noisy"


def _latency_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    by_key = {(r["case"], r["engine"]): r for r in report["results"]}
    labels = {c["id"]: c["label"] for c in report["cases"]}
    out = []
    for what, engine, case, baseline, limit in LATENCY_TARGETS:
        mine, base = by_key.get((case, engine)), by_key.get((case, baseline))
        if case not in labels or not (mine and base and mine["status"] == base["status"] == "ok"):
            continue
        value = mine["median_ms"] / base["median_ms"]
        out.append(
            {
                "target": what,
                "cell": labels[case],
                "value": value,
                "value_min": mine["min_ms"] / base["min_ms"],
                "limit": limit,
                "met": value <= limit,
                "noisy": any(r["max_ms"] > NOISY_SPREAD * r["min_ms"] for r in (mine, base)),
            }
        )
    return out


def evaluate_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 6's targets checked against this run (only for the opus-mt-en-zh-shaped model); [] otherwise.

    Latency targets give the ratio of medians (``value``, what ``met`` judges) and the ratio of the fastest
    runs (``value_min``: the least disturbed estimate when other processes compete for the CPUs), and flag
    ``noisy`` when either cell's max/min exceeds :data:`NOISY_SPREAD`.
    """
    if report["models"].get("fixed", {}).get("name") != SHAPED_NAME:
        return []
    out = _latency_targets(report)
    groups = {e["id"]: e["groups"].get("fixed", {}) for e in report["engines"]}
    mine_info, ct2_info = groups.get("enzh-int8", {}), groups.get(CT2_BASELINE, {})
    if mine_info.get("peak_rss_mib") and ct2_info.get("peak_rss_mib"):
        value = mine_info["peak_rss_mib"] / ct2_info["peak_rss_mib"]
        out.append(
            {"target": "int8 peak RSS ≤ CTranslate2 int8's", "cell": "whole run", "value": value, "limit": 1.0}
            | {"value_min": None, "met": value <= 1.0, "noisy": False}
        )
    if "first_translation_s" in mine_info:
        value = mine_info["first_translation_s"]
        out.append(
            {"target": "int8 load ≤ 1.5 s (start → first translation)", "cell": "—", "value": value, "limit": 1.5}
            | {"value_min": None, "met": value <= 1.5, "noisy": False}
        )
    return out


def targets_table(report: dict[str, Any]) -> list[str]:
    """The markdown section of :func:`evaluate_targets` ([] when the run has no targets)."""
    targets = evaluate_targets(report)
    if not targets:
        return []
    lines = [
        "## Issue 6 targets in this run",
        "",
        "Latency targets: the ratio of the two engines' medians in the fixed-length cell (what *met* judges) and "
        "the ratio of their fastest runs (the least disturbed estimate when other processes compete for the "
        f"CPUs); *noisy*: the slowest run of either cell took over {NOISY_SPREAD:g}× its fastest, so that ratio "
        "says little. RSS: the ratio of the two processes' peaks on the shaped model. Load: seconds.",
        "",
        "| target | cell | ratio of medians | ratio of fastest runs | limit | met |",
        "|---|---|---|---|---|---|",
    ]
    for t in targets:
        fastest = "—" if t.get("value_min") is None else f"{t['value_min']:.2f}"
        verdict = ("yes" if t["met"] else "**no**") + (" (noisy)" if t.get("noisy") else "")
        lines.append(f"| {t['target']} | {t['cell']} | {t['value']:.2f} | {fastest} | {t['limit']:.2f} | {verdict} |")
    met = sum(t["met"] for t in targets)
    noisy = sum(bool(t.get("noisy")) for t in targets)
    summary = f"{met} of {len(targets)} targets met by the medians" + (
        f"; {noisy} of the {len(targets)} noisy." if noisy else "."
    )
    return [*lines, "", summary, ""]
