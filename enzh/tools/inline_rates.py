"""How often an inline tag lands on the right words: the tagged demo set, per placement mechanism (docs/html.md).

    .venv/bin/python scripts/inline_rates.py [--model DIR | --sweep]

The set (tests/documents/data/inline_tagged_demo.tsv) holds sentences of the demo test set with <b>/<i>/<a> around
English words and, on the reference translation, around their Chinese. A mark is *exact* when its placed range
is the reference range, *contains* when its range holds the reference words (exact included), *wrong* when it
has text but not its words, *empty* when it was written with nothing inside. The cross-attention comes from the
model directory's aligner graph (aligner.onnx) through ONNX Runtime: no torch needed. ``--model`` measures another
export of the demo model; ``--sweep`` compares the aligner's layers and heads (it exports assets/demo-hf with
each setting: needs the export extra).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

from enzh.documents import placement
from enzh.documents.alignment import ModelAligner
from enzh.documents.inline import Block, Mark, translate_blocks
from enzh.runtime.manifest import Manifest
from enzh.runtime.translator import Translator

ROOT = Path(__file__).resolve().parents[2]  # the source checkout: the tagged set lives with the tests
DATA = ROOT / "tests" / "documents" / "data" / "inline_tagged_demo.tsv"
_TAG = re.compile(r"<(/?)(\w+)>")


def parse(tagged: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """Plain text and name -> span of ``tagged`` (each tag name once per line); marks in document order."""
    text: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    opened: dict[str, int] = {}
    last = length = 0
    for m in _TAG.finditer(tagged):
        text.append(tagged[last : m.start()])
        length += m.start() - last
        last = m.end()
        if m.group(1):
            spans[m.group(2)] = (opened.pop(m.group(2)), length)
        else:
            opened[m.group(2)] = length
            spans[m.group(2)] = (length, -1)
    text.append(tagged[last:])
    return "".join(text), spans


def load() -> list[tuple[str, dict[str, tuple[int, int]], str, dict[str, tuple[int, int]]]]:
    rows = []
    for line in DATA.read_text(encoding="utf-8").splitlines():
        en, zh = line.split("\t")
        (source, marks), (target, gold) = parse(en), parse(zh)
        rows.append((source, marks, target, gold))
    return rows


def score(name: str, rows, placed: list[dict[str, tuple[int, int]]]) -> None:
    counts: Counter[str] = Counter()
    for (_, _, _, gold), got in zip(rows, placed, strict=True):
        for tag, (a, b) in gold.items():
            start, end = got[tag]
            counts["marks"] += 1
            counts["exact"] += (start, end) == (a, b)
            counts["contains"] += start <= a and b <= end
            counts["wrong"] += start < end and not (start <= a and b <= end)
            counts["empty"] += start == end
    n = counts["marks"]
    print(
        f"| {name} | {counts['exact']} ({100 * counts['exact'] / n:.0f} %) | {counts['contains']} "
        f"({100 * counts['contains'] / n:.0f} %) | {counts['wrong']} | {counts['empty']} |"
    )


def by_translate_blocks(rows, translate, **options) -> list[dict[str, tuple[int, int]]]:
    blocks = [Block(src, tuple(Mark(a, b, tag) for tag, (a, b) in marks.items())) for src, marks, _, _ in rows]
    results = translate_blocks(blocks, translate, **options)
    for (_, _, target, _), result in zip(rows, results, strict=True):
        assert result.text == target, (result.text, target)
    return [{str(m.tag): (m.start, m.end) for m in r.marks} for r in results]


def proportional(rows) -> list[dict[str, tuple[int, int]]]:
    """The first placeholder: offsets scaled from the source sentence to its translation."""
    out = []
    for source, marks, target, _ in rows:
        scale = len(target) / max(1, len(source))
        out.append({tag: (round(a * scale), round(b * scale)) for tag, (a, b) in marks.items()})
    return out


def attention_alone(rows, aligner: ModelAligner) -> list[dict[str, tuple[int, int]]]:
    """Each mark on the range its source pieces are aligned with (placement.attended, the model's aligner graph
    through ONNX Runtime), with no order or nesting constraint: what attention alone would place."""
    alignments = aligner([(source, target) for source, _, target, _ in rows])
    out = []
    for (_, marks, target, _), alignment in zip(rows, alignments, strict=True):
        assert alignment is not None
        out.append({tag: placement.attended(alignment, a, b, len(target)) or (0, 0) for tag, (a, b) in marks.items()})
    return out


class Engine:
    """The demo model as a sentence translator (beam 1) with the aligner protocol's ``align``."""

    def __init__(self, translator: Translator) -> None:
        self.translator = translator
        self.align = ModelAligner(translator)

    def __call__(self, texts: list[str]) -> list[str]:
        return self.translator.translate(texts, beam_size=1)


def by_kind(rows, engine: Engine) -> None:
    """The shipped placement's marks by how they were placed (TranslatedBlock.placement)."""
    blocks = [Block(src, tuple(Mark(a, b, tag) for tag, (a, b) in marks.items())) for src, marks, _, _ in rows]
    counts: Counter[tuple[str, str]] = Counter()
    for (_, _, _, gold), result in zip(rows, translate_blocks(blocks, engine), strict=True):
        for mark, kind in zip(result.marks, result.placement, strict=True):
            a, b = gold[mark.tag]
            holds = mark.start <= a and b <= mark.end
            counts[kind, "marks"] += 1
            counts[kind, "exact"] += (mark.start, mark.end) == (a, b)
            counts[kind, "contains"] += holds
            counts[kind, "wrong"] += mark.start < mark.end and not holds
    print("\n| placed as | marks | exact | contains its words | wrong words |\n|---|---|---|---|---|")
    for kind in ("sure", "aligned", "unit", "empty"):
        values = " | ".join(str(counts[kind, key]) for key in ("marks", "exact", "contains", "wrong"))
        print(f"| {kind} | {values} |")


# The aligner settings compared by --sweep: every layer, each layer, pairs of layers (all heads), and each head of
# each layer.
SWEEP = [((), ()), ((0,), ()), ((1,), ()), ((2,), ()), ((0, 1), ()), ((1, 2), ())] + [
    ((layer,), (head,)) for layer in range(3) for head in range(4)
]


def sweep(rows) -> None:
    """The shipped mechanism with each aligner setting of SWEEP (exports of assets/demo-hf: the export extra)."""
    import tempfile

    from enzh.export.pipeline import AlignerSettings, ExportOptions, export

    print("| aligner: mean over | exact | contains its words | wrong words | empty |\n|---|---|---|---|---|")
    for layers, heads in SWEEP:
        with tempfile.TemporaryDirectory() as tmp:
            settings = AlignerSettings(layers=layers, heads=heads)
            export(str(ROOT / "assets" / "demo-hf"), tmp, ExportOptions(progress=False, aligner=settings, force=True))
            engine = Engine(Translator.load(tmp))
            name = f"layers {list(layers) or 'all'}, heads {list(heads) or 'all'}"
            score(name, rows, by_translate_blocks(rows, engine))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: the embedded demo model)")
    parser.add_argument(
        "--sweep", action="store_true", help="compare aligner layers/heads (exports assets/demo-hf; export extra)"
    )
    args = parser.parse_args(argv)
    rows = load()
    if args.sweep:
        sweep(rows)
        return 0
    engine = Engine(Translator.load(args.model))
    if not engine.translator.info.has_aligner:
        parser.error(f"{engine.translator.info.directory} has no aligner.onnx; re-export it with `enzh export`")
    alignment = Manifest.load(engine.translator.info.directory).alignment or {}
    print(
        f"{len(rows)} sentences, {sum(len(r[1]) for r in rows)} marks (demo model, beam 1; aligner: mean over "
        f"layers {alignment['layers']}, heads {alignment['heads']})\n"
    )
    print("| mechanism | exact | contains its words | wrong words | empty |\n|---|---|---|---|---|")
    score("proportional (the first placeholder)", rows, proportional(rows))
    score(
        "fallback only (`anchors=False, attention=False`)",
        rows,
        by_translate_blocks(rows, engine, anchors=False, attention=False),
    )
    shipped = placement.anchor_input
    placement.anchor_input = (
        lambda sentence, fragment: (  # a variant under test
            None if shipped(sentence, fragment) is None else sentence[fragment.start : fragment.end].strip()
        )
    )
    try:
        import enzh.documents.inline as inline

        inline.anchor_input = placement.anchor_input
        score("anchors, span translated bare", rows, by_translate_blocks(rows, engine, attention=False))
    finally:
        placement.anchor_input = inline.anchor_input = shipped
    score("anchors, span + `.` (`attention=False`)", rows, by_translate_blocks(rows, engine, attention=False))
    score("cross-attention alone, no order/nesting constraint", rows, attention_alone(rows, engine.align))
    score("cross-attention, in the placement (`anchors=False`)", rows, by_translate_blocks(rows, engine, anchors=False))
    score("**anchors, then cross-attention (shipped)**", rows, by_translate_blocks(rows, engine))
    by_kind(rows, engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
