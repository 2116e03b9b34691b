"""Language detection for /detect and source=auto: script rules first (no model), py3langid for the rest."""

from __future__ import annotations

import pytest

from enzh.serve.langid import UNKNOWN, Detector, Guess, by_script


def test_scripts_decide_without_the_model():
    detector = Detector()
    assert detector.detect("今天天氣很好。") == (Guess("zh", 100.0),)
    assert detector.detect("謝謝") == (Guess("zh", 100.0),)  # too short for n-grams, Chinese by its characters
    assert detector.detect("こんにちは、東京") == (Guess("ja", 100.0),)
    assert detector.detect("안녕하세요") == (Guess("ko", 100.0),)
    for nothing in ("", "   ", "1234", "😀 👍", "100% !!"):
        assert detector.detect(nothing) == UNKNOWN == (Guess("en", 0.0),)
    assert not detector.loaded
    assert by_script("我用iPhone拍照") is None  # Latin letters too: the model decides
    assert detector.needs_model(["今天", "Hello there"]) and not detector.needs_model(["今天", "123"])


def test_the_model_ranks_the_rest():
    detector = Detector()
    english = detector.detect("The weather is nice today.")
    assert english[0] == Guess("en", 100.0) and detector.loaded
    assert detector.detect("Bonjour, comment allez-vous?")[0].language == "fr"
    assert detector.detect("我用iPhone拍照")[0].language == "zh"
    assert detector.detect("Let's meet in 北京 tomorrow morning.")[0].language == "en"
    ranked = detector.detect("Hello world")
    assert 1 <= len(ranked) <= 3 and [g.confidence for g in ranked] == sorted(
        (g.confidence for g in ranked), reverse=True
    )
    assert all(0 < g.confidence <= 100 and g.confidence.is_integer() for g in ranked)


def test_a_list_gets_one_answer_weighted_by_length():
    detector = Detector()
    merged = detector.detect_all(["The weather is nice today and tomorrow.", "今天"])
    assert merged[0].language == "en" and {g.language for g in merged} >= {"en", "zh"}
    assert detector.detect_all(["123", "!!"]) == UNKNOWN
    assert detector.detect_all(["今天天气很好。"]) == (Guess("zh", 100.0),)


@pytest.mark.parametrize("text", ["x" * 100_000, "今" * 100_000])
def test_long_texts_are_read_from_their_start(text):
    assert Detector().detect(text)[0].confidence >= 0
