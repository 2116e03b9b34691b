"""Tag placement on the demo model: the tagged test sets (tests/documents/data/inline_tagged_demo.tsv, 44 sentences
of the demo test set with 84 <b>/<i>/<a> marks tagged by hand around words whose Chinese is in the reference;
inline_tagged_heldout.tsv, 50 other sentences with 117 marks tagged by rule, never tuned on). docs/html.md
reports these rates (scripts/inline_rates.py); the tests keep them from getting worse. The sentences go through
the document path's sentence translator, whose ``align`` uses the demo model's aligner graph."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from enzh.documents.inline import Block, Mark, translate_blocks
from enzh.documents.options import DocumentOptions
from enzh.documents.sentences import SentenceEngine
from enzh.runtime.translator import Translator
from enzh.tools.inline_rates import judge, load  # the tagged sets' format and verdicts, shared with the report

DATA = Path(__file__).parent / "data" / "inline_tagged_demo.tsv"
HELDOUT = Path(__file__).parent / "data" / "inline_tagged_heldout.tsv"


@pytest.fixture(scope="module")
def translate():
    return SentenceEngine(Translator.load(), DocumentOptions(format="html", beam_size=1))


def _rates(path: Path, translate, **options) -> Counter[str]:
    """The tagged set of ``path`` placed by translate_blocks: marks, exact, contains, wrong, empty, and per
    placement kind (enzh.tools.inline_rates.judge: by range on the reference, by words on a sentence the fallback
    translated in parts)."""
    rows = load(path)
    blocks = [Block(text, tuple(Mark(a, b, name) for name, (a, b) in spans.items())) for text, spans, _, _ in rows]
    counts: Counter[str] = Counter()
    for result, (_, _, zh, gold) in zip(translate_blocks(blocks, translate, **options), rows, strict=True):
        counts["changed"] += result.text != zh
        for mark, kind in zip(result.marks, result.placement, strict=True):
            verdict = judge(zh, gold[mark.tag], result.text, (mark.start, mark.end))
            counts["marks"] += 1
            counts[f"kind_{kind}"] += 1
            counts.update(key for key, value in verdict.items() if value)
            counts.update(f"{kind}_{key}" for key, value in verdict.items() if value)
    return counts


def test_tagged_set_rates_without_the_fallback(translate):
    counts = _rates(DATA, translate, fallback=False)
    assert counts["marks"] == 84 and counts["changed"] == 0  # the demo model gives the reference for every sentence
    # measured (docs/html.md): exact 50, contains its words 58, on wrong words 6, empty 20; sure 19 of 20 exact,
    # aligned 31 of 40 (without the aligner: exact 20, contains 53, wrong 2)
    assert counts["exact"] >= 50 and counts["contains"] >= 58, counts
    assert counts["wrong"] <= 6 and counts["empty"] == 20, counts
    assert counts["sure_exact"] >= 0.9 * counts["kind_sure"], counts
    assert counts["aligned_exact"] >= 0.75 * counts["kind_aligned"], counts


def test_tagged_sets_rates_shipped(translate):
    # measured (docs/html.md): no mark loses its words. Hand-tagged set: exact 50 of 84, contains 74, wrong 10; the
    # held-out set (tagged by rule, never tuned on): exact 74 of 117, contains 116, wrong 1.
    demo = _rates(DATA, translate)
    assert demo["marks"] == 84 and demo["empty"] == 0 and demo["kind_own"] == 30, demo
    assert demo["exact"] >= 50 and demo["contains"] >= 74 and demo["wrong"] <= 10, demo
    heldout = _rates(HELDOUT, translate)
    assert heldout["marks"] == 117 and heldout["empty"] == 0, heldout
    assert heldout["exact"] >= 74 and heldout["contains"] >= 116 and heldout["wrong"] <= 1, heldout


def test_demo_sentences_placed_on_their_words(translate):
    text = "He ordered six cups of coffee last year. They are buying that bottle of beer now."
    marks = (Mark(11, 29, "b"), Mark(57, 76, "a"), Mark(72, 76, "i"))
    [result] = translate_blocks([Block(text, marks)], translate)
    assert result.text == "他去年点了六杯咖啡。他们现在在买那瓶啤酒。"
    # the nested <i> (beer) is on its own words by attention (it wrapped the unit 那瓶啤酒 without the aligner)
    assert [result.text[m.start : m.end] for m in result.marks] == ["六杯咖啡", "那瓶啤酒", "啤酒"]
    assert result.placement == ("sure", "sure", "aligned")
