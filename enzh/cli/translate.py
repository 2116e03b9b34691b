"""``enzh translate [TEXT ...]``: translate arguments, or stdin one sentence per line (runtime only)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from enzh.cli.common import positive_int


def add_parser(sub: Any) -> None:
    p = sub.add_parser("translate", help="translate TEXT arguments, or stdin one sentence per line")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="English text; none: read lines from stdin")
    p.add_argument("--model", help="exported model directory (default: the embedded demo model)")
    p.add_argument("--beam-size", type=positive_int, help="beam width (default: the manifest's num_beams)")
    p.add_argument(
        "--max-new-tokens", type=positive_int, help="max generated tokens per sentence (default: bounded by source)"
    )
    p.add_argument(
        "--target",
        help="target language: zh-Hans (default) or zh-Hant, en, a language token like >>cmn_Hant<<, or a "
        "multilingual model's own code (zho_Hant, __zh__, zh_CN); the model's languages decide what is accepted",
    )
    p.add_argument(
        "--source",
        help="source language of a multilingual model (en by default; zh, eng_Latn, ...); a Marian model has one",
    )
    p.add_argument("--threads", type=int, default=0, help="ONNX Runtime intra-op threads (0 = all cores)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.runtime.translator import Translator

    translator = Translator.load(args.model, intra_op_threads=args.threads)
    texts = args.texts if args.texts else [line.rstrip("\n") for line in sys.stdin]
    outputs = translator.translate(
        texts, beam_size=args.beam_size, max_new_tokens=args.max_new_tokens, target=args.target, source=args.source
    )
    for text in outputs:
        print(text.replace("\n", " "))
    return 0
