"""``enzh train-demo OUT_DIR``: retrain the small demo EN->ZH model (needs the demo extra)."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.cli.common import positive_int


def add_parser(sub: Any) -> None:
    p = sub.add_parser("train-demo", help="train the small demo EN->ZH model (about 25 minutes on 2 cores)")
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--steps", type=positive_int)
    p.add_argument("--seed", type=int)
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (default: 2, or 1 when the CPU is busy)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.demo.train import main as train_main

    argv = [args.out_dir]
    for flag, value in (("--steps", args.steps), ("--seed", args.seed), ("--threads", args.threads)):
        if value is not None:
            argv += [flag, str(value)]
    return int(train_main(argv) or 0)
