"""``enzh eval``: exact match, chrF and BLEU of a model directory on a TSV test set."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.cli.common import positive_int


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "eval", help="exact match, chrF and BLEU of a model directory on a test set (TSV source<TAB>reference)"
    )
    p.add_argument("--model", help="exported model directory (default: the embedded demo model)")
    p.add_argument(
        "--test",
        help="TSV file, one 'source<TAB>reference' pair per line (default: the model directory's test.tsv, else the "
        "en->zh demo's held-out set)",
    )
    p.add_argument(
        "--beam-size", type=positive_int, action="append", help="beam width; repeat for several (default 1 and 4)"
    )
    p.add_argument("--limit", type=positive_int, help="evaluate only the first N pairs")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.runtime.translator import Translator
    from enzh.tools.evaluate import HEADER, evaluate, load_pairs

    translator = Translator.load(args.model)
    own = translator.info.directory / "test.tsv"  # each demo model ships its held-out set
    pairs = load_pairs(args.test or (own if own.is_file() else None), args.limit)
    name = args.model or "demo (embedded)"
    print(HEADER)
    for beams in args.beam_size or [1, 4]:
        label = f"{name} {translator.info.precision} ONNX, beam {beams}"
        print(evaluate(translator, pairs, beam_size=beams, label=label).row(), flush=True)
    return 0
