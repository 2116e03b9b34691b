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
