"""``enzh translate [TEXT ...]``: translate arguments, or stdin one sentence per line (runtime only).

Without ``--model`` the embedded pair (English->Chinese, Chinese->English) is loaded; ``--model`` may be given
several times. Each text goes to the model of its language (``--source auto``, the default) or of ``--source``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from enzh.cli.common import positive_int


def add_parser(sub: Any) -> None:
    p = sub.add_parser("translate", help="translate TEXT arguments, or stdin one sentence per line")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="English or Chinese text; none: read lines from stdin")
    p.add_argument(
        "--model",
        action="append",
        help="exported model directory; repeat for several (default: the embedded en->zh and zh->en demo models)",
    )
    p.add_argument("--beam-size", type=positive_int, help="beam width (default: the manifest's num_beams)")
    p.add_argument(
        "--max-new-tokens", type=positive_int, help="max generated tokens per sentence (default: bounded by source)"
    )
    p.add_argument(
        "--target",
        help="target language: zh (zh-Hans), zh-Hant, en, a language token like >>cmn_Hant<<, or a "
        "multilingual model's own code (zho_Hant, __zh__, zh_CN); default: the other language of each text's "
        "direction. Text already in the target language is printed as it is",
    )
    p.add_argument(
        "--source",
        default="auto",
        help="source language: auto (default: each text's own, told by its script), en, zh, or a multilingual "
        "model's code (eng_Latn, ...)",
    )
    p.add_argument("--threads", type=int, default=0, help="ONNX Runtime intra-op threads (0 = all cores)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.runtime.router import Translators

    translators = Translators.load(args.model, intra_op_threads=args.threads)
    texts = args.texts if args.texts else [line.rstrip("\n") for line in sys.stdin]
    outputs = translators.translate(
        texts, beam_size=args.beam_size, max_new_tokens=args.max_new_tokens, target=args.target, source=args.source
    )
    for text in outputs:
        print(text.replace("\n", " "))
    return 0
