"""``enzh quantize FP32_DIR OUT_DIR --precision int8|int4|fp16``: derive a precision variant."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.cli.common import add_precision_flags, positive_int, quantize_settings
from enzh.quantize.settings import DEFAULT_SHORTLIST_FREQUENT as FREQUENT
from enzh.quantize.settings import DEFAULT_SHORTLIST_PER_SOURCE as PER_SOURCE
from enzh.quantize.settings import SOURCE_SHORTLIST_CORPORA
from enzh.runtime.errors import OptionsError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("quantize", help="derive an int8, int4 or fp16 variant from an fp32 model directory")
    p.add_argument("model_dir", metavar="DIR", help="fp32 model directory written by `enzh export`")
    p.add_argument("out_dir", metavar="OUT_DIR", help="directory to write (must be empty unless --force)")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty OUT_DIR")
    add_precision_flags(p, default=None)
    p.add_argument(
        "--shortlist",
        type=positive_int,
        metavar="N",
        help="int8/int4 only: every decoder step scores only the N target pieces most frequent in "
        "--shortlist-corpus (plus eos and unk); faster, changes translations (default: the whole vocabulary)",
    )
    p.add_argument(
        "--shortlist-corpus",
        metavar="FILE",
        help="target-language text for --shortlist, one sentence per line (of a TAB-separated line, the last field)",
    )
    p.add_argument(
        "--source-shortlist",
        metavar="PAIRS",
        help="int8 only: each batch's decoder scores only the target pieces associated, in PAIRS (a TSV of "
        "English<TAB>Chinese lines, e.g. the training corpus), with the batch's source pieces, plus the most "
        "frequent ones, eos and unk; faster, changes translations (not with --shortlist)",
    )
    p.add_argument(
        "--source-shortlist-corpus",
        choices=SOURCE_SHORTLIST_CORPORA,
        default="pairs",
        help="what the --source-shortlist file holds: English<TAB>Chinese pairs (default), or English sentences, one "
        "per line, that the model translates (greedy) into the pairs, for when no parallel corpus is at hand",
    )
    p.add_argument(
        "--shortlist-frequent",
        type=int,
        metavar="F",
        help=f"--source-shortlist: target pieces every batch scores, the F most frequent (default {FREQUENT})",
    )
    p.add_argument(
        "--shortlist-per-source",
        type=positive_int,
        metavar="K",
        help=f"--source-shortlist: target pieces kept per source piece (default {PER_SOURCE})",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.quantize.pipeline import quantize
    from enzh.quantize.shortlist import corpus_shortlist

    settings = quantize_settings(args)
    if (args.shortlist is None) != (args.shortlist_corpus is None):
        raise OptionsError("--shortlist N and --shortlist-corpus FILE go together: the shortlist is counted on FILE")
    if args.shortlist and args.source_shortlist:
        raise OptionsError(
            "--shortlist and --source-shortlist exclude each other: choose the global shortlist (--shortlist N "
            "--shortlist-corpus FILE) or the source-aware one (--source-shortlist PAIRS.tsv)"
        )
    tuned = args.shortlist_frequent is not None or args.shortlist_per_source is not None
    if not args.source_shortlist and (tuned or args.source_shortlist_corpus != "pairs"):
        raise OptionsError(
            "--shortlist-frequent, --shortlist-per-source and --source-shortlist-corpus tune --source-shortlist "
            "FILE; add it"
        )
    if args.source_shortlist:
        settings["source_shortlist"] = args.source_shortlist
        settings["shortlist_frequent"] = args.shortlist_frequent
        settings["shortlist_per_source"] = args.shortlist_per_source
        settings["source_shortlist_corpus"] = args.source_shortlist_corpus
    if args.shortlist:
        with open(args.shortlist_corpus, encoding="utf-8") as corpus:
            lines = [line.rstrip("\n").split("\t")[-1] for line in corpus]
        settings["shortlist_ids"] = corpus_shortlist(args.model_dir, lines, args.shortlist)
    manifest = quantize(args.model_dir, args.out_dir, force=args.force, **settings)  # type: ignore[arg-type]
    total = sum(f["size"] for f in manifest.files.values())
    print(f"quantized {args.model_dir} -> {args.out_dir} ({total / 1e6:.1f} MB, {manifest.precision})")
    return 0
