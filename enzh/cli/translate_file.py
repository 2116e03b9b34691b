"""``enzh translate-file INPUT OUTPUT``: translate a document, keeping its structure (docs/documents.md)."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.cli.common import positive_int
from enzh.documents.formats import EXTENSIONS, FORMAT_NAMES
from enzh.documents.options import CONVERSIONS, L10N_FORMATS, SOURCES, TARGETS
from enzh.scale.options import corpus_options


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "translate-file",
        help="translate a document (txt, html, md, srt, vtt, docx, pptx, xlsx, odt, odp, epub, jsonl, tsv, csv, po, "
        "xliff), keeping its structure",
        description="Translate INPUT into OUTPUT, keeping its structure; an interrupted run started again with "
        "the same arguments resumes from OUTPUT.enzh-journal.",
    )
    p.add_argument("input", metavar="INPUT", help="the document to translate")
    p.add_argument("output", metavar="OUTPUT", help="where to write the translation (written when complete)")
    p.add_argument(
        "--format",
        choices=["auto", *FORMAT_NAMES],
        default="auto",
        help=f"document format (default auto: from INPUT's extension, one of {' '.join(EXTENSIONS)})",
    )
    p.add_argument(
        "--field",
        metavar="NAME",
        help="jsonl: the field to translate; tsv, csv: column name or 0-based index (default: text)",
    )
    p.add_argument(
        "--no-fuzzy",
        dest="fuzzy",
        action="store_false",
        help="po, xliff: do not mark machine translations as needing review (po: the fuzzy flag; XLIFF: the "
        "target's state)",
    )
    p.add_argument(
        "--retranslate",
        action="store_true",
        help="po, xliff: translate entries that already have a translation too (default: they are kept)",
    )
    p.add_argument(
        "--sheet-names",
        action="store_true",
        help="xlsx: translate the names of the sheets too (references to them in formulas, defined names and charts "
        "follow); default: kept",
    )
    p.add_argument("--beam-size", type=positive_int, help="beam width (default: the manifest's num_beams)")
    p.add_argument(
        "--source",
        choices=["auto", *SOURCES],
        default="auto",
        help="the document's language (default auto: told from its text); picks the model of that direction",
    )
    p.add_argument(
        "--target",
        choices=TARGETS,
        help="zh-Hans (default for English documents) or zh-Hant (the model's >>cmn_Hant<<), en (for Chinese ones)",
    )
    p.add_argument(
        "--convert",
        choices=["none", *CONVERSIONS],
        default="none",
        help="convert the Simplified output with OpenCC: s2t, s2tw (Taiwan), s2twp (Taiwan, with phrases), "
        "s2hk (Hong Kong); needs the [documents] extra",
    )
    p.add_argument(
        "--model",
        action="append",
        help="exported model directory; repeat for several, the document's direction picks one (default: the "
        "embedded en->zh and zh->en demo models)",
    )
    p.add_argument(
        "--ray",
        metavar="local|auto|ADDRESS",
        help="translate on Ray (needs the [ray] extra; docs/scale.md): local starts Ray on this machine, auto or "
        "HOST:PORT joins a cluster; finished shards are kept in OUTPUT.enzh-shards for a rerun to resume",
    )
    p.add_argument(
        "--report",
        metavar="FILE",
        help="also write a JSON report of the lowest-scoring units (score, flags, unit number and input line) to "
        "FILE (docs/quality.md); not with --ray",
    )
    p.add_argument(
        "--glossary",
        metavar="FILE",
        help="terms with a fixed translation: a UTF-8 TSV file of source<TAB>target[<TAB>flags] lines (flags: "
        "case-sensitive, inside-words; docs/quality.md); each source term found gets its target once per occurrence",
    )
    p.add_argument("--workers", type=positive_int, help="with --ray: worker actors, each with its own model (1)")
    p.add_argument("--threads-per-worker", type=positive_int, help="with --ray: CPUs (ONNX Runtime threads) each (1)")
    p.add_argument(
        "--shard-size", type=positive_int, help="with --ray: lines, records or subtitle blocks a shard (256)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.documents.errors import DocumentError
    from enzh.documents.files import Prepared, finish, prepare
    from enzh.runtime.default_model import DEMO_DIR
    from enzh.runtime.glossary import Glossary
    from enzh.runtime.router import Translators

    scale = corpus_options(args.ray, args.workers, args.threads_per_worker, args.shard_size)
    if scale is not None and args.report is not None:
        raise DocumentError("--report is not available with --ray (its workers do not return scores)")
    glossary = Glossary.read(args.glossary) if args.glossary else None

    def prepared_as(source: str, target: str | None = args.target) -> Prepared:
        found = prepare(
            args.input,
            args.output,
            format=args.format,
            field=args.field,
            beam_size=args.beam_size,
            target=target,
            convert=args.convert,
            source=source,
            fuzzy=args.fuzzy,
            retranslate=args.retranslate,
            glossary=glossary,
            sheet_names=args.sheet_names,
        )
        if target is None and found.options.format in L10N_FORMATS:
            # A po/XLIFF file names its target language: name the one this run writes, so that a file for
            # another one (or the other Chinese script) is refused (enzh.documents.locales).
            return prepared_as(found.options.source, "en" if found.options.source == "zh" else "zh-Hans")
        return found

    prepared = prepared_as(args.source)  # bad paths and options fail before any model is loaded
    translators = Translators.load(args.model)
    if args.source == "auto" and not _offered(translators, prepared.options.source, args.target):
        # Already in the target language, or in one no model reads: only its English pieces are translated.
        prepared = prepared_as("en")
    engine = translators.route(prepared.options.source, args.target).engine
    if scale is not None:
        from enzh.scale.corpus import translate_on_ray

        # Workers load the model themselves: None names the embedded default, any other by its directory.
        directory = engine.info.directory
        translate_on_ray(prepared, scale, model_dir=None if directory == DEMO_DIR else str(directory))
        return 0
    finish(prepared, engine, report=args.report)
    return 0


def _offered(translators: Any, source: str, target: str | None) -> bool:
    try:
        translators.route(source, target)
    except ValueError:
        return False
    return True
