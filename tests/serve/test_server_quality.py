"""Confidence scores and word alignments over HTTP: /v1's ``scores``/``alignments`` and the LibreTranslate
extension field ``scores`` (``translationConfidence``), with the embedded pair in-process (a stand-in where a
model without an aligner is needed)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fake_translator import FakeTranslator
from server_harness import embedded_pair, in_process

from enzh.runtime.confidence import FLAGS
from enzh.runtime.router import Translators
from enzh.runtime.words import word_spans
from enzh.serve.options import ServeOptions

TEXTS = ["The weather is nice today.", "Hello world", "今天天气很好。", "123"]
PHARAOH = re.compile(r"(\d+-\d+( \d+-\d+)*)?")


@pytest.fixture(scope="module")
def pair() -> list[Any]:
    return embedded_pair()


@pytest.fixture(scope="module")
def client(pair):
    with in_process(ServeOptions(), pair) as c:
        yield c


def test_v1_scores_and_alignments_equal_the_python_api(client, pair):
    body = client.post("/v1/translate", json={"text": TEXTS, "target": "zh-Hans", "scores": True, "alignments": True})
    assert body.status_code == 200, body.text
    answer = body.json()
    expected = Translators(pair).translate_detailed(TEXTS, target="zh-Hans", alignments=True)
    assert answer["translations"] == [t.text for t in expected]
    assert len(answer["scores"]) == len(answer["alignments"]) == len(TEXTS)
    for text, translation, score, found in zip(TEXTS, expected, answer["scores"], answer["alignments"], strict=True):
        assert translation.confidence is not None and translation.alignment is not None
        assert score == {
            "score": pytest.approx(translation.confidence.score, abs=1e-5),
            "flags": list(translation.confidence.flags),
            "low_confidence": translation.confidence.low,
        }
        assert set(score["flags"]) <= set(FLAGS)
        assert PHARAOH.fullmatch(found["pharaoh"]) and found["pharaoh"] == translation.alignment.pharaoh()
        assert found["source_words"] == [text[a:b] for a, b in word_spans(text)]
        assert found["target_words"] == [translation.text[a:b] for a, b in word_spans(translation.text)]
        for s, t in found["pairs"]:
            assert 0 <= s < len(found["source_words"]) and 0 <= t < len(found["target_words"])
    assert answer["scores"][1]["low_confidence"]  # "Hello world": out of the demo's domain
    assert answer["scores"][2] == {"score": 0.0, "flags": [], "low_confidence": False}  # already Chinese


def test_v1_without_the_fields_answers_as_before(client):
    answer = client.post("/v1/translate", json={"text": TEXTS[0]}).json()
    assert "scores" not in answer and "alignments" not in answer
    with_scores = client.post("/v1/translate", json={"text": TEXTS[0], "scores": True, "alternatives": 2}).json()
    assert with_scores["translations"] == answer["translations"] and len(with_scores["alternatives"][0]) >= 1
    assert "alignments" not in with_scores and len(with_scores["scores"]) == 1


@pytest.mark.parametrize("payload", [{"text": "Hi.", "scores": "yes"}, {"text": "Hi.", "alignments": 1}])
def test_v1_fields_are_booleans(client, payload):
    response = client.post("/v1/translate", json=payload)
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def test_v1_html_is_neither_scored_nor_aligned(client):
    payload = {"text": ["<p>Hello world</p>", "今天天气很好。"], "format": "html", "scores": True, "alignments": True}
    answer = client.post("/v1/translate", json=payload).json()
    assert answer["scores"][0] is None and answer["alignments"][0] is None
    assert answer["scores"][1] == {"score": 0.0, "flags": [], "low_confidence": False}  # answered unchanged


def test_v1_alignments_are_null_without_an_aligner_and_a_stand_in_scores_nothing():
    fake = FakeTranslator()
    with in_process(ServeOptions(warmup=False), fake) as c:
        aligned = c.post("/v1/translate", json={"text": "Hi.", "alignments": True})
        before = len(fake.batches)
        scored = c.post("/v1/translate", json={"text": "Hi.", "scores": True})
    assert len(fake.batches) == before + 1  # scores come from the shared batches (the scheduler's engine)
    assert aligned.status_code == 200 and aligned.json()["alignments"] == [None]
    assert scored.status_code == 200 and scored.json()["scores"] == [None]
    assert scored.json()["translations"] == aligned.json()["translations"] == ["HI."]


def test_libretranslate_scores_extension(client):
    one = client.post("/translate", json={"q": "Hello world", "source": "en", "target": "zh", "scores": True}).json()
    assert set(one["translationConfidence"]) == {"score", "flags", "low_confidence"}
    assert one["translationConfidence"]["low_confidence"] and "low_score" in one["translationConfidence"]["flags"]
    many = client.post("/translate", json={"q": TEXTS[:2], "source": "auto", "target": "zh", "scores": True}).json()
    assert [c["low_confidence"] for c in many["translationConfidence"]] == [False, True]
    form = client.post("/translate", data={"q": "Hello world", "target": "zh", "scores": "true"}).json()
    assert form["translationConfidence"] == one["translationConfidence"]
    plain = client.post("/translate", json={"q": "Hello world", "target": "zh"}).json()
    assert "translationConfidence" not in plain and plain["translatedText"] == one["translatedText"]
    bad = client.post("/translate", json={"q": "Hi", "target": "zh", "scores": "maybe"})
    assert bad.status_code == 400 and "scores must be true or false" in bad.json()["error"]


def test_openapi_documents_the_fields(client):
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    assert {"score", "flags", "low_confidence"} <= set(components["Score"]["properties"])
    assert {"pharaoh", "pairs", "source_words", "target_words"} <= set(components["WordPairs"]["properties"])
