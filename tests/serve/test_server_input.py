"""Bad input, in-process with the demo model: a 45-case corpus, unknown paths and methods. Bad input never gets
a 5xx, and every error is JSON ``{"error": {"code", "message"}}`` (the LibreTranslate API's: test_libre_api.py)."""

from __future__ import annotations

import json

import pytest
from fake_translator import FakeTranslator
from server_harness import in_process, metric_value, shared_translator

from enzh.serve.options import ServeOptions


@pytest.fixture(scope="module")
def client(demo_dir):
    """The demo model (not a fake): OK cases go through the real tokenizer, whatever bytes they hold."""
    with in_process(ServeOptions(), shared_translator(demo_dir)) as c:
        yield c


OK = 200
BAD_INPUT = [
    # (name, raw body, content type, expected status, expected error code)
    ("empty", {"text": ""}, None, OK, None),
    ("whitespace", {"text": " \t\n  \r\n "}, None, OK, None),
    ("empty-list", {"text": []}, None, OK, None),
    ("too-long", {"text": "a" * 100_000}, None, 422, "text_too_long"),
    ("too-many", {"text": ["a"] * 65}, None, 422, "too_many_texts"),
    ("request-too-long", {"text": ["word " * 1999] * 6}, None, 422, "request_too_long"),
    ("nul", {"text": "The weather\u0000 is nice today.\u0000"}, None, OK, None),
    ("only-nul", {"text": "\u0000\u0000"}, None, OK, None),
    ("lone-surrogate", b'{"text": "\\ud800"}', None, OK, None),
    ("lone-surrogate-mid", b'{"text": ["a \\udfff b.", "\\ud83d"]}', None, OK, None),
    ("emoji", {"text": "I would like a cup of coffee. \U0001f600\u2615\U0001f1e8\U0001f1f3"}, None, OK, None),
    ("rtl", {"text": "\u0645\u0631\u062d\u0628\u0627 \u202eThe meeting has been postponed.\u202c"}, None, OK, None),
    ("zero-width", {"text": "\u200bWhere\u200c is\u200d the\ufeff train station?\u2060"}, None, OK, None),
    ("numbers", {"text": "12345 67.89 -0.5 1e10"}, None, OK, None),
    ("urls", {"text": "https://example.com/a?b=c&d=e#f http://127.0.0.1:8000/"}, None, OK, None),
    ("punctuation", {"text": "?!?!...,,,;;--()[]{}\"'"}, None, OK, None),
    ("language-token", {"text": ">>cmn_Hant<< >>xx<< Hello."}, None, OK, None),
    ("control-chars", {"text": "\x01\x02\x1b[31mred\x7f\u0085\u2028\u2029"}, None, OK, None),
    ("text-int", {"text": 5}, None, 422, "invalid_request"),
    ("text-null", {"text": None}, None, 422, "invalid_request"),
    ("text-object", {"text": {"a": 1}}, None, 422, "invalid_request"),
    ("list-with-int", {"text": ["a", 3]}, None, 422, "invalid_request"),
    ("nested-list", {"text": [["a"]]}, None, 422, "invalid_request"),
    ("missing-text", {"target": "zh-Hans"}, None, 422, "invalid_request"),
    ("unknown-field", {"text": "a", "source_lang": "en"}, None, 422, "invalid_request"),
    ("beam-string", {"text": "a", "beam_size": "4"}, None, 422, "invalid_request"),
    ("beam-bool", {"text": "a", "beam_size": True}, None, 422, "invalid_request"),
    ("beam-float", {"text": "a", "beam_size": 2.5}, None, 422, "invalid_request"),
    ("beam-zero", {"text": "a", "beam_size": 0}, None, 422, "invalid_request"),
    ("beam-huge", {"text": "a", "beam_size": 10**30}, None, 422, "invalid_request"),
    ("target-unknown", {"text": "a", "target": "fr"}, None, 422, "invalid_request"),
    ("top-level-list", [], None, 422, "invalid_request"),
    ("top-level-string", "text", None, 422, "invalid_request"),
    ("top-level-null", None, None, 422, "invalid_request"),
    ("invalid-json", b'{"text": "a"', None, 400, "invalid_json"),
    ("trailing-garbage", b'{"text": "a"} x', None, 400, "invalid_json"),
    ("not-utf8", b'{"text": "\xff\xfe"}', None, 400, "invalid_json"),
    ("empty-body", b"", None, 400, "invalid_json"),
    ("nan", b'{"text": "a", "beam_size": NaN}', None, 422, "invalid_request"),
    ("deep-nesting", b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", None, 400, "invalid_json"),
    ("text-plain", b'{"text": "a"}', "text/plain", 415, "unsupported_media_type"),
    ("no-content-type", b'{"text": "a"}', "", 415, "unsupported_media_type"),
    ("form-on-v1", b"text=a", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
    ("multipart", b"--x\r\n\r\na\r\n--x--", "multipart/form-data; boundary=x", 415, "unsupported_media_type"),
    ("json-charset", b'{"text": "Hello."}', "application/json; charset=utf-8", OK, None),
]


@pytest.mark.parametrize(("name", "body", "content_type", "status", "code"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_corpus(client, name, body, content_type, status, code):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {} if content_type == "" else {"content-type": content_type or "application/json"}
    response = client.post("/v1/translate", content=raw, headers=headers)
    assert response.status_code == status, response.text
    payload = response.json()
    if status == OK:
        assert isinstance(payload["translations"], list)
        assert all(isinstance(t, str) for t in payload["translations"])
        response.content.decode("utf-8")  # valid UTF-8 JSON even for lone surrogates
    else:
        assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}
        assert payload["error"]["code"] == code


def test_unknown_paths_and_methods_are_json():
    with in_process(ServeOptions(), FakeTranslator()) as client:
        missing = client.get("/nope")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        wrong = client.delete("/v1/translate")
        assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"
        assert "POST" in wrong.headers["allow"]


def test_server_still_serves_after_the_corpus_and_counts_rejections(client):
    # Rejections of its own, so that the counts hold whichever corpus cases ran in this process before.
    too_large = client.post("/v1/translate", content=b"a" * (ServeOptions().max_body_bytes + 1))
    assert too_large.status_code == 413 and too_large.json()["error"]["code"] == "body_too_large"
    assert (
        client.post("/v1/translate", content=b'{"text": "a"', headers={"content-type": "application/json"}).status_code
        == 400
    )
    assert client.post("/v1/translate", json={"text": "The weather is nice today.", "beam_size": 1}).json()[
        "translations"
    ] == ["今天天气很好。"]
    metrics = client.get("/metrics").text
    assert metric_value(metrics, "enzh_rejections_total", reason="body_too_large") >= 1
    assert metric_value(metrics, "enzh_rejections_total", reason="invalid_json") >= 1
    assert metric_value(metrics, "enzh_http_requests_total", status="500") == 0
    assert metric_value(metrics, "enzh_worker_alive") == 1
