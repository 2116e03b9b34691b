"""Overload (429), the deadline (504), a client that leaves, a failing engine and a dead worker, with a fake
engine whose batches take as long as each test needs; in-process, except the disconnect (a real socket)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from fake_translator import FakeTranslator, fake_translation
from server_harness import SENTENCES, fire, held_out, in_process, metric_value, running

from enzh.serve.options import ServeOptions


def test_overload_answers_429_with_retry_after_and_no_5xx():
    options = ServeOptions(max_queue_size=4, max_queue_delay_ms=20)
    payload = {"text": " ".join(SENTENCES[:2]), "beam_size": 4}
    with in_process(options, FakeTranslator(delay_s=0.1)) as client:
        responses = fire(client, [payload] * 48)
        statuses = [r.status_code for r in responses]
        assert set(statuses) <= {200, 429}, statuses
        assert statuses.count(429) >= 1 and statuses.count(200) >= 1
        for r in responses:
            if r.status_code == 429:
                assert int(r.headers["retry-after"]) >= 1
                assert r.json()["error"]["code"] == "queue_full"
        ok = {json.dumps(r.json()["translations"]) for r in responses if r.status_code == 200}
        assert ok == {json.dumps([" ".join(fake_translation(s) for s in SENTENCES[:2])])}  # all the same, right answer
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "enzh_rejections_total", reason="queue_full") == statuses.count(429)
        assert client.post("/v1/translate", json=payload).status_code == 200


def test_deadline_answers_504_and_drops_queued_work():
    options = ServeOptions(request_timeout_s=0.2, max_batch_tokens=64)
    text = " ".join(held_out(120, seed=5))  # 120 batches of one sentence, 20 ms each: far more than 0.2 s
    with in_process(options, FakeTranslator(delay_s=0.02)) as client:
        response = client.post("/v1/translate", json={"text": text, "beam_size": 4})
        assert response.status_code == 504 and response.json()["error"]["code"] == "timeout"
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "enzh_dropped_sentences_total") > 0
        scheduler = client.app.state.service.scheduler
        deadline = time.monotonic() + 30
        while scheduler.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        assert scheduler.queued_units == 0
        assert client.post("/v1/translate", json={"text": "Hello.", "beam_size": 1}).status_code == 200


def test_client_disconnect_drops_its_queued_work():
    """A real socket: the disconnect is uvicorn's ``http.disconnect`` when the client closes its connection."""
    options = ServeOptions(max_batch_tokens=64)
    long_text = " ".join(held_out(40, seed=9))
    with running(options, FakeTranslator(delay_s=0.05)) as srv:

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


def test_engine_error_fails_only_its_request():
    fake = FakeTranslator()
    with in_process(ServeOptions(max_queue_delay_ms=50), fake) as client:
        scheduler = client.app.state.service.scheduler
        real = scheduler.engine
        poison = fake.encode("Poison pill.", fake.resolve_target(None))[0]

        def engine(sources, beam, target=None):
            if poison in sources:
                raise ValueError("boom")
            return real(sources, beam, target)

        scheduler.engine = engine
        payloads = [{"text": "Poison pill.", "beam_size": 1}] + [{"text": s, "beam_size": 1} for s in SENTENCES]
        responses = fire(client, payloads)
        assert responses[0].status_code == 500 and responses[0].json()["error"]["code"] == "internal_error"
        assert [r.status_code for r in responses[1:]] == [200] * len(SENTENCES)
        assert [r.json()["translations"] for r in responses[1:]] == [[fake_translation(s)] for s in SENTENCES]
        assert client.get("/readyz").status_code == 200


class Fatal(BaseException):
    pass


def test_dead_worker_flips_readiness():
    with in_process(ServeOptions(), FakeTranslator()) as client:

        def engine(sources, beam, target=None):
            raise Fatal()

        client.app.state.service.scheduler.engine = engine
        response = client.post("/v1/translate", json={"text": "The weather is nice today.", "beam_size": 1})
        assert response.status_code == 503 and response.json()["error"]["code"] == "worker_dead"
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "worker_dead"
        assert client.get("/livez").status_code == 503
        again = client.post("/v1/translate", json={"text": "Hello.", "beam_size": 1})
        assert again.status_code == 503 and again.headers["retry-after"]
        assert metric_value(client.get("/metrics").text, "enzh_worker_alive") == 0
