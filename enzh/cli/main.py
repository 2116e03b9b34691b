"""Command line: ``enzh export | quantize | translate | validate | train-demo``.

A thin layer: every flag maps to a field of an options dataclass or a function argument.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from enzh.runtime.options import positive_int
from enzh.serve.app import add_serve_parser, cmd_serve
from enzh.tools.bench import add_bench_parser, cmd_bench

logger = logging.getLogger("enzh")


def _precision_flags(p: argparse.ArgumentParser, default: str | None) -> None:
    choices = ["fp32", "int8", "int4", "fp16"] if default else ["int8", "int4", "fp16"]
    p.add_argument(
        "--precision",
        choices=choices,
        default=default,
        required=default is None,
        help="weights of the written model (see docs/precision.md)" + (f"; default {default}" if default else ""),
    )
    p.add_argument(
        "--block-size",
        type=positive_int,
        help="quantization block, 16..256 (default: int8 128, used by its embedding table; int4 64)",
    )
    p.add_argument("--accuracy-level", type=int, help="int8/int4 MatMulNBits compute type (4 = int8, default)")
    p.add_argument(
        "--cache",
        choices=["float32", "float16"],
        help="decoder self-attention cache of a variant: float32 (default, fastest on CPU) or float16 (half the "
        "memory of the largest beam-search buffers)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="enzh", description="English->Chinese Marian models on ONNX Runtime.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("export", help="export a HuggingFace Marian model (directory or hub id) to a model directory")
    p.add_argument(
        "source",
        metavar="SOURCE",
        help="local HF model directory or hub id (e.g. Helsinki-NLP/opus-mt-en-zh)",
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="directory to write (must be empty unless --force)")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty OUT_DIR")
    p.add_argument("--revision", help="hub revision (branch, tag or commit) to export")
    p.add_argument("--default-target", help="language token used when a call gives no target (default: >>cmn_Hans<<)")
    p.add_argument("--atol", type=float, default=1e-4, help="max abs difference allowed by validation (default 1e-4)")
    p.add_argument("--no-validate", action="store_true", help="skip the numerical validation against PyTorch")
    _precision_flags(p, default="fp32")

    p = sub.add_parser("quantize", help="derive an int8, int4 or fp16 variant from an fp32 model directory")
    p.add_argument("model_dir", metavar="DIR", help="fp32 model directory written by `enzh export`")
    p.add_argument("out_dir", metavar="OUT_DIR", help="directory to write (must be empty unless --force)")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty OUT_DIR")
    _precision_flags(p, default=None)
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

    p = sub.add_parser("translate", help="translate TEXT arguments, or stdin one sentence per line")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="English text; none: read lines from stdin")
    p.add_argument("--model", help="exported model directory (default: the embedded demo model)")
    p.add_argument("--beam-size", type=positive_int, help="beam width (default: the manifest's num_beams)")
    p.add_argument(
        "--max-new-tokens",
        type=positive_int,
        help="max generated tokens per sentence (default: bounded by source length)",
    )
    p.add_argument("--target", help="zh-Hans (default) or zh-Hant, or a language token like >>cmn_Hant<<")
    p.add_argument("--threads", type=int, default=0, help="ONNX Runtime intra-op threads (0 = all cores)")

    p = sub.add_parser("validate", help="re-check an exported directory against its HF model")
    p.add_argument("model_dir", metavar="DIR")
    p.add_argument("--source", required=True, help="the HF model directory or hub id it was exported from")
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--sentences", help="file with one English sentence per line (default: a built-in set)")

    p = sub.add_parser("train-demo", help="train the small demo EN->ZH model (about 25 minutes on 2 cores)")
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--steps", type=positive_int)
    p.add_argument("--seed", type=int)
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (default: 2, or 1 when the CPU is busy)")

    p = sub.add_parser("eval", help="exact match, chrF and BLEU of a model directory on a test set (TSV en<TAB>zh)")
    p.add_argument("--model", help="exported model directory (default: the embedded demo model)")
    p.add_argument("--test", help="TSV file, one 'english<TAB>chinese' pair per line (default: the demo held-out set)")
    p.add_argument(
        "--beam-size", type=positive_int, action="append", help="beam width; repeat for several (default 1 and 4)"
    )
    p.add_argument("--limit", type=positive_int, help="evaluate only the first N pairs")
    add_bench_parser(sub)
    add_serve_parser(sub)
    return parser


def _read_lines(stream: object) -> list[str]:
    return [line.rstrip("\n") for line in stream]  # type: ignore[attr-defined]


def _quantize_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "precision": args.precision,
        "block_size": args.block_size,
        "accuracy_level": args.accuracy_level,
        "cache": args.cache,
    }


def cmd_export(args: argparse.Namespace) -> int:
    from enzh.export.pipeline import ExportOptions
    from enzh.quantize.pipeline import export_variant

    manifest = export_variant(
        args.source,
        args.out_dir,
        ExportOptions(
            force=args.force,
            revision=args.revision,
            default_target=args.default_target,
            validate=not args.no_validate,
            atol=args.atol,
        ),
        **_quantize_settings(args),
    )
    total = sum(f["size"] for f in manifest.files.values())
    print(f"exported {manifest.source['id']} -> {args.out_dir} ({total / 1e6:.1f} MB, {manifest.precision})")
    return 0


def cmd_quantize(args: argparse.Namespace) -> int:
    from enzh.quantize.pipeline import quantize

    settings = _quantize_settings(args)
    if (args.shortlist is None) != (args.shortlist_corpus is None):
        raise ValueError("--shortlist N and --shortlist-corpus FILE go together: the shortlist is counted on FILE")
    if args.shortlist:
        from enzh.quantize.pipeline import corpus_shortlist

        with open(args.shortlist_corpus, encoding="utf-8") as corpus:
            lines = [line.rstrip("\n").split("\t")[-1] for line in corpus]
        settings["shortlist_ids"] = corpus_shortlist(args.model_dir, lines, args.shortlist)
    manifest = quantize(args.model_dir, args.out_dir, force=args.force, **settings)
    total = sum(f["size"] for f in manifest.files.values())
    print(f"quantized {args.model_dir} -> {args.out_dir} ({total / 1e6:.1f} MB, {manifest.precision})")
    return 0


def cmd_translate(args: argparse.Namespace) -> int:
    from enzh.runtime.translator import Translator

    translator = Translator.load(args.model, intra_op_threads=args.threads)
    texts = args.texts if args.texts else _read_lines(sys.stdin)
    outputs = translator.translate(
        texts, beam_size=args.beam_size, max_new_tokens=args.max_new_tokens, target=args.target
    )
    for text in outputs:
        print(text.replace("\n", " "))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from enzh.export.validate import validate_directory

    sentences = None
    if args.sentences:
        with open(args.sentences, encoding="utf-8") as f:
            sentences = [line.strip() for line in f if line.strip()]
    report = validate_directory(args.model_dir, args.source, atol=args.atol, sentences=sentences)
    print(report.format())
    return 0 if report.ok else 1


def cmd_train_demo(args: argparse.Namespace) -> int:
    from enzh.demo.train import main as train_main

    argv = [args.out_dir]
    if args.steps is not None:
        argv += ["--steps", str(args.steps)]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    if args.threads is not None:
        argv += ["--threads", str(args.threads)]
    result = train_main(argv)
    return int(result or 0)


def cmd_eval(args: argparse.Namespace) -> int:
    from enzh.runtime.translator import Translator
    from enzh.tools.evaluate import HEADER, evaluate, load_pairs

    translator = Translator.load(args.model)
    pairs = load_pairs(args.test, args.limit)
    name = args.model or "demo (embedded)"
    print(HEADER)
    for beams in args.beam_size or [1, 4]:
        label = f"{name} {translator.manifest.precision} ONNX, beam {beams}"
        print(evaluate(translator, pairs, beam_size=beams, label=label).row(), flush=True)
    return 0


COMMANDS = {
    "export": cmd_export,
    "quantize": cmd_quantize,
    "translate": cmd_translate,
    "validate": cmd_validate,
    "train-demo": cmd_train_demo,
    "eval": cmd_eval,
    "serve": cmd_serve,
    "bench": cmd_bench,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except (ValueError, TypeError, FileNotFoundError, RuntimeError, OSError) as exc:
        print(f"enzh {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from enzh.runtime.manifest import ModelDirError

        name = type(exc).__name__
        if isinstance(exc, ModelDirError) or name in ("ExportError", "QuantizeError"):
            print(f"enzh {args.command}: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
