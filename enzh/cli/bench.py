"""``enzh bench``: enzh against PyTorch and CTranslate2 in one run (needs the bench extra).

The options map onto :class:`enzh.tools.bench.settings.BenchSettings`; the measuring is
:func:`enzh.tools.bench.run.run_bench`, the report :func:`enzh.tools.bench.report.write_outputs`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from enzh.cli.common import positive_int
from enzh.tools.bench.settings import ENGINES, GROUPS, BenchSettings


def _int_list(value: str) -> tuple[int, ...]:
    try:
        items = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {value!r}") from None
    if not items or min(items) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {value!r}")
    return items


def _name_list(choices: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    def parse(value: str) -> tuple[str, ...]:
        items = tuple(v.strip() for v in value.split(",") if v.strip())
        unknown = [v for v in items if v not in choices]
        if not items or unknown:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)}; got {value!r}")
        return items

    return parse


# (flag, settings field, type) of the options that override BenchSettings; None keeps the mode's default.
_SETTING_FLAGS: tuple[tuple[str, str, Callable[[str], Any], str], ...] = (
    ("--engines", "engines", _name_list([e.id for e in ENGINES]), "engines to run (default: all)"),
    (
        "--groups",
        "groups",
        _name_list(GROUPS),
        "case groups: fixed, natural, nllb (default: fixed,natural; nllb: the fixed-length cells on the "
        "nllb-200-distilled-600M-shaped model, 2.5 GB built once into the cache)",
    ),
    ("--repeats", "repeats", positive_int, "timed runs per cell and round (default 5; --quick 2)"),
    ("--rounds", "rounds", positive_int, "sweeps over all engines, fresh processes each, runs pooled (default 1)"),
    ("--warmup", "warmup", int, "untimed runs per cell before timing (default 1)"),
    ("--threads", "threads", positive_int, "threads of every engine (default 2)"),
    ("--batch-sizes", "batch_sizes", _int_list, "batch sizes (default 1,16; --quick 1,4)"),
    ("--beams", "beams", _int_list, "beam widths, 1 = greedy (default 1,4; --quick 1,2)"),
    ("--source-tokens", "source_tokens", positive_int, "fixed cases: source length (default 24; --quick 12)"),
    ("--new-tokens", "new_tokens", positive_int, "fixed cases: generated tokens (default 32; --quick 8)"),
    ("--natural-sentences", "natural_sentences", positive_int, "natural cases: test sentences (default 64)"),
    ("--natural-max-new-tokens", "natural_max_new_tokens", positive_int, "natural cases: bound (default 128)"),
    ("--seed", "seed", int, "seed of the shaped model's weights and the fixed sources (default 0)"),
    ("--timeout", "timeout_s", float, "seconds one engine process may run (default 3600; --quick 300)"),
)


def add_parser(sub: Any) -> None:
    """Add the ``bench`` subcommand to the ``enzh`` parser's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "bench", help="measure enzh fp32/int8/int4 against transformers (PyTorch) and CTranslate2"
    )
    p.add_argument("--out", default="bench-results", help="directory for bench.json and bench.png (and bench.md)")
    p.add_argument("--markdown", help="write the markdown report here (default: OUT/bench.md)")
    p.add_argument("--quick", action="store_true", help="smoke test: the demo model, tiny cases, 2 repeats")
    p.add_argument("--model", help="fixed cases: this HF Marian directory instead of the opus-mt-en-zh-shaped model")
    p.add_argument("--shaped-config", help="directory with config.json + generation_config.json for the shaped model")
    p.add_argument(
        "--cache-dir", help="where models are built once (default: $ENZH_CACHE/bench or ~/.cache/enzh/bench)"
    )
    p.add_argument(
        "--isolate", choices=["engine", "cell"], help="one process per engine and model (default) or per cell"
    )
    p.add_argument("--note", help="a line for the report (e.g. that the machine was shared)")
    p.add_argument("--from-json", help="re-render bench.md and bench.png from an earlier bench.json (no measuring)")
    for flag, _, kind, text in _SETTING_FLAGS:
        p.add_argument(flag, type=kind, help=text)
    p.set_defaults(run=run)


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def settings_from_args(args: argparse.Namespace) -> BenchSettings:
    settings = BenchSettings.quick_defaults() if args.quick else BenchSettings()
    overrides = {
        name: getattr(args, _dest(flag))
        for flag, name, _, _ in _SETTING_FLAGS
        if getattr(args, _dest(flag)) is not None
    }
    if args.isolate:
        overrides["isolate"] = args.isolate
    if overrides.get("warmup", 0) < 0:
        raise ValueError("--warmup must be >= 0")
    return replace(settings, **overrides)


def command_line(args: argparse.Namespace) -> str:
    """The ``enzh bench`` command that reproduces ``args`` (options in a fixed order)."""
    parts = ["enzh", "bench"]
    if args.quick:
        parts.append("--quick")
    for flag in ("--from-json", "--out", "--markdown", "--model", "--shaped-config", "--cache-dir", "--isolate"):
        value = getattr(args, _dest(flag))
        if value is not None and not (flag == "--out" and value == "bench-results"):
            parts += [flag, str(value)]
    for flag, _, _, _ in _SETTING_FLAGS:
        value = getattr(args, _dest(flag))
        if value is not None:
            parts += [flag, ",".join(map(str, value)) if isinstance(value, tuple) else str(value)]
    if args.note:
        parts += ["--note", args.note]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    from enzh.tools.bench.prepare import default_cache_dir
    from enzh.tools.bench.report import check_report, write_outputs
    from enzh.tools.bench.run import run_bench

    out_dir = Path(args.out)
    markdown = Path(args.markdown) if args.markdown else None
    if args.from_json:
        report = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        check_report(report)
    else:
        report = run_bench(
            settings_from_args(args),
            cache_dir=Path(args.cache_dir) if args.cache_dir else default_cache_dir(),
            command=command_line(args),
            fixed_model=Path(args.model) if args.model else None,
            shaped_config=Path(args.shaped_config) if args.shaped_config else None,
            note=args.note,
        )
    rendered_by = command_line(args) if args.from_json else None
    paths = write_outputs(report, out_dir, markdown, rendered_by)
    print(paths["md"].read_text(encoding="utf-8"))
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}", file=sys.stderr)
    failed = [r for r in report["results"] if r["status"] == "error"]
    return 1 if failed else 0
