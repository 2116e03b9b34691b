"""``enzh train-demo OUT_DIR [--direction zh-en]``: retrain a small demo model (needs the demo extra)."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.cli.common import positive_int


def add_parser(sub: Any) -> None:
    p = sub.add_parser("train-demo", help="train a small demo model, en-zh or zh-en (about 25 minutes on 2 cores)")
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--steps", type=positive_int)
    p.add_argument("--seed", type=int)
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (default: 2, or 1 when the CPU is busy)")
    p.add_argument("--direction", choices=("en-zh", "zh-en"), help="which demo model (default en-zh)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.demo.train import main as train_main

    argv = [args.out_dir]
    for flag, value in (
        ("--steps", args.steps),
        ("--seed", args.seed),
        ("--threads", args.threads),
        ("--direction", args.direction),
    ):
        if value is not None:
            argv += [flag, str(value)]
    return int(train_main(argv) or 0)
