"""The HTTP API with the demo model, in-process (no socket): both protocols, health, docs, metrics, the page,
sentence and paragraph handling, and 64 concurrent clients pooled into shared batches."""

from __future__ import annotations

import asyncio
import os
import random
import sys
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fake_translator import FakeTranslator
from server_harness import SENTENCES, fire, held_out, in_process, metric_value, running
from starlette.testclient import TestClient

from enzh.runtime.errors import OptionsError
from enzh.runtime.segment import split_sentences
from enzh.serve.options import ServeOptions
from enzh.serve.scheduler import SchedulerOptions
from enzh.serve.service import Service
from enzh.tools.server_bench import Result, pair_table


@pytest.fixture(scope="module")
def client(demo_translator):
    """The app with the default options, shared by the tests of this module."""
    with in_process(ServeOptions(), demo_translator) as c:
        yield c


def post(client: TestClient, payload: object, path: str = "/v1/translate") -> Any:
    return client.post(path, json=payload)


# -- basics ------------------------------------------------------------------------------------------------


def test_health_docs_metrics_and_page(client):
    assert client.get("/livez").json() == {"status": "alive"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert "enzh-demo" in ready.json()["model"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    spec = client.get("/openapi.json").json()
    assert {"/v1/translate", "/translate", "/languages", "/livez", "/readyz", "/metrics"} <= set(spec["paths"])
    body = spec["paths"]["/v1/translate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["additionalProperties"] is False and "text" in body["required"]
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
    for name in ("enzh_queue_depth", "enzh_batch_size", "enzh_queue_wait_seconds", "enzh_inference_seconds"):
        assert name in metrics.text
    page = client.get("/")
    assert page.status_code == 200 and "<textarea" in page.text and "static/app.js" in page.text
    script = client.get("/static/app.js")
    assert script.status_code == 200 and "frontend/settings" in script.text


@pytest.mark.parametrize("beam_size", [1, 4])
def test_translate_equals_the_translator(client, demo_translator, beam_size):
    texts = ["The weather is nice today.", "I would like a cup of coffee.", "The meeting has been postponed."]
    response = post(client, {"text": texts, "beam_size": beam_size})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["translations"] == ["今天天气很好。", "我想要一杯咖啡。", "会议已被推迟。"]
    assert body["translations"] == demo_translator.translate(texts, beam_size=beam_size)
    assert body["beam_size"] == beam_size and body["sentences"] == 3 and body["target"] == "zh-Hans"
    assert set(body["timing_ms"]) == {"total", "queue", "inference"}
    assert body["timing_ms"]["total"] >= body["timing_ms"]["inference"] >= 0
    single = post(client, {"text": texts[0], "beam_size": beam_size}).json()
    assert single["translations"] == ["今天天气很好。"]


def test_default_beam_is_the_models_and_traditional_target(client, demo_translator):
    body = post(client, {"text": "Where is the train station?"}).json()
    assert body["beam_size"] == demo_translator.info.default_beam_size
    hant = post(client, {"text": "Where is the train station?", "target": "zh-Hant", "beam_size": 1}).json()
    assert hant["target"] == "zh-Hant"
    assert hant["translations"] == demo_translator.translate(
        ["Where is the train station?"], target="zh-Hant", beam_size=1
    )


def test_documents_are_split_into_sentences_and_paragraphs_kept(client, demo_translator):
    paragraphs = [" ".join(held_out(4, seed)) for seed in range(3)]
    text = paragraphs[0] + "\n\n" + paragraphs[1] + "\r\n" + paragraphs[2] + "\n"
    body = post(client, {"text": text, "beam_size": 1}).json()
    expected = [
        "".join(demo_translator.translate(split_sentences(p), beam_size=1)) for p in paragraphs
    ]  # each sentence translated on its own
    assert body["translations"] == [expected[0] + "\n\n" + expected[1] + "\r\n" + expected[2] + "\n"]
    assert body["sentences"] == 12


def test_long_document_every_sentence_translated(client, demo_translator):
    sentences = held_out(120, seed=7)
    paragraphs = [" ".join(sentences[i : i + 10]) for i in range(0, 120, 10)]
    text = "\n".join(paragraphs)
    assert 3000 < len(text) <= ServeOptions().max_chars_per_text
    body = post(client, {"text": text, "beam_size": 1}).json()
    split = [split_sentences(p) for p in paragraphs]
    # 120 held-out sentences; nupunkt keeps one "... 11:20 a.m. Where ...?" pair together (docs/segmentation.md).
    assert body["sentences"] == sum(map(len, split)) == 119
    lines = body["translations"][0].split("\n")
    assert len(lines) == 12 and all(lines)
    assert lines == ["".join(demo_translator.translate(s, beam_size=1)) for s in split]


def test_blank_inputs_translate_to_blank(client):
    body = post(client, {"text": ["", "   ", "\n\n", "The weather is nice today."], "beam_size": 1}).json()
    assert body["translations"] == ["", "   ", "\n\n", "今天天气很好。"]  # blank text comes back as sent


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


def test_64_concurrent_clients_each_get_their_single_request_translation(client):
    payloads = _mixed_requests(64)
    expected = [post(client, p).json()["translations"] for p in payloads]  # one at a time
    before = client.get("/metrics").text
    order = list(range(64))
    random.Random(1).shuffle(order)
    responses = fire(client, [payloads[i] for i in order])
    assert [r.status_code for r in responses] == [200] * 64, [r.text for r in responses if r.status_code != 200]
    for position, i in enumerate(order):
        assert responses[position].json()["translations"] == expected[i], payloads[i]
    after = client.get("/metrics").text
    batches = metric_value(after, "enzh_batch_size_count") - metric_value(before, "enzh_batch_size_count")
    sentences = metric_value(after, "enzh_batch_size_sum") - metric_value(before, "enzh_batch_size_sum")
    assert sentences >= 64
    # (a batch is a decoder step in continuous batching: steps shared by several sentences)
    assert sentences / batches >= 4, "concurrent requests were not pooled into shared batches"


def test_batch_invariance_of_the_engine(demo_translator):
    """A sentence decoded in a large mixed batch equals the same sentence decoded alone."""
    service = Service(ServeOptions(), demo_translator)
    token = demo_translator.resolve_target(None)
    texts = sorted(set(held_out(48, seed=11)), key=len)
    sources = [ids for t in texts for piece in demo_translator.prepare_text(t, token).sources for ids in piece]
    assert len(sources) == len(texts)
    for beam in (1, 4):
        pooled = service._engine(sources, beam)
        alone = [service._engine([s], beam)[0] for s in sources]
        assert pooled == alone


def test_the_service_hands_pythons_lock_over_sooner_while_it_runs(demo_translator):
    service = Service(ServeOptions(gil_switch_ms=2.5, warmup=False), demo_translator)
    before = sys.getswitchinterval()

    async def run() -> float:
        await service.start()
        during = sys.getswitchinterval()
        await service.stop()
        return during

    assert asyncio.run(run()) == 0.0025 and sys.getswitchinterval() == before
    for bad in (0, -1.0, 1001, "1"):
        with pytest.raises(
            OptionsError, match=rf"gil_switch_ms must be a number of milliseconds in \(0, 1000\], got {bad!r}"
        ):
            ServeOptions(gil_switch_ms=bad)  # type: ignore[arg-type]


def _scheduler_options(engine, options: ServeOptions) -> SchedulerOptions:
    """The scheduler options a service of ``engine`` starts its model with."""
    service = Service(options, engine)

    async def run() -> SchedulerOptions:
        await service.start()
        try:
            (model,) = service.models
            assert model.scheduler is not None
            return model.scheduler.options
        finally:
            await service.stop()

    return asyncio.run(run())


def test_continuous_batching_runs_fewer_beam_rows_for_a_large_vocabulary(demo_translator):
    large = FakeTranslator()
    large.info = replace(large.info, scored_tokens=65_001)  # opus-mt-en-zh's vocabulary
    rows = {}
    for name, engine, options in (
        ("demo", demo_translator, ServeOptions(warmup=False)),
        ("large", large, ServeOptions(warmup=False)),
        ("large, --max-beam-rows 100", large, ServeOptions(warmup=False, max_beam_rows=100)),
    ):
        found = _scheduler_options(engine, options)
        rows[name] = (found.max_running_rows, found.max_beam_rows)
    assert demo_translator.info.scored_tokens == 1_834
    assert rows == {"demo": (256, 256), "large": (256, 64), "large, --max-beam-rows 100": (256, 100)}


def test_a_model_of_one_decode_shard_gets_two_main_lanes_on_two_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    one_shard = FakeTranslator()
    # (what an int8 model's Translator says; a stand-in has no running decodes)
    one_shard.running_lanes = 1  # type: ignore[attr-defined]
    lanes = {
        name: _scheduler_options(engine, options).lanes
        for name, engine, options in (
            ("stand-in", FakeTranslator(), ServeOptions(warmup=False)),
            ("one shard", one_shard, ServeOptions(warmup=False)),
            ("one shard, --main-lanes 1", one_shard, ServeOptions(warmup=False, main_lanes=1)),
            ("one shard, --threads 1", one_shard, ServeOptions(warmup=False, threads=1)),
        )
    }
    assert lanes == {"stand-in": 1, "one shard": 2, "one shard, --main-lanes 1": 1, "one shard, --threads 1": 1}


# -- the load benchmark, against a real server ----------------------------------------------------------------


def test_load_benchmark_reports_without_asserting_timings(demo_translator):
    from enzh.tools.server_bench import HEADER, measure, one_sentence_alone, single_latencies, workload

    with running(ServeOptions(), demo_translator) as server:
        single = single_latencies(server.url, 1, n=3)
        alone = one_sentence_alone(server.url, 1, times=1, lengths="mixed")
        # every distinct one-sentence request of the workload, timed alone
        assert set(alone) == {r for r in workload(lengths="mixed") if r.sentences == 1}
        # (the server runs in this process: /proc's count of its CPU and os.times() agree to a clock tick or two)
        result = measure(
            server.url, "dynamic batching", 4, 1.0, 1, single, lengths="mixed", one_alone=alone, server_pid=os.getpid()
        )
        assert result.client_cpu_s > 0 and result.server_cpu_s == pytest.approx(result.client_cpu_s, abs=0.021)
        assert result.requests > 0 and result.errors == 0 and result.sentences >= result.requests
        assert result.row().count("|") == HEADER.splitlines()[0].count("|")
        assert result.one_slowdown_p99 > 0  # a number (NaN compares False) when one-sentence requests ran
        assert httpx.post(f"{server.url}/v1/translate", json={"text": SENTENCES[0]}).status_code == 200


def test_load_benchmark_row_marks_cells_without_samples():
    # Every one-sentence request timed out: its cells say so instead of printing "nan".
    result = Result("single", 64, 10.0, 20, 90, 52, {"200": 20, "504": 52}, 1053.0, 12944.0, 28521.0, 29481.0, 278.0)
    assert result.row() == (
        "| single | 64 | 2.0 | 9.0 | 12944 | 28521 | 29481 | 1053 | 28.0x | 278 | — | — | — | — | 52 | — | — | — |"
    )


def _bench_result(mode: str, round_no: int, sentences: int, one_p99_ms: float, slowdown: float) -> Result:
    return Result(
        mode,
        16,
        10.0,
        sentences // 4,
        sentences,
        0,
        {"200": sentences // 4},
        20.0,
        100.0,
        200.0,
        300.0,
        one_alone_ms=10.0,
        one_p50_ms=15.0,
        one_p99_ms=one_p99_ms,
        one_slowdown_p99=slowdown,
        round_no=round_no,
    )


def test_load_benchmark_pairs_continuous_and_dynamic_round_by_round():
    results = [
        _bench_result("continuous batching", 1, 5000, 40.0, 3.0),
        _bench_result("dynamic batching", 1, 4000, 150.0, 12.0),
        _bench_result("one request at a time", 1, 1000, 400.0, 30.0),
        _bench_result("dynamic batching", 2, 5000, 160.0, 13.0),
        _bench_result("continuous batching", 2, 5000, 60.0, 4.0),
        _bench_result("continuous batching", 3, 6000, 50.0, 3.5),
        _bench_result("dynamic batching", 3, 4000, 170.0, 14.0),
    ]
    assert pair_table(results).splitlines()[2:] == [
        "| 16 | 1 | 500.0 | 400.0 | 1.25x | 4.0x | 15.0x | 3.0x | 12.0x |",
        "| 16 | 2 | 500.0 | 500.0 | 1.00x | 6.0x | 16.0x | 4.0x | 13.0x |",
        "| 16 | 3 | 600.0 | 400.0 | 1.50x | 5.0x | 17.0x | 3.5x | 14.0x |",
        "| 16 | median | 500.0 | 400.0 | 1.25x | 5.0x | 16.0x | 3.5x | 13.0x |",
    ]
    # without both modes there is nothing to pair
    assert pair_table([r for r in results if r.mode != "dynamic batching"]) == ""


def test_load_benchmark_passes_server_flags_to_the_servers_it_starts(monkeypatch, capsys):
    from enzh.tools import server_bench

    started: list[list[str]] = []

    class Refused(Exception):
        pass

    class NoServer:
        def __init__(self, extra: list[str]) -> None:
            started.append(extra)
            raise Refused

    monkeypatch.setattr(server_bench, "_Server", NoServer)
    with pytest.raises(Refused):
        server_bench.main(["--modes", "continuous", "--server-flags=--express-rows 0 --gather-units 16"])
    assert started == [
        ["--threads", "0", "--express-rows", "0", "--gather-units", "16", "--batching-mode", "continuous"]
    ]
    # a server given by its URL runs as it was started: the flags would be ignored, so they are refused
    with pytest.raises(SystemExit) as exit_info:
        server_bench.main(["--url", "http://127.0.0.1:1", "--server-flags=--express-rows 0"])
    assert exit_info.value.code == 2
    assert "--server-flags sets up the servers started here" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        server_bench.main(["--server-flags=--glossary 'a b"])
    assert '--server-flags: No closing quotation in "--glossary \'a b"' in capsys.readouterr().err
