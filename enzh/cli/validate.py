"""``enzh validate DIR --source SOURCE``: re-check an exported directory against its HF model."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="re-check an exported directory against its HF model")
    p.add_argument("model_dir", metavar="DIR")
    p.add_argument("--source", required=True, help="the HF model directory or hub id it was exported from")
    p.add_argument("--atol", type=float, default=1e-4, help="absolute floor of the tolerance (default 1e-4)")
    p.add_argument("--sentences", help="file with one English sentence per line (default: a built-in set)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.export.validate import validate_directory

    sentences = None
    if args.sentences:
        with open(args.sentences, encoding="utf-8") as f:
            sentences = [line.strip() for line in f if line.strip()]
    report = validate_directory(args.model_dir, args.source, atol=args.atol, sentences=sentences)
    print(report.format())
    return 0 if report.ok else 1
