"""How often an inline tag lands on the right words: the tagged sets, per placement mechanism, and how many marks
lose their words on the real documents (docs/html.md).

    .venv/bin/python scripts/inline_rates.py [--set demo|heldout] [--model DIR | --sweep]
    .venv/bin/python scripts/inline_rates.py --realdocs ../shared/realdocs
    .venv/bin/python scripts/inline_rates.py --build-heldout   # writes the held-out set (tests/documents/data)

A set holds sentences of the demo test set with <b>/<i>/<a> around English words and, on the reference
translation, around their Chinese: ``demo`` (tests/documents/data/inline_tagged_demo.tsv, tagged by hand, the set
the placement was tuned on) and ``heldout`` (inline_tagged_heldout.tsv, tagged by the rule of
:func:`build_heldout` on other sentences, never tuned on). A mark is *exact* when its placed range is the
reference range, *contains* when its range holds the reference words (exact included), *wrong* when it has text
but not its words, *empty* when it was written with nothing inside. A sentence that the fallback translated in
parts no longer has the reference translation: a mark there is exact when its text is the reference mark's text,
contains when it holds it. The cross-attention comes from the model directory's aligner graph (aligner.onnx)
through ONNX Runtime: no torch needed. ``--model`` measures another export of the demo model; ``--sweep``
compares the aligner's layers and heads (it exports assets/demo-hf with each setting: needs the export extra).
``--realdocs DIR`` translates every file of DIR (md, html, docx, srt, vtt; the spec examples one by one) with the
model and counts the marks that had words and came back without (inline.lost_marks), with and without the fallback.
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
HELDOUT = ROOT / "tests" / "documents" / "data" / "inline_tagged_heldout.tsv"
SETS = {"demo": DATA, "heldout": HELDOUT}
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


def load(path: Path = DATA) -> list[tuple[str, dict[str, tuple[int, int]], str, dict[str, tuple[int, int]]]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        en, zh = line.split("\t")
        (source, marks), (target, gold) = parse(en), parse(zh)
        rows.append((source, marks, target, gold))
    return rows


Placements = list[tuple[str, dict[str, tuple[int, int]]]]  # per row: the translation, tag -> placed range


def judge(target: str, gold: tuple[int, int], text: str, placed: tuple[int, int]) -> dict[str, bool]:
    """One mark: exact, contains, wrong, empty (on the reference's text by range; on another text by words)."""
    (a, b), (start, end) = gold, placed
    if text == target:
        exact, contains = (start, end) == (a, b), start <= a and b <= end
    else:  # the fallback translated the sentence in parts: compare the words
        exact, contains = text[start:end] == target[a:b], target[a:b] in text[start:end]
    return {"exact": exact, "contains": contains, "wrong": start < end and not contains, "empty": start == end}


def score(name: str, rows, placed: Placements) -> None:
    counts: Counter[str] = Counter()
    for (_, _, target, gold), (text, got) in zip(rows, placed, strict=True):
        for tag, reference in gold.items():
            counts["marks"] += 1
            counts.update(key for key, value in judge(target, reference, text, got[tag]).items() if value)
    n = counts["marks"]
    print(
        f"| {name} | {counts['exact']} ({100 * counts['exact'] / n:.0f} %) | {counts['contains']} "
        f"({100 * counts['contains'] / n:.0f} %) | {counts['wrong']} | {counts['empty']} |"
    )


def by_translate_blocks(rows, translate, **options) -> Placements:
    blocks = [Block(src, tuple(Mark(a, b, tag) for tag, (a, b) in marks.items())) for src, marks, _, _ in rows]
    results = translate_blocks(blocks, translate, **options)
    for (_, _, target, _), result in zip(rows, results, strict=True):
        assert options.get("fallback", True) or result.text == target, (result.text, target)
    return [(r.text, {str(m.tag): (m.start, m.end) for m in r.marks}) for r in results]


def proportional(rows) -> Placements:
    """The first placeholder: offsets scaled from the source sentence to its translation."""
    out = []
    for source, marks, target, _ in rows:
        scale = len(target) / max(1, len(source))
        out.append((target, {tag: (round(a * scale), round(b * scale)) for tag, (a, b) in marks.items()}))
    return out


def attention_alone(rows, aligner: ModelAligner) -> Placements:
    """Each mark on the range its source pieces are aligned with (placement.attended, the model's aligner graph
    through ONNX Runtime), with no order or nesting constraint: what attention alone would place."""
    alignments = aligner([(source, target) for source, _, target, _ in rows])
    out = []
    for (_, marks, target, _), alignment in zip(rows, alignments, strict=True):
        assert alignment is not None
        ranges = {tag: placement.attended(alignment, a, b, len(target)) or (0, 0) for tag, (a, b) in marks.items()}
        out.append((target, ranges))
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
    for (_, _, target, gold), result in zip(rows, translate_blocks(blocks, engine), strict=True):
        for mark, kind in zip(result.marks, result.placement, strict=True):
            verdict = judge(target, gold[mark.tag], result.text, (mark.start, mark.end))
            counts[kind, "marks"] += 1
            counts.update((kind, key) for key in ("exact", "contains", "wrong") if verdict[key])
    print("\n| placed as | marks | exact | contains its words | wrong words |\n|---|---|---|---|---|")
    for kind in ("sure", "aligned", "unit", "own", "empty"):
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


def build_heldout(count: int = 50, skip: int = 99) -> list[str]:
    """The held-out tagged set, by rule: sentences of the demo test set after the first ``skip`` (none of the
    hand-tagged set), in order, whose beam-1 translation is the reference, with 2 or 3 marks each. A mark is a
    lexicon entry (a name, a relative or role, a noun in any of its forms, a place, a time expression) or a
    number that occurs exactly once in the English (as a word) and whose Chinese occurs exactly once in the
    reference; the longest entries first, none overlapping on either side; tags b, i, a in source order."""
    from enzh.demo import lexicon

    entries = [(p.en, p.zh) for p in lexicon.NAMES + lexicon.KIN + lexicon.ROLES_AS_PEOPLE]
    entries += [(form, n.zh) for n in lexicon.NOUNS for form in (n.en, n.plural, n.generic)]
    entries += [(p.en, p.zh) for p in lexicon.PLACES + lexicon.CITIES] + [(t.en, t.zh) for t in lexicon.TIMES]
    hand = {parse(line.split("\t")[0])[0] for line in DATA.read_text(encoding="utf-8").splitlines()}
    test = ROOT / "enzh" / "runtime" / "assets" / "demo" / "test.tsv"
    pairs = [line.split("\t") for line in test.read_text(encoding="utf-8").splitlines()[skip:]]
    tagged = [(en, zh, marks) for en, zh in pairs if en not in hand and len(marks := _rule_marks(en, zh, entries)) >= 2]
    outputs = Translator.load().translate([en for en, _, _ in tagged], beam_size=1)
    kept = [row for row, output in zip(tagged, outputs, strict=True) if output == row[1]][:count]
    return [f"{_tagged(en, [m[0] for m in marks])}\t{_tagged(zh, [m[1] for m in marks])}" for en, zh, marks in kept]


def _once(text: str, needle: str, word: bool) -> tuple[int, int] | None:
    pattern = rf"(?<![A-Za-z0-9']){re.escape(needle)}(?![A-Za-z0-9'])" if word else re.escape(needle)
    found = [m.span() for m in re.finditer(pattern, text)]
    return found[0] if len(found) == 1 else None


def _rule_marks(en: str, zh: str, entries: list[tuple[str, str]]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    candidates = sorted(set(entries) | {(n, n) for n in re.findall(r"\d+", en)}, key=lambda e: (-len(e[0]), e))
    marks: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for english, chinese in candidates:
        for form in dict.fromkeys((english, english[:1].upper() + english[1:])):
            source, target = _once(en, form, True), _once(zh, chinese, chinese.isdigit())
            if source is None or target is None:
                continue
            if any((a < source[1] and source[0] < b) or (c < target[1] and target[0] < d) for (a, b), (c, d) in marks):
                continue
            marks.append((source, target))
            break
    return sorted(marks)[:3]


def _tagged(text: str, spans: list[tuple[int, int]]) -> str:
    for (a, b), tag in sorted(zip(spans, "bia", strict=False), reverse=True):
        text = f"{text[:a]}<{tag}>{text[a:b]}</{tag}>{text[b:]}"
    return text


def _shown(mark: Mark) -> bool:
    """A mark of the document's own markup (not the Markdown format's invisible "line" runs)."""
    return getattr(mark.tag, "kind", None) != "line"


_FORMATS = {".md": "md", ".html": "html", ".docx": "docx", ".srt": "srt", ".vtt": "vtt"}


def realdocs(directory: Path, translator: Translator) -> None:
    """Marks that had words and lost them on every real document of ``directory``, with and without the fallback."""
    import json

    from enzh.documents.api import parse as parse_document
    from enzh.documents.inline import lost_marks
    from enzh.documents.options import DocumentOptions
    from enzh.documents.sentences import SentenceEngine
    from enzh.runtime.segment import reading

    documents: list[tuple[str, str, str | bytes]] = []
    for example in json.loads((directory / "md" / "spec_examples.json").read_text(encoding="utf-8")):
        documents.append(("md (spec examples)", "md", example["markdown"]))
    for path in sorted(directory.glob("*/*")):
        if path.suffix in _FORMATS:
            kind = _FORMATS[path.suffix]
            data = path.read_bytes() if kind == "docx" else path.read_text(encoding="utf-8-sig")
            documents.append((f"{kind} ({path.name})" if kind == "html" else kind, kind, data))
    counts: Counter[tuple[str, str]] = Counter()
    for group, kind, data in documents:
        options = DocumentOptions(format=kind, beam_size=1)
        blocks = parse_document(data, options).units.blocks
        counts[group, "files"] += 1
        for fallback in (False, True):
            engine = SentenceEngine(translator, options)
            with reading("latin"):
                results = translate_blocks(blocks, engine, fallback=fallback)
            lost = sum(1 for b, r in zip(blocks, results, strict=True) for i in lost_marks(b, r) if _shown(b.marks[i]))
            counts[group, f"lost {fallback}"] += lost
            if fallback:
                counts[group, "sentences"] += engine.translated
            else:
                counts[group, "sentences first"] += engine.translated
        counts[group, "marks"] += sum(
            1
            for b in blocks
            for m in b.marks
            if _shown(m) and getattr(m.tag, "words", True) and b.text[m.start : m.end].strip()
        )
    print("| files | documents | marks with words | emptied, no fallback | emptied, shipped | model inputs |")
    print("|---|---|---|---|---|---|")
    groups = list(dict.fromkeys(group for group, _, _ in documents))
    for group in [*groups, "all"]:
        keys = groups if group == "all" else [group]
        total = Counter({k: sum(counts[g, k] for g in keys) for k in ("files", "marks", "lost False", "lost True")})
        inputs = (
            f"{sum(counts[g, 'sentences'] for g in keys)} (without: {sum(counts[g, 'sentences first'] for g in keys)})"
        )
        share = [f"{total[k]} ({100 * total[k] / max(total['marks'], 1):.1f} %)" for k in ("lost False", "lost True")]
        print(f"| {group} | {total['files']} | {total['marks']} | {share[0]} | {share[1]} | {inputs} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: the embedded demo model)")
    parser.add_argument("--set", choices=sorted(SETS), default="demo", help="the tagged set (default: demo)")
    parser.add_argument(
        "--sweep", action="store_true", help="compare aligner layers/heads (exports assets/demo-hf; export extra)"
    )
    parser.add_argument("--realdocs", type=Path, help="count the marks emptied on the real documents of this folder")
    parser.add_argument("--build-heldout", action="store_true", help=f"write the held-out set to {HELDOUT}")
    args = parser.parse_args(argv)
    if args.build_heldout:
        lines = build_heldout()
        HELDOUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{HELDOUT}: {len(lines)} sentences")
        return 0
    if args.realdocs is not None:
        realdocs(args.realdocs, Translator.load(args.model))
        return 0
    rows = load(SETS[args.set])
    if args.sweep:
        sweep(rows)
        return 0
    engine = Engine(Translator.load(args.model))
    if not engine.translator.info.has_aligner:
        parser.error(f"{engine.translator.info.directory} has no aligner.onnx; re-export it with `enzh export`")
    alignment = Manifest.load(engine.translator.info.directory).alignment or {}
    print(
        f"{args.set}: {len(rows)} sentences, {sum(len(r[1]) for r in rows)} marks (demo model, beam 1; aligner: mean "
        f"over layers {alignment['layers']}, heads {alignment['heads']})\n"
    )
    print("| mechanism | exact | contains its words | wrong words | empty |\n|---|---|---|---|---|")
    score("proportional (the first placeholder)", rows, proportional(rows))
    off = {"fallback": False}
    score(
        "smallest unit only (`anchors=False, attention=False, fallback=False`)",
        rows,
        by_translate_blocks(rows, engine, anchors=False, attention=False, **off),
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
        score("anchors, span translated bare", rows, by_translate_blocks(rows, engine, attention=False, **off))
    finally:
        placement.anchor_input = inline.anchor_input = shipped
    score("anchors, span + `.` (`attention=False`)", rows, by_translate_blocks(rows, engine, attention=False, **off))
    score("cross-attention alone, no order/nesting constraint", rows, attention_alone(rows, engine.align))
    score(
        "cross-attention, in the placement (`anchors=False`)",
        rows,
        by_translate_blocks(rows, engine, anchors=False, **off),
    )
    score("anchors, then cross-attention (`fallback=False`)", rows, by_translate_blocks(rows, engine, **off))
    score("**anchors, cross-attention, then own words (shipped)**", rows, by_translate_blocks(rows, engine))
    by_kind(rows, engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
