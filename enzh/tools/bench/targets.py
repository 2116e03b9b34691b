"""The speed issues' targets (#6 and #15) and the NLLB stand-in's (#23), checked against one run, and their
markdown table."""

from __future__ import annotations

from typing import Any

from enzh.tools.bench.settings import CT2_BASELINE, NLLB_SHAPED_NAME, SHAPED_NAME, TORCH_BASELINE

DEMO_NAME = "demo"
GLOBAL_SHORTLIST = "enzh-int8-shortlist"
SOURCE_SHORTLIST = "enzh-int8-source-shortlist"
SAME_SPEED = 1.1  # "at the same speed" as another engine: at most 10 % slower (run-to-run noise is about that)

# (issues, what, engine, case, baseline engine, max latency ratio). Fixed cases run on the shaped model,
# natural ones on the demo model; a target counts only when its group ran on that model.
LATENCY_TARGETS: tuple[tuple[str, str, str, str, str, float], ...] = (
    ("#6, #15", "int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b1-greedy", CT2_BASELINE, 0.5),
    ("#6", "int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b1-beam4", CT2_BASELINE, 0.5),
    ("#6, #15", "int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b16-greedy", CT2_BASELINE, 0.5),
    ("#6, #15", "int8 ≤ 0.8× CTranslate2 int8", "enzh-int8", "fixed-b16-beam4", CT2_BASELINE, 0.8),
    ("#6", "int8 ≥ 5× faster than PyTorch", "enzh-int8", "fixed-b1-greedy", TORCH_BASELINE, 0.2),
    ("#6", "fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b1-greedy", "ct2-float32", 1.0),
    ("#6", "fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b1-beam4", "ct2-float32", 1.0),
    ("#6", "fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b16-greedy", "ct2-float32", 1.0),
    ("#6", "fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b16-beam4", "ct2-float32", 1.0),
    ("#6", "fp32 ≥ 2.5× faster than PyTorch", "enzh-fp32", "fixed-b1-greedy", TORCH_BASELINE, 0.4),
    *(
        ("#15", "fp32 ≤ 1.0× CTranslate2 float32, natural length", "enzh-fp32", f"natural-{cell}", "ct2-float32", 1.0)
        for cell in ("b1-greedy", "b1-beam4", "b16-greedy", "b16-beam4")
    ),
    *(
        (
            "#15",
            f"source-aware shortlist ≤ {SAME_SPEED:g}× the 8,000-token one",
            SOURCE_SHORTLIST,
            f"fixed-{cell}",
            GLOBAL_SHORTLIST,
            SAME_SPEED,
        )
        for cell in ("b1-greedy", "b1-beam4", "b16-greedy", "b16-beam4")
    ),
    # Issue 23: the nllb group's fixed-length cells on the nllb-200-distilled-600M-shaped model.
    ("#23", "NLLB int8 ≤ 0.6× CTranslate2 int8", "enzh-int8", "nllb-b1-greedy", CT2_BASELINE, 0.6),
    ("#23", "NLLB int8 ≤ 0.8× CTranslate2 int8", "enzh-int8", "nllb-b16-beam4", CT2_BASELINE, 0.8),
    *(
        ("#23", "NLLB fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", f"nllb-{cell}", "ct2-float32", 1.0)
        for cell in ("b1-greedy", "b1-beam4", "b16-greedy", "b16-beam4")
    ),
)
# (issues, what, engine, max ratio of its directory's bytes to the PyTorch safetensors') on the NLLB stand-in.
NLLB_SIZE_TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("#23", "NLLB fp32 directory ≤ 1.05× the safetensors", "enzh-fp32", 1.05),
    ("#23", "NLLB int8 directory ≤ 0.3× the safetensors", "enzh-int8", 0.3),
)
_GROUP_MODEL = {"fixed": SHAPED_NAME, "natural": DEMO_NAME, "nllb": NLLB_SHAPED_NAME}
NOISY_SPREAD = 2.0  # a cell whose slowest timed run took more than this many times its fastest is "noisy"


def _latency_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    by_key = {(r["case"], r["engine"]): r for r in report["results"]}
    labels = {c["id"]: c["label"] for c in report["cases"]}
    groups = {c["id"]: c["group"] for c in report["cases"]}
    models = {group: info.get("name") for group, info in report["models"].items()}
    out = []
    for issues, what, engine, case, baseline, limit in LATENCY_TARGETS:
        mine, base = by_key.get((case, engine)), by_key.get((case, baseline))
        if case not in labels or models.get(groups[case]) != _GROUP_MODEL[groups[case]]:
            continue
        if not (mine and base and mine["status"] == base["status"] == "ok"):
            continue
        value = mine["median_ms"] / base["median_ms"]
        out.append(
            {
                "issues": issues,
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


def _size_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The NLLB stand-in's directory sizes against its safetensors (known once the engines are prepared,
    timed or not)."""
    if report["models"].get("nllb", {}).get("name") != NLLB_SHAPED_NAME:
        return []
    sizes = {e["id"]: e["groups"].get("nllb", {}).get("model_bytes") for e in report["engines"]}
    out = []
    for issues, what, engine, limit in NLLB_SIZE_TARGETS:
        mine, base = sizes.get(engine), sizes.get(TORCH_BASELINE)
        if mine and base:
            value = mine / base
            out.append(
                {"issues": issues, "target": what, "cell": "size on disk", "value": value, "value_min": None}
                | {"limit": limit, "met": value <= limit, "noisy": False}
            )
    return out


def evaluate_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets of issues 6, 15 and 23 that this run measured (fixed cells on the opus-mt-en-zh-shaped
    model, natural cells on the demo model, nllb cells and sizes on the NLLB stand-in); [] when it measured none.

    Latency targets give the ratio of medians (``value``, what ``met`` judges) and the ratio of the fastest
    runs (``value_min``: the least disturbed estimate when other processes compete for the CPUs), and flag
    ``noisy`` when either cell's max/min exceeds :data:`NOISY_SPREAD`.
    """
    out = _latency_targets(report) + _size_targets(report)
    if report["models"].get("fixed", {}).get("name") != SHAPED_NAME:
        return out
    groups = {e["id"]: e["groups"].get("fixed", {}) for e in report["engines"]}
    mine_info, ct2_info = groups.get("enzh-int8", {}), groups.get(CT2_BASELINE, {})
    if mine_info.get("peak_rss_mib") and ct2_info.get("peak_rss_mib"):
        value = mine_info["peak_rss_mib"] / ct2_info["peak_rss_mib"]
        out.append(
            {"issues": "#6", "target": "int8 peak RSS ≤ CTranslate2 int8's", "cell": "whole run", "value": value}
            | {"limit": 1.0}
            | {"value_min": None, "met": value <= 1.0, "noisy": False}
        )
    if "first_translation_s" in mine_info:
        value = mine_info["first_translation_s"]
        out.append(
            {"issues": "#6", "target": "int8 load ≤ 1.5 s (start → first translation)", "cell": "—", "value": value}
            | {"limit": 1.5}
            | {"value_min": None, "met": value <= 1.5, "noisy": False}
        )
    return out


def targets_table(report: dict[str, Any]) -> list[str]:
    """The markdown section of :func:`evaluate_targets` ([] when the run has no targets)."""
    targets = evaluate_targets(report)
    if not targets:
        return []
    numbers = sorted({n.strip() for t in targets for n in t.get("issues", "#6").replace("#", "").split(",")}, key=int)
    issues = " and ".join(numbers) if len(numbers) < 3 else f"{', '.join(numbers[:-1])} and {numbers[-1]}"
    sizes = (
        " Size: the enzh directory's bytes ÷ the PyTorch safetensors' bytes of the NLLB stand-in."
        if any(t["cell"] == "size on disk" for t in targets)
        else ""
    )
    lines = [
        f"## Speed targets in this run (issue{'s' if len(numbers) > 1 else ''} {issues})",
        "",
        "Latency targets: the ratio of the two engines' medians in the cell (what *met* judges) and "
        "the ratio of their fastest runs (the least disturbed estimate when other processes compete for the "
        f"CPUs); *noisy*: the slowest run of either cell took over {NOISY_SPREAD:g}× its fastest, so that ratio "
        "says little. RSS: the ratio of the two processes' peaks on the shaped model. Load: seconds." + sizes,
        "",
        "| issue | target | cell | ratio of medians | ratio of fastest runs | limit | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in targets:
        fastest = "—" if t.get("value_min") is None else f"{t['value_min']:.2f}"
        verdict = ("yes" if t["met"] else "**no**") + (" (noisy)" if t.get("noisy") else "")
        cells = (
            t.get("issues", "#6"),
            t["target"],
            t["cell"],
            f"{t['value']:.2f}",
            fastest,
            f"{t['limit']:.2f}",
            verdict,
        )
        lines.append("| " + " | ".join(cells) + " |")
    met = sum(t["met"] for t in targets)
    noisy = sum(bool(t.get("noisy")) for t in targets)
    summary = f"{met} of {len(targets)} targets met by the medians" + (
        f"; {noisy} of the {len(targets)} noisy." if noisy else "."
    )
    return [*lines, "", summary, ""]
