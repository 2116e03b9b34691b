"""``python -m enzh.tools.alignment_variants``: the rules it compares, on crafted pairs and on the demo pair."""

from __future__ import annotations

from enzh.tools.alignment_variants import grow_diag, measure, rules


def test_grow_diag_adds_neighbours_that_pair_an_unpaired_word():
    first = {(0, 0), (1, 1), (3, 0)}
    second = {(0, 0), (1, 2), (1, 1), (2, 2)}
    # (1, 2) and (2, 2) neighbour (1, 1); (1, 2) pairs target 2, unpaired, then (2, 2) source 2; (3, 0) is no neighbour
    assert grow_diag(first, second) == {(0, 0), (1, 1), (1, 2), (2, 2)}
    # final: a union pair whose two words are both unpaired; (3, 0)'s target 0 is paired, so it stays out
    assert grow_diag(first, second | {(4, 5)}, final=True) == {(0, 0), (1, 1), (1, 2), (2, 2), (4, 5)}


def test_the_kept_rule_counts_what_translators_align():
    """The last rule is the shipped one: its counts equal those of align_words(reverse=...) through the router."""
    from enzh.runtime.router import Translators
    from enzh.tools.quality_report import alignment_counts, dev_samples

    pair = Translators.load(intra_op_threads=1)
    en_zh, zh_en = pair.route("en", "zh").engine, pair.route("zh", "en").engine
    samples = dev_samples(30)
    found = measure(zh_en, en_zh, samples, english_source=False)
    assert [name for name, *_ in found] == [name for name, *_ in rules()] and found[-1][0].endswith("(kept)")
    assert tuple(found[-1][1:]) == alignment_counts(zh_en, samples, english_source=False, reverse=en_zh)
