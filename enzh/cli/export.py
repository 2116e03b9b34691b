"""``enzh export SOURCE OUT_DIR``: a HuggingFace Marian model -> an enzh model directory (any precision)."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.cli.common import add_precision_flags, quantize_settings


def add_parser(sub: Any) -> None:
    p = sub.add_parser("export", help="export a HuggingFace Marian model (directory or hub id) to a model directory")
    p.add_argument(
        "source", metavar="SOURCE", help="local HF model directory or hub id (e.g. Helsinki-NLP/opus-mt-en-zh)"
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="directory to write (must be empty unless --force)")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty OUT_DIR")
    p.add_argument("--revision", help="hub revision (branch, tag or commit) to export")
    p.add_argument("--default-target", help="language token used when a call gives no target (default: >>cmn_Hans<<)")
    p.add_argument(
        "--atol",
        type=float,
        default=1e-4,
        help="absolute floor of the validation tolerance (default 1e-4; see docs/export.md)",
    )
    p.add_argument("--no-validate", action="store_true", help="skip the validation against PyTorch")
    add_precision_flags(p, default="fp32")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.export.pipeline import ExportOptions
    from enzh.quantize.pipeline import export_variant

    options = ExportOptions(
        force=args.force,
        revision=args.revision,
        default_target=args.default_target,
        validate=not args.no_validate,
        atol=args.atol,
    )
    manifest = export_variant(args.source, args.out_dir, options, **quantize_settings(args))
    total = sum(f["size"] for f in manifest.files.values())
    print(f"exported {manifest.source['id']} -> {args.out_dir} ({total / 1e6:.1f} MB, {manifest.precision})")
    return 0
