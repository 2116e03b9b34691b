"""``enzh serve --api-keys``, ``--req-limit``, ``--char-limit`` and ``--cors-origins``, in-process with the fake
engine: 403 without or with a wrong key, 200 with a valid one (every way of sending it), 429 + Retry-After over
the request and the character limits, open endpoints, and keys never in the logs or the metrics."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from fake_translator import FakeTranslator, fake_translation
from server_harness import ProcessServer, in_process, metric_value

from enzh.cli.main import main
from enzh.runtime.errors import OptionsError
from enzh.serve.app import create_app
from enzh.serve.keys import KeyStore
from enzh.serve.options import ServeOptions

LIBRE = "/translate"
V1 = "/v1/translate"


@pytest.fixture
def store(tmp_path: Path) -> KeyStore:
    with KeyStore(tmp_path / "keys.db", create=True) as s:
        yield s


def keyed(store: KeyStore, **options: object) -> ServeOptions:
    return ServeOptions(api_keys=str(store.path), **options)  # type: ignore[arg-type]


def test_keys_on_a_request_needs_a_valid_key(store):
    key = store.add(name="test")
    with in_process(keyed(store), FakeTranslator()) as client:
        missing = client.post(LIBRE, json={"q": "Hello.", "source": "en", "target": "zh"})
        assert missing.status_code == 403
        assert missing.json() == {"error": "Please contact the server operator to get an API key"}
        wrong = client.post(LIBRE, json={"q": "Hello.", "source": "en", "target": "zh", "api_key": "nope"})
        assert wrong.status_code == 403 and wrong.json() == {"error": "Invalid API key"}
        empty = client.post(LIBRE, json={"q": "Hello.", "api_key": ""})
        assert empty.status_code == 403  # an empty key is no key
        ok = client.post(LIBRE, json={"q": "Hello.", "source": "en", "target": "zh", "api_key": key})
        assert ok.status_code == 200 and ok.json()["translatedText"] == fake_translation("Hello.")

        v1_missing = client.post(V1, json={"text": "Hello."})
        assert v1_missing.status_code == 403 and v1_missing.json()["error"]["code"] == "api_key_required"
        v1_wrong = client.post(V1, json={"text": "Hello."}, headers={"Authorization": "Bearer nope"})
        assert v1_wrong.status_code == 403 and v1_wrong.json()["error"] == {
            "code": "invalid_api_key",
            "message": "Invalid API key",
        }
        v1_ok = client.post(V1, json={"text": "Hello."}, headers={"Authorization": f"Bearer {key}"})
        assert v1_ok.status_code == 200 and v1_ok.json()["translations"] == [fake_translation("Hello.")]

        for path in ("/detect", "/translate_file", "/suggest"):  # refused before the route sees anything
            assert client.post(path, json={"q": "Hello."}).json() == {
                "error": "Please contact the server operator to get an API key"
            }
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "enzh_rejections_total", reason="api_key_required") == 6
        assert metric_value(metrics, "enzh_rejections_total", reason="invalid_api_key") == 2


@pytest.mark.parametrize("how", ["json api_key", "json apiKey", "form", "query", "bearer", "multipart"])
def test_every_way_of_sending_the_key(store, how):
    key = store.add()
    with in_process(keyed(store), FakeTranslator()) as client:

        def send(k: str) -> int:
            if how == "json api_key":
                return client.post(LIBRE, json={"q": "Hi.", "api_key": k}).status_code
            if how == "json apiKey":  # the npm client's spelling
                return client.post(LIBRE, json={"q": "Hi.", "apiKey": k}).status_code
            if how == "form":
                return client.post(LIBRE, data={"q": "Hi.", "api_key": k}).status_code
            if how == "query":
                return client.post(LIBRE, params={"api_key": k}, json={"q": "Hi."}).status_code
            if how == "bearer":
                return client.post(LIBRE, json={"q": "Hi."}, headers={"Authorization": f"Bearer {k}"}).status_code
            files = {"file": ("a.txt", b"Hello there.\n", "text/plain")}
            return client.post(
                "/translate_file", data={"api_key": k, "source": "en", "target": "zh"}, files=files
            ).status_code

        assert send("wrong") == 403
        assert send(key) != 403  # multipart: whatever /translate_file answers, it got past the key check


def test_open_endpoints_need_no_key(store):
    with in_process(keyed(store), FakeTranslator()) as client:
        for path in ("/languages", "/livez", "/readyz", "/metrics", "/", "/openapi.json"):
            assert client.get(path).status_code == 200, path
        assert client.get("/translate").status_code == 405  # not a POST: the router answers, not the key check


def test_a_removed_key_is_refused_at_once(store):
    key = store.add()
    with in_process(keyed(store), FakeTranslator()) as client:
        assert client.post(LIBRE, json={"q": "Hi.", "api_key": key}).status_code == 200
        store.remove(key)
        assert client.post(LIBRE, json={"q": "Hi.", "api_key": key}).status_code == 403
        fresh = store.add()  # and an added one works without a restart
        assert client.post(LIBRE, json={"q": "Hi.", "api_key": fresh}).status_code == 200


def test_request_limit_429_with_retry_after(store):
    default_key = store.add(name="default limits")
    own_key = store.add(name="own limit", req_limit=5)
    free_key = store.add(name="no limit", req_limit=0)
    with in_process(keyed(store, req_limit=3), FakeTranslator()) as client:

        def post(key: str, path: str = LIBRE) -> object:
            if path == V1:
                return client.post(V1, json={"text": "Hi."}, headers={"Authorization": f"Bearer {key}"})
            return client.post(path, json={"q": "Hi.", "api_key": key})

        assert [post(default_key).status_code for _ in range(3)] == [200] * 3
        over = post(default_key)
        assert over.status_code == 429 and over.json() == {"error": "Slowdown: 3 per 1 minute"}
        assert 1 <= int(over.headers["retry-after"]) <= 60
        v1_over = post(default_key, V1)  # the same key's window, /v1's shape
        assert v1_over.status_code == 429 and v1_over.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(v1_over.headers["retry-after"]) <= 60
        assert [post(own_key).status_code for _ in range(6)] == [200] * 5 + [429]
        assert all(post(free_key).status_code == 200 for _ in range(10))
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "enzh_rejections_total", reason="rate_limited") == 3


def test_char_limit_429_with_retry_after(store):
    key = store.add(char_limit=20)
    with in_process(keyed(store, char_limit=1000), FakeTranslator()) as client:
        assert client.post(LIBRE, json={"q": ["Hello there.", "Hi."], "api_key": key}).status_code == 200  # 15
        over = client.post(LIBRE, json={"q": "Good morning.", "api_key": key})  # 15 + 13 > 20
        assert over.status_code == 429 and over.json() == {"error": "Slowdown: 20 characters per 1 minute"}
        assert 1 <= int(over.headers["retry-after"]) <= 60
        assert client.post(LIBRE, json={"q": "Hey.", "api_key": key}).status_code == 200  # 19: still fits
        too_big = client.post(LIBRE, json={"q": "x" * 21, "api_key": key})  # could never fit: not a 429
        assert too_big.status_code == 400 and too_big.json() == {
            "error": "Invalid request: request (21) exceeds text limit (20)"
        }
        assert "retry-after" not in too_big.headers
        v1 = client.post(V1, json={"text": "x" * 21}, headers={"Authorization": f"Bearer {key}"})
        assert v1.status_code == 422 and v1.json()["error"]["code"] == "too_many_chars"


def test_a_file_counts_its_bytes_against_the_char_limit(store):
    key = store.add(char_limit=30)
    with in_process(keyed(store), FakeTranslator()) as client:
        files = {"file": ("a.txt", b"Hello there, how are you?\n", "text/plain")}  # 26 bytes
        first = client.post("/translate_file", data={"api_key": key, "source": "en", "target": "zh"}, files=files)
        assert first.status_code == 200, first.text
        over = client.post(LIBRE, json={"q": "Hello.", "api_key": key})  # 26 + 6 > 30
        assert over.status_code == 429 and "characters" in over.json()["error"]


def test_limits_without_keys_are_per_address():
    with in_process(ServeOptions(req_limit=2), FakeTranslator()) as client:
        statuses = [client.post(LIBRE, json={"q": "Hi."}).status_code for _ in range(3)]
        assert statuses == [200, 200, 429]
        assert client.post(V1, json={"text": "Hi."}).status_code == 429  # the same address, every endpoint
        assert client.get("/languages").status_code == 200
        service = client.app.state.service
        assert service.options.api_keys is None


def test_keys_are_never_logged_nor_in_the_metrics(store, caplog):
    key = store.add(req_limit=2)
    wrong = "wrong-key-0123456789abcdef"
    caplog.set_level(logging.DEBUG)  # every logger, every level
    with in_process(keyed(store), FakeTranslator()) as client:
        for k in (key, wrong):
            client.post(LIBRE, json={"q": "Hi.", "api_key": k})
            client.post(LIBRE, params={"api_key": k}, data={"q": "Hi."})
            client.post(V1, json={"text": "Hi."}, headers={"Authorization": f"Bearer {k}"})
            client.post(V1, json={"text": "Hi.", "api_key": k})  # /v1 takes no api_key field: a 422
        metrics = client.get("/metrics").text
    assert key not in metrics and wrong not in metrics
    server_side = [r for r in caplog.records if not r.name.startswith("httpx")]  # the client logs its own URLs
    assert server_side  # the capture works: the service logged its start at least
    for record in server_side:
        text = f"{record.getMessage()} {record.exc_text or ''}"
        assert key not in text and wrong not in text, record.name


def test_keys_are_not_in_the_log_of_enzh_serve(store, demo_dir):
    """The real command at --log-level debug: nothing it prints holds a key."""
    key = store.add(req_limit=1)
    server = ProcessServer(demo_dir, "--api-keys", str(store.path), "--log-level", "debug").wait_ready()
    try:
        for k in (key, "wrong-key-0123456789abcdef"):
            for _ in range(2):  # the second one with the good key: over its limit
                httpx.post(f"{server.url}{LIBRE}", params={"api_key": k}, json={"q": "Hi.", "api_key": k}, timeout=30)
                httpx.post(f"{server.url}{V1}", json={"text": "Hi."}, headers={"Authorization": f"Bearer {k}"})
        metrics = httpx.get(f"{server.url}/metrics").text
    finally:
        server.stop()
    output = server.output()
    assert "Uvicorn running" in output and "ready" in output  # the log was captured
    assert key not in output and "wrong-key-0123456789abcdef" not in output
    assert key not in metrics and 'reason="rate_limited"' in metrics


def test_cors_origins():
    with in_process(ServeOptions(), FakeTranslator()) as client:  # default: no CORS headers at all
        response = client.post(LIBRE, json={"q": "Hi."}, headers={"Origin": "https://elsewhere.example"})
        assert response.status_code == 200 and "access-control-allow-origin" not in response.headers
    with in_process(ServeOptions(cors_origins="*", req_limit=1), FakeTranslator()) as client:
        preflight = client.options(
            LIBRE,
            headers={
                "Origin": "https://elsewhere.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,authorization",
            },
        )
        assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == "*"
        origin = {"Origin": "https://elsewhere.example"}
        assert client.post(LIBRE, json={"q": "Hi."}, headers=origin).headers["access-control-allow-origin"] == "*"
        limited = client.post(LIBRE, json={"q": "Hi."}, headers=origin)  # the 429 is readable by the page too
        assert limited.status_code == 429 and limited.headers["access-control-allow-origin"] == "*"
        assert "retry-after" in limited.headers["access-control-expose-headers"].lower()
    options = ServeOptions(cors_origins="https://a.example, https://b.example")
    with in_process(options, FakeTranslator()) as client:
        allowed = client.post(LIBRE, json={"q": "Hi."}, headers={"Origin": "https://b.example"})
        assert allowed.headers["access-control-allow-origin"] == "https://b.example"
        other = client.post(LIBRE, json={"q": "Hi."}, headers={"Origin": "https://c.example"})
        assert "access-control-allow-origin" not in other.headers


def test_a_missing_store_fails_at_start(tmp_path, capsys):
    missing = str(tmp_path / "nothing.db")
    with pytest.raises(OptionsError, match="enzh keys add"):
        create_app(ServeOptions(api_keys=missing), FakeTranslator())
    assert main(["serve", "--api-keys", missing, "--port", "0"]) == 2  # before uvicorn starts
    assert "no API key store" in capsys.readouterr().err
    assert not (tmp_path / "nothing.db").exists()


def test_bodies_over_the_limit_still_get_413_with_keys_on(store):
    key = store.add()
    with in_process(keyed(store, max_body_bytes=1000), FakeTranslator()) as client:

        def chunks():  # no Content-Length: the limit is counted while the key check reads the body
            yield b'{"q": "'
            for _ in range(20):
                yield b"x" * 100
            yield b'", "api_key": "' + key.encode() + b'"}'

        response = client.post(LIBRE, content=chunks(), headers={"Content-Type": "application/json"})
        assert response.status_code == 413 and "error" in response.json()
