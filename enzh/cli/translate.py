"""``enzh translate [TEXT ...]``: translate arguments, or stdin one sentence per line (runtime only).

Without ``--model`` the embedded pair (English->Chinese, Chinese->English) is loaded; ``--model`` may be given
several times. Each text goes to the model of its language (``--source auto``, the default) or of ``--source``.

``--scores`` and ``--alignments`` add tab-separated columns after each translation, in this order: the score
(:mod:`enzh.runtime.confidence`, 4 decimals) and its flags (comma-separated, ``-`` for none), then the word
alignment in Pharaoh format (``0-0 1-2``: source word - translated word, :mod:`enzh.runtime.words`).

``--glossary FILE``: terms with a fixed translation (:mod:`enzh.runtime.glossary`), enforced in decoding."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from enzh.cli.common import positive_int
from enzh.runtime.engine import Translation


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
    p.add_argument(
        "--scores",
        action="store_true",
        help="print each translation's score (mean token log-probability) and warning flags after a tab",
    )
    p.add_argument(
        "--alignments",
        action="store_true",
        help="print each translation's word alignment in Pharaoh format (0-0 1-2 ...) after a tab",
    )
    p.add_argument(
        "--glossary",
        metavar="FILE",
        help="terms with a fixed translation: a UTF-8 TSV file of source<TAB>target[<TAB>flags] lines (flags: "
        "case-sensitive, inside-words; docs/quality.md); each source term found gets its target once per occurrence",
    )
    p.add_argument("--threads", type=int, default=0, help="ONNX Runtime intra-op threads (0 = all cores)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.runtime.glossary import Glossary
    from enzh.runtime.router import Translators

    glossary = Glossary.read(args.glossary) if args.glossary else None  # a bad file fails before loading models
    translators = Translators.load(args.model, intra_op_threads=args.threads)
    texts = args.texts if args.texts else [line.rstrip("\n") for line in sys.stdin]
    outputs = translators.translate_detailed(
        texts,
        beam_size=args.beam_size,
        max_new_tokens=args.max_new_tokens,
        target=args.target,
        source=args.source,
        alignments=args.alignments,
        glossary=glossary,
    )
    for translation in outputs:
        print("\t".join(columns(translation, scores=args.scores, alignments=args.alignments)))
    return 0


def columns(translation: Translation, *, scores: bool, alignments: bool) -> list[str]:
    """The printed columns of one translation (see the module docstring)."""
    # A tab or line break inside the translation would break the columns (and the one-line-per-input rule).
    out = [translation.text.replace("\n", " ").replace("\t", " ")]
    if scores:
        confidence = translation.confidence
        out += ["nan", "-"] if confidence is None else [f"{confidence.score:.4f}", ",".join(confidence.flags) or "-"]
    if alignments:
        out.append(translation.alignment.pharaoh() if translation.alignment is not None else "")
    return out
