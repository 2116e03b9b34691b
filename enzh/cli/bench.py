"""``enzh bench``: enzh against PyTorch and CTranslate2 in one run (needs the bench extra)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    from enzh.tools.bench import add_bench_parser

    add_bench_parser(sub).set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.tools.bench import cmd_bench

    return cmd_bench(args)
