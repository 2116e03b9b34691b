"""Tag placement on the demo model: the tagged test set (tests/documents/data/inline_tagged_demo.tsv, 44 sentences
of the demo test set with 84 <b>/<i>/<a> marks around words whose Chinese is in the reference). docs/html.md
reports these rates (scripts/inline_rates.py); the test keeps them from getting worse. The sentences go through
the document path's sentence translator, whose ``align`` uses the demo model's aligner graph."""

from __future__ import annotations

from pathlib import Path

import pytest

from enzh.documents.inline import Block, Mark, translate_blocks
from enzh.documents.options import DocumentOptions
from enzh.documents.sentences import SentenceEngine
from enzh.runtime.translator import Translator
from enzh.tools.inline_rates import parse  # the tagged set's format, shared with the rates report

DATA = Path(__file__).parent / "data" / "inline_tagged_demo.tsv"


@pytest.fixture(scope="module")
def translate():
    return SentenceEngine(Translator.load(), DocumentOptions(format="html", beam_size=1))


def test_tagged_set_rates(translate):
    rows = [line.split("\t") for line in DATA.read_text(encoding="utf-8").splitlines()]
    sources = [parse(en) for en, _ in rows]
    targets = [parse(zh.strip()) for _, zh in rows]
    blocks = [Block(text, tuple(Mark(a, b, name) for name, (a, b) in spans.items())) for text, spans in sources]
    counts = dict.fromkeys(("marks", "exact", "contains", "wrong", "empty", "sure", "sure_exact"), 0)
    counts.update(aligned=0, aligned_exact=0)
    for result, (zh, gold) in zip(translate_blocks(blocks, translate), targets, strict=True):
        assert result.text == zh  # the demo model gives the reference for every sentence of the set
        for mark, kind in zip(result.marks, result.placement, strict=True):
            a, b = gold[mark.tag]
            counts["marks"] += 1
            counts["exact"] += (mark.start, mark.end) == (a, b)
            counts["contains"] += mark.start <= a and b <= mark.end
            counts["empty"] += mark.start == mark.end
            counts["wrong"] += mark.start < mark.end and not (mark.start <= a and b <= mark.end)
            counts["sure"] += kind == "sure"
            counts["sure_exact"] += kind == "sure" and (mark.start, mark.end) == (a, b)
            counts["aligned"] += kind == "aligned"
            counts["aligned_exact"] += kind == "aligned" and (mark.start, mark.end) == (a, b)
    assert counts["marks"] == 84
    # measured (docs/html.md): exact 50, contains its words 58, on wrong words 6, empty 20; sure 19 of 20 exact,
    # aligned 31 of 40 (without the aligner: exact 20, contains 53, wrong 2)
    assert counts["exact"] >= 50 and counts["contains"] >= 58, counts
    assert counts["wrong"] <= 6, counts
    assert counts["sure_exact"] >= 0.9 * counts["sure"], counts
    assert counts["aligned_exact"] >= 0.75 * counts["aligned"], counts


def test_demo_sentences_placed_on_their_words(translate):
    text = "He ordered six cups of coffee last year. They are buying that bottle of beer now."
    marks = (Mark(11, 29, "b"), Mark(57, 76, "a"), Mark(72, 76, "i"))
    [result] = translate_blocks([Block(text, marks)], translate)
    assert result.text == "他去年点了六杯咖啡。他们现在在买那瓶啤酒。"
    # the nested <i> (beer) is on its own words by attention (it wrapped the unit 那瓶啤酒 without the aligner)
    assert [result.text[m.start : m.end] for m in result.marks] == ["六杯咖啡", "那瓶啤酒", "啤酒"]
    assert result.placement == ("sure", "sure", "aligned")
