"""``python -m enzh.tools.quality_report``: its statistics, its data files and how it writes docs/quality.md."""

from __future__ import annotations

import pytest

from enzh.tools.quality_report import DATA, MARK_BEGIN, MARK_END, read_sentences, report, roc_auc, write, youden


def test_roc_auc():
    assert roc_auc([0.0, -0.1], [-0.5, -0.9]) == 1.0
    assert roc_auc([-0.5, -0.9], [0.0, -0.1]) == 0.0
    assert roc_auc([-0.2], [-0.2]) == 0.5  # a tie counts half
    assert roc_auc([-0.1, -0.3], [-0.2]) == 0.5
    with pytest.raises(ValueError, match="at least one score of each kind"):
        roc_auc([], [-1.0])


def test_youden_picks_the_separating_threshold():
    inside, outside = [-0.05, -0.1, -0.12], [-0.5, -0.7, -0.3]
    best = youden([-0.01, -0.2, -0.4, -0.8], [(inside, outside)])
    assert best == -0.2


@pytest.mark.parametrize("name", ["ood_en.txt", "ood_zh.txt"])
def test_out_of_domain_sets(name):
    sentences = read_sentences(DATA / name)
    assert len(sentences) >= 200 and len(set(sentences)) == len(sentences)
    if name == "ood_zh.txt":
        assert all(any("\u4e00" <= c <= "\u9fff" for c in s) for s in sentences)


def test_write_replaces_only_the_measured_part(tmp_path):
    page = tmp_path / "quality.md"
    write(page, f"{MARK_BEGIN}\nold\n{MARK_END}")
    assert page.read_text().startswith("# ")
    page.write_text(f"intro\n\n{MARK_BEGIN}\nold\n{MARK_END}\n\nmore\n")
    write(page, f"{MARK_BEGIN}\nnew\n{MARK_END}")
    assert page.read_text() == f"intro\n\n{MARK_BEGIN}\nnew\n{MARK_END}\n\nmore\n"


def test_report_on_a_few_sentences():
    text = report(limit=30)
    assert text.startswith(MARK_BEGIN) and text.endswith(MARK_END)
    assert "| en->zh | 30 | 30 |" in text and "| zh->en | 30 | 30 |" in text
    assert "precision strict" in text and "Youden" in text


def test_dev_sentences_are_not_held_out_ones():
    from enzh.demo.corpus import DEFAULT_TEST_SEED, generate_samples
    from enzh.tools.quality_report import dev_samples

    dev = dev_samples(200)
    held_out = {s.en for s in generate_samples(1000, DEFAULT_TEST_SEED, "test", unique=True)}
    assert len(dev) == 200 and len({s.en for s in dev}) == 200 and not {s.en for s in dev} & held_out


def test_the_sweep_counts_as_the_translator_aligns():
    """The sweep re-chooses pairs from one alignment pass; at the default thresholds it counts exactly what
    translate_detailed(alignments=True[, reverse=...]) gives."""
    from enzh.runtime.router import Translators
    from enzh.runtime.words import MIN_SCORE, MIN_SCORE_AGREEMENT
    from enzh.tools.quality_report import alignment_counts, alignment_sweep, dev_samples

    pair = Translators.load(intra_op_threads=1)
    en_zh, zh_en = pair.route("en", "zh").engine, pair.route("zh", "en").engine
    samples = dev_samples(40)
    for engine, back, english in ((en_zh, zh_en, True), (zh_en, en_zh, False)):
        for reverse, threshold in ((None, MIN_SCORE), (back, MIN_SCORE_AGREEMENT)):
            (swept,) = alignment_sweep(engine, samples, english, [threshold], reverse=reverse)
            counted = alignment_counts(engine, samples, english, reverse=reverse)
            assert swept == counted and counted[0].slots >= 20
