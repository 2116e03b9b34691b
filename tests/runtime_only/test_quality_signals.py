"""Confidence scores, warning flags and word alignments (issue 27 items 2 and 3), with the runtime alone: crafted
parts for each flag, the embedded demo pair for the Python API and the router."""

from __future__ import annotations

import math
import re

import pytest

from enzh.runtime.confidence import (
    FLAGS,
    UNCHANGED,
    Confidence,
    ConfidenceOptions,
    Part,
    assess,
    copies,
    has_loop,
    text_score,
)
from enzh.runtime.default_model import default_model_dirs
from enzh.runtime.router import Translators
from enzh.runtime.translator import Translator
from enzh.runtime.words import WordAlignment, align_words, identity_alignment, word_spans

PHARAOH = re.compile(r"(\d+-\d+( \d+-\d+)*)?")
EOS, UNK = 0, 1
OPTIONS = ConfidenceOptions()
NEWS = "The central bank raised interest rates by half a percentage point on Tuesday."


@pytest.fixture(scope="module")
def pair() -> Translators:
    return Translators.load(intra_op_threads=1)


@pytest.fixture(scope="module")
def en_zh(pair: Translators) -> Translator:
    engine = pair.route("en", "zh").engine
    assert isinstance(engine, Translator)
    return engine


def _assess(parts: list[Part], source: str = "a b c d", output: str = "x", **options: object) -> Confidence:
    return assess(
        source,
        output,
        parts,
        beams=1,
        length_penalty=1.0,
        special_ids=frozenset({EOS}),
        unk_id=UNK,
        options=ConfidenceOptions(**options),  # type: ignore[arg-type]
    )


# -- the score -------------------------------------------------------------------------------------------------


def test_score_is_the_token_weighted_mean_log_probability():
    greedy = [
        Part(source_tokens=3, token_ids=(5, 6, EOS), score=-0.6),
        Part(source_tokens=1, token_ids=(7,), score=-1.0),
    ]
    assert text_score(greedy, beams=1, length_penalty=1.0) == pytest.approx(-1.6 / 4)
    # Beam scores are already divided by length ** length_penalty: the same sequences give the same text score.
    beam = [Part(source_tokens=3, token_ids=(5, 6, EOS), score=-0.2), Part(source_tokens=1, token_ids=(7,), score=-1.0)]
    assert text_score(beam, beams=4, length_penalty=1.0) == pytest.approx(-1.6 / 4)
    penalised = [Part(source_tokens=3, token_ids=(5, 6, EOS), score=-0.6 / 3**2.0)]
    assert text_score(penalised, beams=4, length_penalty=2.0) == pytest.approx(-0.6 / 3**2.0)
    assert text_score([], beams=1, length_penalty=1.0) == 0.0


def test_translate_detailed_scores_every_translation(en_zh):
    texts = ["The weather is nice today.", "Where is the school? My brother is taller than me.", "", "今天天气很好。"]
    for beam in (1, 4):
        found = en_zh.translate_detailed(texts, beam_size=beam)
        for translation in found:
            assert translation.confidence is not None
            assert translation.confidence.score <= 0
            assert set(translation.confidence.flags) <= set(FLAGS)
        one, two, blank, chinese = found
        assert blank.confidence == UNCHANGED and chinese.confidence == UNCHANGED  # nothing translated: certain
        # Two sentences: their tokens' mean, from each part's own score.
        tokens = [len(ids) for ids in two.token_ids]
        sums = [s if beam == 1 else s * n for s, n in zip(two.scores, tokens, strict=True)]
        assert two.parts == 2 and two.confidence.score == pytest.approx(sum(sums) / sum(tokens), rel=1e-6)
        if beam == 1:
            assert one.confidence.score == pytest.approx(one.scores[0] / len(one.token_ids[0]), rel=1e-6)


def test_out_of_domain_input_is_flagged_and_in_domain_is_not(en_zh):
    inside, outside = en_zh.translate_detailed(["The weather is nice today.", NEWS])
    assert inside.confidence is not None and not inside.confidence.low
    assert outside.confidence is not None and outside.confidence.low and "low_score" in outside.confidence.flags
    assert outside.confidence.score < ConfidenceOptions().threshold < inside.confidence.score
    strict = en_zh.translate_detailed(["The weather is nice today."], confidence=ConfidenceOptions(threshold=0.0))
    assert strict[0].confidence is not None and "low_score" in strict[0].confidence.flags


# -- the flags on crafted outputs -----------------------------------------------------------------------------


def test_repetition_flag():
    looped = Part(source_tokens=4, token_ids=(9, 3, 4, 3, 4, 3, 4, EOS), score=-0.1)
    assert _assess([looped]).flags == ("repetition",)
    assert has_loop([5] * 6, OPTIONS) and not has_loop([5] * 5, OPTIONS)  # one token: 6 in a row
    assert has_loop([1, 2, 3] * 3, OPTIONS) and not has_loop([1, 2, 3, 1, 2, 3, 1, 2], OPTIONS)
    assert not has_loop(list(range(30)), OPTIONS)
    assert not has_loop([], OPTIONS)


def test_length_ratio_flag():
    long_output = Part(source_tokens=4, token_ids=(*range(2, 20), EOS), score=-0.1)
    assert "length_ratio" in _assess([long_output]).flags
    short_output = Part(source_tokens=10, token_ids=(5, EOS), score=-0.1)
    assert "length_ratio" in _assess([short_output]).flags
    # Too short a source to judge by; and eos does not count.
    assert "length_ratio" not in _assess([Part(source_tokens=2, token_ids=(5, 6, 7, 8, 9, 10, 11, EOS), score=0)]).flags
    assert _assess([Part(source_tokens=4, token_ids=(5, 6, 7, EOS), score=-0.1)]).flags == ()


def test_copy_flag():
    source = "The Quarterly Report of Northwind Traders"
    assert copies(source, "the quarterly report of northwind traders", OPTIONS)
    assert "copy" in _assess([Part(source_tokens=6, token_ids=(5, 6, 7, 8, 9, EOS), score=0)], source, source).flags
    assert not copies(source, "北风贸易公司的季度报告", OPTIONS)
    assert not copies("Tom is here.", "汤姆Tom在这里。", OPTIONS)  # a copied name is not a copied text


def test_unknown_token_flag_and_order():
    part = Part(source_tokens=4, token_ids=(5, UNK, 6, 7, EOS), score=-9.0)
    found = _assess([part], threshold=-0.5)
    assert found.flags == ("low_score", "unknown_token") and found.low
    assert _assess([]) == UNCHANGED and not UNCHANGED.low


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("threshold", 0.5, "threshold must be <= 0"),
        ("repeat_min_copies", 1, "repeat_min_copies must be >= 2"),
        ("length_ratio", (2.0, 1.0), "length_ratio must be"),
        ("copy_fraction", 0.0, "copy_fraction must be in"),
    ],
)
def test_options_are_checked(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ConfidenceOptions(**{field: value})  # type: ignore[arg-type]


# -- alignments ------------------------------------------------------------------------------------------------


def test_words_as_a_reader_sees_them():
    text = "Tom's book. 我读了书。 iPhone手机"
    words = [text[a:b] for a, b in word_spans(text)]
    assert words == ["Tom's", "book.", "我", "读", "了", "书", "。", "iPhone", "手", "机"]
    assert word_spans("") == [] and word_spans("  \n ") == []
    assert identity_alignment("a b").pharaoh() == "0-0 1-1"


def _check_well_formed(source: str, target: str, alignment: WordAlignment) -> None:
    assert PHARAOH.fullmatch(alignment.pharaoh())
    assert list(alignment.pairs) == sorted(set(alignment.pairs))
    for spans, text in ((alignment.source_words, source), (alignment.target_words, target)):
        assert list(spans) == word_spans(text)
    for s, t in alignment.pairs:
        assert 0 <= s < len(alignment.source_words) and 0 <= t < len(alignment.target_words)
    for a, b in alignment.words(source, target):
        assert a.strip() == a != "" and b.strip() == b != ""


def test_alignments_are_well_formed_and_placed_in_the_whole_text(en_zh):
    texts = ["The weather is nice today.", "Where is the school?\n\nMy brother is taller than me.", NEWS]
    for beam in (1, 4):
        found = en_zh.translate_detailed(texts, beam_size=beam, alignments=True)
        for text, translation in zip(texts, found, strict=True):
            assert translation.alignment is not None
            _check_well_formed(text, translation.text, translation.alignment)
            assert translation.alignment.pairs  # the aligner pairs something in every sentence
        # The second text's second sentence pairs words of that sentence with words of its translation.
        two = found[1]
        alignment = two.alignment
        assert alignment is not None
        cut = two.text.index("\n\n")
        later = [i for i, (lo, _) in enumerate(alignment.target_words) if lo > cut]
        first_source = len(word_spans("Where is the school?"))
        assert any(s >= first_source and t in later for s, t in alignment.pairs)
        assert all((s >= first_source) == (t in later) for s, t in alignment.pairs)
    plain = en_zh.translate_detailed(texts)
    assert all(t.alignment is None for t in plain)
    assert [t.text for t in plain] == [t.text for t in found]


def test_a_slot_word_is_aligned_with_its_chinese(en_zh):
    """The demo corpus knows which Chinese a name renders to: the name's word pairs with those characters."""
    from enzh.demo.corpus import DEFAULT_TEST_SEED, generate_samples
    from enzh.demo.lexicon import Person

    samples = generate_samples(60, DEFAULT_TEST_SEED, "test", unique=True)
    found = en_zh.translate_detailed([s.en for s in samples], alignments=True)
    checked = hits = 0
    for sample, translation in zip(samples, found, strict=True):
        alignment = translation.alignment
        assert alignment is not None
        for value in sample.slots.values():
            if not isinstance(value, Person) or value.kind != "name" or " " in value.en:
                continue
            words = [i for i, (a, b) in enumerate(alignment.source_words) if sample.en[a:b].strip(".,?!'s") == value.en]
            start = translation.text.find(value.zh)
            if len(words) != 1 or start < 0:
                continue
            chars = {j for j, (a, _) in enumerate(alignment.target_words) if start <= a < start + len(value.zh)}
            checked += 1
            hits += any(s == words[0] and t in chars for s, t in alignment.pairs)
    assert checked >= 10 and hits >= 0.9 * checked, (hits, checked)


def test_the_router_aligns_and_scores_texts_returned_unchanged(pair):
    texts = ["今天天气很好。", "The weather is nice today.", "123"]
    found = pair.translate_detailed(texts, target="zh", alignments=True)
    assert found[0].text == texts[0] and found[0].confidence == UNCHANGED
    assert found[0].alignment is not None and found[0].alignment.pharaoh() == "0-0 1-1 2-2 3-3 4-4 5-5 6-6"
    assert found[1].confidence is not None and found[1].alignment is not None and found[1].alignment.pairs
    assert found[2].alignment == identity_alignment("123")
    both = pair.translate_detailed(texts, alignments=True)  # auto: the Chinese one into English
    for text, translation in zip(texts, both, strict=True):
        assert translation.alignment is not None and translation.confidence is not None
        _check_well_formed(text, translation.text, translation.alignment)


def test_align_words_rules():
    import numpy as np

    from enzh.runtime.words import SentencePair

    source, target = "a b", "x y"
    weights = np.array([[0.9, 0.1], [0.2, 0.8]])
    sentence = SentencePair(((0, 1), (2, 3)), ((0, 1), (2, 3)), weights, 0, 0)
    assert align_words(source, target, [sentence]).pairs == ((0, 0), (1, 1))
    assert align_words(source, target, [sentence], min_score=1.0).pairs == ()
    with pytest.raises(ValueError, match="min_score must be between 0 and 1"):
        align_words(source, target, [sentence], min_score=2)
    # A piece of two characters gives both its weight: both are paired.
    wide = SentencePair(((0, 1),), ((0, 2),), np.array([[1.0]]), 0, 0)
    assert align_words("a", "你好", [wide]).pairs == ((0, 0), (0, 1))
    assert math.isfinite(weights.sum())


def test_align_words_both_ways():
    """The reverse model's attention, averaged in, corrects the forward one: 罗 goes with Paul, not with here."""
    import numpy as np

    from enzh.runtime.words import SentencePair

    source, target = "Paul here", "保罗在"
    # forward: the target's characters (one piece each) on the source's words; 罗 leans to "here"
    forward = SentencePair(
        ((0, 4), (5, 9)), ((0, 1), (1, 2), (2, 3)), np.array([[0.9, 0.1], [0.4, 0.6], [0.1, 0.9]]), 0, 0
    )
    # reverse: the source's words on the target's pieces 保罗 and 在 (its spans in the target come first)
    back = SentencePair(((0, 2), (2, 3)), ((0, 4), (5, 9)), np.array([[0.95, 0.05], [0.1, 0.9]]), 0, 0)
    assert align_words(source, target, [forward]).pairs == ((0, 0), (1, 1), (1, 2))
    assert align_words(source, target, [forward], reverse=[back]).pairs == ((0, 0), (0, 1), (1, 2))
    assert align_words(source, target, [forward], reverse=[None]).pairs == ((0, 0), (1, 1), (1, 2))
    with pytest.raises(ValueError, match="1 reverse alignments for 2 sentences"):
        align_words(source, target, [forward, forward], reverse=[back])


def test_the_router_aligns_both_ways_with_the_other_model(pair, en_zh):
    """Translators hands each model the one of the other direction; one model alone aligns as before."""
    zh_en = pair.route("zh", "en").engine
    texts = ["Paul arrived in Guangzhou.", "Anna did not sing these songs this morning."]
    routed = pair.translate_detailed(texts, source="en", target="zh", alignments=True)
    both = en_zh.translate_detailed(texts, alignments=True, reverse=zh_en, reverse_target="en")
    alone = en_zh.translate_detailed(texts, alignments=True)
    assert [t.alignment for t in routed] == [t.alignment for t in both]
    assert [t.alignment for t in routed] != [t.alignment for t in alone]
    assert [t.text for t in routed] == [t.text for t in alone]  # the translations themselves are the same
    with pytest.raises(TypeError, match="reverse must be a translator"):
        en_zh.translate_detailed(texts, alignments=True, reverse="zh-en")  # type: ignore[arg-type]


def test_a_chinese_name_is_aligned_whole_into_english(pair):
    """zh->en with both models: every character of a name pairs with its English word (one model alone pairs one
    character of a two-piece name, e.g. 娜 with Anna but not 安: 1 name of 10 whole in the first 60 sentences)."""
    from enzh.demo.corpus import DEFAULT_TEST_SEED, generate_samples
    from enzh.demo.lexicon import Person

    samples = generate_samples(120, DEFAULT_TEST_SEED, "test", unique=True)
    found = pair.translate_detailed([s.zh for s in samples], source="zh", target="en", alignments=True)
    checked = whole = 0
    for sample, translation in zip(samples, found, strict=True):
        alignment = translation.alignment
        assert alignment is not None
        for value in sample.slots.values():
            if not isinstance(value, Person) or value.kind != "name" or " " in value.en:
                continue
            words = [
                i
                for i, (a, b) in enumerate(alignment.target_words)
                if translation.text[a:b].strip(".,?!'s") == value.en
            ]
            start = sample.zh.find(value.zh)
            if len(words) != 1 or start < 0 or sample.zh.find(value.zh, start + 1) >= 0:
                continue
            chars = {j for j, (a, _) in enumerate(alignment.source_words) if start <= a < start + len(value.zh)}
            checked += 1
            whole += chars <= {s for s, t in alignment.pairs if t == words[0]}
    assert checked >= 10 and whole >= 0.9 * checked, (whole, checked)


def test_alignments_take_a_bool_and_the_embedded_models_have_aligners(en_zh):
    with pytest.raises(TypeError, match="alignments must be True or False"):
        en_zh.translate_detailed(["Hi."], alignments="yes")  # type: ignore[arg-type]
    assert all(Translator.load(d).info.has_aligner for d in default_model_dirs())


def test_assess_from_hypotheses_equals_translate_detailed(en_zh):
    """What the HTTP service's batches use: a text's confidence from its inputs' hypotheses, as translate_detailed."""
    text = "Where is the school? My brother is taller than me."
    token = en_zh.resolve_target(None)
    for beam in (1, 4):
        prepared = en_zh.prepare_text(text, token)
        sources = [ids for piece in prepared.sources for ids in piece]
        hyps = en_zh.generate_ids(sources, beam_size=beam)
        outputs = iter(en_zh.decode([h.token_ids for h in hyps]))
        assembled = en_zh.assemble_text(prepared, [[next(outputs) for _ in piece] for piece in prepared.sources])
        found = en_zh.assess(prepared, assembled, [h.token_ids for h in hyps], [h.score for h in hyps], beam_size=beam)
        assert found == en_zh.translate_detailed([text], beam_size=beam)[0].confidence
    with pytest.raises(ValueError, match="assess\\(\\) got 1 outputs and 1 scores for 2 model inputs"):
        en_zh.assess(prepared, assembled, [hyps[0].token_ids], [hyps[0].score])
