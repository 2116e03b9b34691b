"""Glossaries through the Translator on the embedded demo model: terms enforced for greedy and beam search,
batched and one by one, several and repeated terms, overlapping terms, no effect without a matching term, and
clear errors for terms the model cannot write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from enzh.runtime.glossary import Glossary, GlossaryError
from enzh.runtime.router import Translators

GLOSSARY = {"Tom": "汤马斯", "Beijing": "北京市", "Mary": "玛莉", "New York": "纽约市", "York": "约克"}
TEXTS = [
    "Tom lives in Beijing.",
    "Mary was born in Chengdu in 1985.",
    "Where is the school?",
    "Tom and Mary went to New York.",
    "Paul arrived in Guangzhou on June 14, 1991.",
    "Peter wrote seven poems last Saturday. Mary brought six pens yesterday morning.",
]


def expected_counts(text: str) -> dict[str, int]:
    glossary = Glossary.from_mapping(GLOSSARY)
    return {term.target: term.count for term in glossary.match(text)}


@pytest.mark.parametrize("beam_size", [1, 4])
def test_terms_appear_once_per_occurrence_batched_and_one_by_one(demo_translator, beam_size: int) -> None:
    batched = demo_translator.translate_detailed(TEXTS, beam_size=beam_size, glossary=GLOSSARY)
    single = [demo_translator.translate_detailed([t], beam_size=beam_size, glossary=GLOSSARY)[0] for t in TEXTS]
    assert [t.token_ids for t in batched] == [t.token_ids for t in single]
    for text, found in zip(TEXTS, batched, strict=True):
        for target, count in expected_counts(text).items():
            assert found.text.count(target) == count, (text, found.text, target)
        assert "glossary" not in found.confidence.flags
    # The model's own renderings of those words are gone (Tom: 汤姆, Mary: 玛丽), the rest is untouched.
    assert "汤姆" not in batched[0].text and "玛丽" not in batched[1].text


@pytest.mark.parametrize("beam_size", [1, 4])
def test_a_glossary_without_matching_terms_changes_nothing(demo_translator, beam_size: int) -> None:
    texts = ["Where is the school?", "Paul arrived in Guangzhou on June 14, 1991.", "This lamp is older than that one."]
    plain = demo_translator.translate_detailed(texts, beam_size=beam_size)
    held = demo_translator.translate_detailed(
        texts, beam_size=beam_size, glossary={"Shanghai": "上海市", "Tom": "汤马斯"}
    )
    assert [(t.text, t.token_ids, t.scores, t.confidence) for t in held] == [
        (t.text, t.token_ids, t.scores, t.confidence) for t in plain
    ]


def test_sentences_without_terms_keep_their_translation(demo_translator) -> None:
    # Within one text: the sentence without a term is decoded as without a glossary.
    text = "Where is the school? Tom lives in Beijing."
    plain = demo_translator.translate_detailed([text], beam_size=4)[0]
    held = demo_translator.translate_detailed([text], beam_size=4, glossary=GLOSSARY)[0]
    assert held.token_ids[0] == plain.token_ids[0]
    assert held.text.startswith("学校在哪里？") and held.text.count("北京市") == 1 and held.text.count("汤马斯") == 1


def test_repeated_terms(demo_translator) -> None:
    text = "Tom met Tom in Beijing."
    for beam_size in (1, 4):
        found = demo_translator.translate([text], beam_size=beam_size, glossary={"Tom": "汤马斯"})[0]
        assert found.count("汤马斯") == 2, found


def test_overlapping_terms_longest_wins(demo_translator) -> None:
    found = demo_translator.translate(["Tom and Mary went to New York."], beam_size=4, glossary=GLOSSARY)[0]
    assert found.count("纽约市") == 1 and "约克" not in found


def test_glossary_from_a_file_and_alternatives(demo_translator, tmp_path: Path) -> None:
    path = tmp_path / "names.tsv"
    path.write_text("# names\ntom\t汤马斯\n", encoding="utf-8")
    assert demo_translator.translate(["Tom lives in Beijing."], glossary=path) == demo_translator.translate(
        ["Tom lives in Beijing."], glossary={"Tom": "汤马斯"}
    )
    found = demo_translator.translate_detailed(["Tom lives in Beijing."], beam_size=4, alternatives=3, glossary=path)
    assert len(found[0].alternatives) == 3
    assert all(a.text.count("汤马斯") == 1 for a in found[0].alternatives)


def test_a_case_sensitive_entry_only_matches_its_case(demo_translator) -> None:
    glossary = Glossary.parse("tom\t汤马斯\tcase-sensitive\n")
    assert demo_translator.translate(["Tom lives in Beijing."], glossary=glossary) == demo_translator.translate(
        ["Tom lives in Beijing."]
    )


def test_terms_that_cannot_fit_are_flagged_and_decoding_ends(demo_translator) -> None:
    found = demo_translator.translate_detailed(
        ["Tom met Tom in Beijing."], beam_size=4, max_new_tokens=6, glossary={"Tom": "汤马斯", "Beijing": "北京市"}
    )[0]
    assert "glossary" in found.confidence.flags
    assert len(found.token_ids[0]) <= 6 and found.text.count("汤马斯") == 1


def test_a_term_the_vocabulary_cannot_write(demo_translator) -> None:
    with pytest.raises(
        GlossaryError,
        match=re.escape("glossary entry 'Tom': the model's target vocabulary cannot write '汤瑪' (no piece '瑪')"),
    ):
        demo_translator.translate(["Tom lives in Beijing."], glossary={"Tom": "汤瑪"})
    # the bad entry only matters where its term is found
    assert demo_translator.translate(["Where is the school?"], glossary={"Tom": "汤瑪"}) == ["学校在哪里？"]


def test_the_router_passes_the_glossary_to_each_direction() -> None:
    translators = Translators.load()
    found = translators.translate_detailed(
        ["Tom lives in Beijing.", "汤姆住在北京。"], glossary={"Tom": "汤马斯", "汤姆": "Thomas"}
    )
    assert found[0].text.count("汤马斯") == 1
    assert len(re.findall(r"\bThomas\b", found[1].text)) == 1


def test_a_sentence_split_into_parts_gets_its_terms_in_each_part(demo_translator) -> None:
    text = "Mary likes " + "red and " * 300 + "Mary likes blue."
    prepared = demo_translator.prepare_text(text, ">>cmn_Hans<<")
    assert [len(ids) for ids in prepared.sources[0]] == [512, 400]  # longer than the model's positions
    glossary = Glossary.from_mapping({"Mary": "玛莉"})
    constraints = demo_translator.glossary_constraints(prepared, glossary, ">>cmn_Hans<<")
    assert [[c.count for c in part] for part in constraints] == [[1], [1]]
    found = demo_translator.translate_detailed([text], glossary=glossary, max_new_tokens=40)[0]
    assert found.parts == 2 and found.text.count("玛莉") == 2
