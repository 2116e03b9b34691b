"""bench.png: the latency of every engine in every case (needs matplotlib, the bench extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from enzh.tools.bench.settings import FIXED_GROUPS, GROUPS


def render_chart(report: dict[str, Any], path: Path) -> None:
    """Grouped bars: median latency per case and engine (min–max as error bars), log scale; one panel per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [g for g in GROUPS if any(c["group"] == g for c in report["cases"])]
    engines = list(report["engines"])
    by_key = {(r["case"], r["engine"]): r for r in report["results"]}
    fig, axes = plt.subplots(1, len(groups), figsize=(7 * len(groups), 4.8), squeeze=False)
    width = 0.8 / max(1, len(engines))
    for ax, group in zip(axes[0], groups, strict=True):
        cases = [c for c in report["cases"] if c["group"] == group]
        for k, engine in enumerate(engines):
            xs, ys, low, high = [], [], [], []
            for i, case in enumerate(cases):
                r = by_key.get((case["id"], engine["id"]))
                if r and r["status"] == "ok":
                    xs.append(i + (k - (len(engines) - 1) / 2) * width)
                    ys.append(r["median_ms"])
                    low.append(r["median_ms"] - r["min_ms"])
                    high.append(r["max_ms"] - r["median_ms"])
            if xs:
                ax.bar(xs, ys, width, yerr=[low, high], capsize=2, label=engine["label"])
        ax.set_xticks(range(len(cases)), [c["label"] for c in cases], rotation=15)
        ax.set_yscale("log")
        model = report["models"][group]["name"]
        unit = "ms per call" if group in FIXED_GROUPS else f"ms for {cases[0]['sentences']} sentences"
        ax.set_ylabel(f"{unit} (log scale)")
        ax.set_title(f"{'fixed' if group in FIXED_GROUPS else group} length, {model} model")
        ax.grid(axis="y", which="both", alpha=0.3)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=min(len(names), 6), fontsize=8, frameon=False)
    settings = report["settings"]
    runs = settings["repeats"] * settings.get("rounds", 1)
    fig.suptitle(f"enzh bench, {settings['threads']} threads, median of {runs} runs (bars: min–max)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
