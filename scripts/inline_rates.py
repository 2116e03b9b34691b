"""How often an inline tag lands on the right words: the tagged demo set, per placement mechanism (docs/html.md).

    .venv/bin/python scripts/inline_rates.py [--attention]

The set (tests/documents/data/inline_tagged_demo.tsv) holds sentences of the demo test set with <b>/<i>/<a> around
English words and, on the reference translation, around their Chinese. A mark is *exact* when its placed range
is the reference range, *contains* when its range holds the reference words (exact included), *wrong* when it
has text but not its words, *empty* when it was written with nothing inside. ``--attention`` also measures the
demo model's cross-attention (PyTorch on assets/demo-hf, forced to the ONNX output; needs the export extra).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

from enzh.documents import placement
from enzh.documents.inline import Block, Mark, translate_blocks
from enzh.runtime.translator import Translator

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "documents" / "data" / "inline_tagged_demo.tsv"
_TAG = re.compile(r"<(/?)(\w+)>")


def parse(tagged: str) -> tuple[str, dict[str, tuple[int, int]]]:
    text, spans, opened, last, length = [], {}, {}, 0, 0
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
    return [{m.tag: (m.start, m.end) for m in r.marks} for r in results]


def proportional(rows) -> list[dict[str, tuple[int, int]]]:
    """The first placeholder: offsets scaled from the source sentence to its translation."""
    out = []
    for source, marks, target, _ in rows:
        scale = len(target) / max(1, len(source))
        out.append({tag: (round(a * scale), round(b * scale)) for tag, (a, b) in marks.items()})
    return out


def attention(rows, translator: Translator) -> list[dict[str, tuple[int, int]]]:
    """Each mark on the target range with the most cross-attention mass on its source pieces (max-sum segment of
    mass - 0.4, mean over all layers and heads): an upper bound, no order or nesting constraint applied."""
    import torch
    from transformers import MarianMTModel

    model = MarianMTModel.from_pretrained(ROOT / "assets" / "demo-hf", attn_implementation="eager").eval()
    tok = translator.tokenizer
    out = []
    for source, marks, _, _ in rows:
        ids = list(translator.translate_detailed([source], beam_size=1)[0].token_ids[0])
        src_ids = tok.encode(f">>cmn_Hans<< {source}")
        with torch.no_grad():
            result = model(
                input_ids=torch.tensor([src_ids]),
                decoder_input_ids=torch.tensor([[translator.adapter.decoder_start_token_id, *ids[:-1]]]),
                output_attentions=True,
            )
        att = torch.stack(result.cross_attentions)[:, 0].mean((0, 1))[: len(ids) - 1, 1:-1]  # drop lang tag, eos
        att = (att / att.sum(1, keepdim=True)).tolist()
        pieces, cursor = [], 0
        for piece in tok.source_pieces(source):
            surface = piece.replace("\u2581", "")
            at = source.find(surface, cursor) if surface else cursor
            pieces.append((at, at + len(surface)))
            cursor = at + len(surface)
        ends = [len(tok.decode(ids[: k + 1])) for k in range(len(ids) - 1)]
        spans = [(0 if k == 0 else ends[k - 1], ends[k]) for k in range(len(ends))]
        placed = {}
        for tag, (a, b) in marks.items():
            columns = [i for i, (x, y) in enumerate(pieces) if x < b and a < y]
            scores = [
                sum(row[c] for c in columns) - 0.4 if s < e else -1.0 for row, (s, e) in zip(att, spans, strict=True)
            ]
            best, lo, hi, run, run_lo = -1e9, 0, 1, 0.0, 0
            for t, value in enumerate(scores):
                run, run_lo = (value, t) if run <= 0 else (run + value, run_lo)
                if run > best:
                    best, lo, hi = run, run_lo, t + 1
            placed[tag] = (spans[lo][0], spans[hi - 1][1])
        out.append(placed)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attention", action="store_true", help="also measure cross-attention (needs torch)")
    args = parser.parse_args(argv)
    rows = load()
    translator = Translator.load()

    def translate(texts: list[str]) -> list[str]:
        return translator.translate(texts, beam_size=1)

    print(f"{len(rows)} sentences, {sum(len(r[1]) for r in rows)} marks (demo model, beam 1)\n")
    print("| mechanism | exact | contains its words | wrong words | empty |\n|---|---|---|---|---|")
    score("proportional (the first placeholder)", rows, proportional(rows))
    score("fallback only (`anchors=False`)", rows, by_translate_blocks(rows, translate, anchors=False))
    shipped = placement.anchor_input
    placement.anchor_input = lambda s, f: None if shipped(s, f) is None else s[f.start : f.end].strip()
    try:
        import enzh.documents.inline as inline

        inline.anchor_input = placement.anchor_input
        score("anchors, span translated bare", rows, by_translate_blocks(rows, translate))
    finally:
        placement.anchor_input = inline.anchor_input = shipped
    score("anchors, span + '.' (shipped)", rows, by_translate_blocks(rows, translate))
    if args.attention:
        aligned = attention(rows, translator)
        score("cross-attention alone, no order/nesting constraint", rows, aligned)
        ranges = {
            (src, *marks[tag]): got[tag] for (src, marks, _, _), got in zip(rows, aligned, strict=True) for tag in marks
        }
        sure = placement._Solver._sure
        for anchors_first in (False, True):

            def with_attention(solver, fragment, anchor, anchors_first=anchors_first):
                found = sure(solver, fragment, anchor) if anchors_first else None
                return found or ranges.get((solver.source, fragment.start, fragment.end))

            placement._Solver._sure = with_attention  # type: ignore[method-assign]
            try:
                name = "anchors, then cross-attention" if anchors_first else "cross-attention"
                score(f"{name}, in the placement (order, nesting)", rows, by_translate_blocks(rows, translate))
            finally:
                placement._Solver._sure = sure  # type: ignore[method-assign]
    return 0


if __name__ == "__main__":
    sys.exit(main())
