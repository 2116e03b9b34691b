"""The HTTP service against a real uvicorn server on 127.0.0.1 with the demo model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import threading
import time

import httpx
import pytest
from test_server_harness import SENTENCES, metric_value, running, shared_translator

from enzh.runtime.default_model import DEMO_TEST_SET
from enzh.runtime.segment import split_sentences
from enzh.serve.app import ServeOptions, Service, create_app


@pytest.fixture(scope="module")
def demo_translator(demo_dir):
    return shared_translator(demo_dir)


@pytest.fixture(scope="module")
def server(demo_translator):
    """One real server with the default options, shared by the tests of this module."""
    with running(ServeOptions(), demo_translator) as srv:
        yield srv


def held_out(n: int, seed: int = 0) -> list[str]:
    lines = DEMO_TEST_SET.read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    return [line.split("\t")[0] for line in rng.sample(lines, n)]


def post(url: str, payload: object, path: str = "/v1/translate", **kwargs: object) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=payload, timeout=60, **kwargs)  # type: ignore[arg-type]


# -- basics ------------------------------------------------------------------------------------------------


def test_health_docs_metrics_and_page(server):
    assert httpx.get(f"{server.url}/livez").json() == {"status": "alive"}
    ready = httpx.get(f"{server.url}/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert "enzh-demo" in ready.json()["model"]
    docs = httpx.get(f"{server.url}/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    spec = httpx.get(f"{server.url}/openapi.json").json()
    assert {"/v1/translate", "/translate", "/languages", "/livez", "/readyz", "/metrics"} <= set(spec["paths"])
    body = spec["paths"]["/v1/translate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["additionalProperties"] is False and "text" in body["required"]
    metrics = httpx.get(f"{server.url}/metrics")
    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
    for name in ("enzh_queue_depth", "enzh_batch_size", "enzh_queue_wait_seconds", "enzh_inference_seconds"):
        assert name in metrics.text
    page = httpx.get(f"{server.url}/")
    assert page.status_code == 200 and "<textarea" in page.text and "v1/translate" in page.text


@pytest.mark.parametrize("beam_size", [1, 4])
def test_translate_equals_the_translator(server, demo_translator, beam_size):
    texts = ["The weather is nice today.", "I would like a cup of coffee.", "The meeting has been postponed."]
    response = post(server.url, {"text": texts, "beam_size": beam_size})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["translations"] == ["今天天气很好。", "我想要一杯咖啡。", "会议已被推迟。"]
    assert body["translations"] == demo_translator.translate(texts, beam_size=beam_size)
    assert body["beam_size"] == beam_size and body["sentences"] == 3 and body["target"] == "zh-Hans"
    assert set(body["timing_ms"]) == {"total", "queue", "inference"}
    assert body["timing_ms"]["total"] >= body["timing_ms"]["inference"] >= 0
    single = post(server.url, {"text": texts[0], "beam_size": beam_size}).json()
    assert single["translations"] == ["今天天气很好。"]


def test_default_beam_is_the_models_and_traditional_target(server, demo_translator):
    body = post(server.url, {"text": "Where is the train station?"}).json()
    assert body["beam_size"] == demo_translator.adapter.generation["num_beams"]
    hant = post(server.url, {"text": "Where is the train station?", "target": "zh-Hant", "beam_size": 1}).json()
    assert hant["target"] == "zh-Hant"
    assert hant["translations"] == demo_translator.translate(
        ["Where is the train station?"], target="zh-Hant", beam_size=1
    )


def test_documents_are_split_into_sentences_and_paragraphs_kept(server, demo_translator):
    paragraphs = [" ".join(held_out(4, seed)) for seed in range(3)]
    text = paragraphs[0] + "\n\n" + paragraphs[1] + "\r\n" + paragraphs[2] + "\n"
    body = post(server.url, {"text": text, "beam_size": 1}).json()
    expected = [
        "".join(demo_translator.translate(split_sentences(p), beam_size=1)) for p in paragraphs
    ]  # each sentence translated on its own
    assert body["translations"] == [expected[0] + "\n\n" + expected[1] + "\r\n" + expected[2] + "\n"]
    assert body["sentences"] == 12


def test_long_document_every_sentence_translated(server, demo_translator):
    sentences = held_out(120, seed=7)
    paragraphs = [" ".join(sentences[i : i + 10]) for i in range(0, 120, 10)]
    text = "\n".join(paragraphs)
    assert 3000 < len(text) <= ServeOptions().max_chars_per_text
    body = post(server.url, {"text": text, "beam_size": 1}).json()
    split = [split_sentences(p) for p in paragraphs]
    assert body["sentences"] == sum(map(len, split)) >= 120
    lines = body["translations"][0].split("\n")
    assert len(lines) == 12 and all(lines)
    assert lines == ["".join(demo_translator.translate(s, beam_size=1)) for s in split]


def test_libretranslate_compatible(server, demo_translator):
    languages = httpx.get(f"{server.url}/languages").json()
    english = next(lang for lang in languages if lang["code"] == "en")
    assert set(english["targets"]) == {"zh-Hans", "zh-Hant"}
    body = post(server.url, {"q": "The weather is nice today.", "source": "en", "target": "zh"}, "/translate").json()
    assert body == {"translatedText": demo_translator.translate(["The weather is nice today."])[0]}
    many = post(
        server.url, {"q": ["Where is the school?", "They have drunk juice."], "target": "zh-Hans"}, "/translate"
    )
    assert many.json()["translatedText"] == demo_translator.translate(
        ["Where is the school?", "They have drunk juice."]
    )
    auto = post(
        server.url, {"q": "Hello.", "source": "auto", "target": "zt", "format": "text", "api_key": ""}, "/translate"
    )
    assert auto.status_code == 200 and auto.json()["detectedLanguage"]["language"] == "en"
    form = httpx.post(
        f"{server.url}/translate", data={"q": "The weather is nice today.", "source": "en", "target": "zh-Hans"}
    )
    assert form.status_code == 200 and form.json()["translatedText"] == body["translatedText"]
    for bad in ({"q": "x", "source": "fr", "target": "zh"}, {"q": "x", "target": "de"}, {"q": "x", "format": "html"}):
        response = post(server.url, bad, "/translate")
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


# -- batching across requests -----------------------------------------------------------------------------


def _mixed_requests(n: int) -> list[dict[str, object]]:
    """n requests of very different lengths: single sentences, paragraphs, lists; beam 1 and 4."""
    rng = random.Random(64)
    pool = held_out(200, seed=3)
    requests = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            text: object = rng.choice(pool)
        elif kind == 1:
            text = " ".join(rng.sample(pool, rng.randint(2, 12)))
        elif kind == 2:
            text = "\n\n".join(" ".join(rng.sample(pool, rng.randint(1, 4))) for _ in range(rng.randint(2, 3)))
        else:
            text = [rng.choice(pool) for _ in range(rng.randint(1, 5))]
        requests.append({"text": text, "beam_size": 4 if i % 8 == 3 else 1})
    return requests


async def _fire(url: str, payloads: list[dict[str, object]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(payloads), max_keepalive_connections=len(payloads))
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        return await asyncio.gather(*(client.post("/v1/translate", json=p) for p in payloads))


def test_64_concurrent_clients_each_get_their_single_request_translation(server):
    payloads = _mixed_requests(64)
    expected = [post(server.url, p).json()["translations"] for p in payloads]  # one at a time
    before = httpx.get(f"{server.url}/metrics").text
    order = list(range(64))
    random.Random(1).shuffle(order)
    responses = asyncio.run(_fire(server.url, [payloads[i] for i in order]))
    assert [r.status_code for r in responses] == [200] * 64, [r.text for r in responses if r.status_code != 200]
    for position, i in enumerate(order):
        assert responses[position].json()["translations"] == expected[i], payloads[i]
    after = httpx.get(f"{server.url}/metrics").text
    batches = metric_value(after, "enzh_batch_size_count") - metric_value(before, "enzh_batch_size_count")
    sentences = metric_value(after, "enzh_batch_size_sum") - metric_value(before, "enzh_batch_size_sum")
    assert sentences >= 64
    assert batches < 64, "concurrent requests were not pooled into shared batches"


def test_batch_invariance_of_the_engine(demo_translator):
    """A sentence decoded in a large mixed batch equals the same sentence decoded alone."""
    service = Service(ServeOptions(), demo_translator)
    token = demo_translator.adapter.resolve_target(None)
    texts = sorted(set(held_out(48, seed=11)), key=len)
    sources = [demo_translator._encode_parts(t, token)[0] for t in texts]
    for beam in (1, 4):
        pooled = service._engine(sources, beam)
        alone = [service._engine([s], beam)[0] for s in sources]
        assert pooled == alone


# -- bad input --------------------------------------------------------------------------------------------

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
    ("unknown-field", {"text": "a", "source": "en"}, None, 422, "invalid_request"),
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
def test_bad_input_corpus(server, name, body, content_type, status, code):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {} if content_type == "" else {"content-type": content_type or "application/json"}
    response = httpx.post(f"{server.url}/v1/translate", content=raw, headers=headers, timeout=60)
    assert response.status_code == status, response.text
    payload = response.json()
    if status == OK:
        assert isinstance(payload["translations"], list)
        assert all(isinstance(t, str) for t in payload["translations"])
        response.content.decode("utf-8")  # valid UTF-8 JSON even for lone surrogates
    else:
        assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}
        assert payload["error"]["code"] == code


def test_blank_inputs_translate_to_blank(server):
    body = post(server.url, {"text": ["", "   ", "\n\n", "The weather is nice today."], "beam_size": 1}).json()
    assert body["translations"] == ["", "", "", "今天天气很好。"]


def test_libretranslate_bad_input(server):
    cases = [
        (b'{"q": 1, "target": "zh"}', "application/json", 422),
        (b'{"q": "x"', "application/json", 400),
        (b"q=%ff%fe&target=zh", "application/x-www-form-urlencoded", 400),
        (b"target=zh", "application/x-www-form-urlencoded", 422),
        (b"q=a&target=zh&alternatives=x", "application/x-www-form-urlencoded", 422),
        (b"q=\x00&target=zh", "application/x-www-form-urlencoded", 200),
        (b"q=a", "text/plain", 415),
    ]
    for raw, content_type, status in cases:
        response = httpx.post(f"{server.url}/translate", content=raw, headers={"content-type": content_type})
        assert response.status_code == status, (raw, response.text)
        assert response.json()


def _raw_request(port: int, head: bytes, body_chunks: int = 0, chunk: bytes = b"") -> bytes:
    """Send a request by hand (optionally streaming body chunks until the server answers); return the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        reply = b""
        for _ in range(body_chunks):
            with contextlib.suppress(BlockingIOError):
                reply += sock.recv(65536)
            if reply:
                break
            try:
                sock.sendall(chunk)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                break
        sock.setblocking(True)
        sock.settimeout(30)
        try:
            while b"\r\n\r\n" not in reply or len(reply) < reply.index(b"\r\n\r\n") + 10:
                data = sock.recv(65536)
                if not data:
                    break
                reply += data
        except ConnectionResetError:
            pass
        return reply


def test_50_mb_body_rejected_from_content_length_without_reading_it(server):
    head = (
        b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 52428800\r\n\r\n"
    )
    start = time.monotonic()
    reply = _raw_request(server.port, head)  # no body is sent at all: the answer comes from the header alone
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b'"body_too_large"' in reply
    assert time.monotonic() - start < 5


def test_50_mb_body_with_expect_continue_is_refused_before_it_is_sent(server):
    head = (
        b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 52428800\r\n"
        b"Expect: 100-continue\r\n\r\n"
    )
    reply = _raw_request(server.port, head)  # the client waits for "100 Continue", which must not come
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b'"body_too_large"' in reply


def test_50_mb_chunked_body_rejected_while_streaming(server):
    head = (
        b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    piece = b"a" * 65536
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
    reply = _raw_request(server.port, head + b'5\r\n{"q":\r\n', body_chunks=800, chunk=chunk)  # 50 MB offered
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_50_mb_body_with_httpx(server):
    body = b'{"text": "' + b"a" * (50 * 1024 * 1024) + b'"}'
    response = httpx.post(f"{server.url}/v1/translate", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.json()["error"]["code"] == "body_too_large"

    def stream():
        for i in range(0, len(body), 1 << 16):
            yield body[i : i + (1 << 16)]

    response = httpx.post(f"{server.url}/v1/translate", content=stream(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.json()["error"]["code"] == "body_too_large"


def test_unknown_paths_and_methods_are_json(server):
    missing = httpx.get(f"{server.url}/nope")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong = httpx.delete(f"{server.url}/v1/translate")
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"
    assert "POST" in wrong.headers["allow"]


def test_server_still_serves_after_the_corpus_and_counts_rejections(server):
    assert post(server.url, {"text": "The weather is nice today.", "beam_size": 1}).json()["translations"] == [
        "今天天气很好。"
    ]
    metrics = httpx.get(f"{server.url}/metrics").text
    assert metric_value(metrics, "enzh_rejections_total", reason="body_too_large") >= 1
    assert metric_value(metrics, "enzh_rejections_total", reason="invalid_json") >= 1
    assert metric_value(metrics, "enzh_http_requests_total", status="500") == 0
    assert metric_value(metrics, "enzh_worker_alive") == 1


# -- overload, deadline, disconnect, failures ----------------------------------------------------------------


def test_overload_answers_429_with_retry_after_and_no_5xx(demo_translator):
    options = ServeOptions(max_queue_size=4, max_queue_delay_ms=20)
    payload = {"text": " ".join(SENTENCES[:2]), "beam_size": 4}
    with running(options, demo_translator) as srv:
        responses = asyncio.run(_fire(srv.url, [payload] * 48))
        statuses = [r.status_code for r in responses]
        assert set(statuses) <= {200, 429}, statuses
        assert statuses.count(429) >= 1 and statuses.count(200) >= 1
        for r in responses:
            if r.status_code == 429:
                assert int(r.headers["retry-after"]) >= 1
                assert r.json()["error"]["code"] == "queue_full"
        ok = {json.dumps(r.json()["translations"]) for r in responses if r.status_code == 200}
        assert len(ok) == 1  # every admitted request got the same, right answer
        metrics = httpx.get(f"{srv.url}/metrics").text
        assert metric_value(metrics, "enzh_rejections_total", reason="queue_full") == statuses.count(429)
        assert post(srv.url, payload).status_code == 200


def test_deadline_answers_504_and_drops_queued_work(demo_translator):
    options = ServeOptions(request_timeout_s=0.2, max_batch_tokens=64)
    text = " ".join(held_out(120, seed=5))  # far more than 0.2 s of work at beam 4 in small batches
    with running(options, demo_translator) as srv:
        response = post(srv.url, {"text": text, "beam_size": 4})
        assert response.status_code == 504 and response.json()["error"]["code"] == "timeout"
        metrics = httpx.get(f"{srv.url}/metrics").text
        assert metric_value(metrics, "enzh_dropped_sentences_total") > 0
        deadline = time.monotonic() + 30
        while srv.service.scheduler.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.service.scheduler.queued_units == 0
        assert post(srv.url, {"text": "Hello.", "beam_size": 1}).status_code == 200


def test_client_disconnect_drops_its_queued_work(demo_translator):
    options = ServeOptions(max_batch_tokens=64)
    long_text = " ".join(held_out(40, seed=9))
    with running(options, demo_translator) as srv:

        async def scenario() -> int:
            async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
                first = asyncio.create_task(client.post("/v1/translate", json={"text": long_text, "beam_size": 4}))
                await asyncio.sleep(0.1)
                async with httpx.AsyncClient(base_url=srv.url, timeout=0.3) as impatient:
                    with pytest.raises(httpx.ReadTimeout):  # queued behind `first`: leaves while still queued
                        await impatient.post(
                            "/v1/translate", json={"text": long_text + " " + long_text, "beam_size": 4}
                        )
                return (await first).status_code

        assert asyncio.run(scenario()) == 200
        metrics = httpx.get(f"{srv.url}/metrics").text
        assert metric_value(metrics, "enzh_rejections_total", reason="client_gone") == 1
        assert metric_value(metrics, "enzh_dropped_sentences_total") > 0


def test_engine_error_fails_only_its_request(demo_translator):
    with running(ServeOptions(max_queue_delay_ms=50), demo_translator) as srv:
        scheduler = srv.service.scheduler
        real = scheduler.engine
        poison = demo_translator._encode_parts("Poison pill.", demo_translator.adapter.resolve_target(None))[0]

        def engine(sources, beam):
            if poison in sources:
                raise ValueError("boom")
            return real(sources, beam)

        scheduler.engine = engine
        payloads = [{"text": "Poison pill.", "beam_size": 1}] + [{"text": s, "beam_size": 1} for s in SENTENCES]
        responses = asyncio.run(_fire(srv.url, payloads))
        assert responses[0].status_code == 500 and responses[0].json()["error"]["code"] == "internal_error"
        assert [r.status_code for r in responses[1:]] == [200] * len(SENTENCES)
        assert httpx.get(f"{srv.url}/readyz").status_code == 200


class Fatal(BaseException):
    pass


def test_dead_worker_flips_readiness(demo_translator):
    with running(ServeOptions(), demo_translator) as srv:

        def engine(sources, beam):
            raise Fatal()

        srv.service.scheduler.engine = engine
        response = post(srv.url, {"text": "The weather is nice today.", "beam_size": 1})
        assert response.status_code == 503 and response.json()["error"]["code"] == "worker_dead"
        ready = httpx.get(f"{srv.url}/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "worker_dead"
        assert httpx.get(f"{srv.url}/livez").status_code == 503
        again = post(srv.url, {"text": "Hello.", "beam_size": 1})
        assert again.status_code == 503 and again.headers["retry-after"]
        assert metric_value(httpx.get(f"{srv.url}/metrics").text, "enzh_worker_alive") == 0


def test_not_ready_until_loaded_and_warmed_up(demo_dir, monkeypatch):
    release = threading.Event()
    real_load = Service._load

    def slow_load(self):
        release.wait(30)
        return real_load(self)

    monkeypatch.setattr(Service, "_load", slow_load)
    with running(ServeOptions(model_dir=str(demo_dir)), wait_ready=False) as srv:
        ready = httpx.get(f"{srv.url}/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "loading"
        assert httpx.get(f"{srv.url}/livez").status_code == 200
        early = post(srv.url, {"text": "Hello."})
        assert early.status_code == 503 and early.json()["error"]["code"] == "not_ready"
        release.set()
        deadline = time.monotonic() + 60
        while httpx.get(f"{srv.url}/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        metrics = httpx.get(f"{srv.url}/metrics").text
        assert metric_value(metrics, "enzh_batch_size_count") >= 1  # the warm-up ran before ready
        assert post(srv.url, {"text": "The weather is nice today."}).json()["translations"] == ["今天天气很好。"]


def test_load_failure_is_reported_not_hidden(tmp_path):
    with running(ServeOptions(model_dir=str(tmp_path / "missing")), wait_ready=False) as srv:
        deadline = time.monotonic() + 30
        while (ready := httpx.get(f"{srv.url}/readyz")).json()["status"] == "loading":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert ready.status_code == 503 and ready.json()["status"] == "load_failed"
        assert httpx.get(f"{srv.url}/livez").status_code == 503
        response = post(srv.url, {"text": "Hello."})
        assert response.status_code == 503 and response.json()["error"]["code"] == "load_failed"


def test_serve_options_are_validated():
    for bad in (
        {"max_body_bytes": 0},
        {"max_queue_size": -1},
        {"request_timeout_s": 0},
        {"max_queue_delay_ms": float("nan")},
        {"port": 70000},
        {"default_beam_size": 9, "max_beam_size": 8},
    ):
        with pytest.raises(ValueError):
            ServeOptions(**bad)
    with pytest.raises(TypeError):
        ServeOptions(1)  # type: ignore[misc]
    app = create_app(ServeOptions(max_texts_per_request=3, max_chars_per_text=7))
    schema = app.openapi()["paths"]["/v1/translate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert '"maxItems": 3' in json.dumps(schema) and '"maxLength": 7' in json.dumps(schema)


def test_cli_has_serve():
    from enzh.cli.main import build_parser

    args = build_parser().parse_args(["serve", "--port", "0", "--max-batch-tokens", "512", "--no-batching"])
    from enzh.serve.app import options_from_args

    options = options_from_args(args)
    assert options.port == 0 and options.max_batch_tokens == 512 and options.batching is False


def test_load_benchmark_reports_without_asserting_timings(server):
    from enzh.tools.server_bench import HEADER, measure, single_latencies

    single = single_latencies(server.url, 1, n=3)
    result = measure(server.url, "dynamic batching", 4, 1.0, 1, single)
    assert result.requests > 0 and result.errors == 0 and result.sentences >= result.requests
    assert result.row().count("|") == HEADER.splitlines()[0].count("|")
