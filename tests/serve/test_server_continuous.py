"""Continuous batching in the service (issue 28) and work that stops when its client leaves (issue 26 item 3).

The demo model, in-process (TestClient) except where a real socket is needed for a disconnect. Every answer under
concurrent load equals the answer to the same request alone; a request arriving while a long one decodes joins
it and is answered first; a request whose deadline passes or whose client leaves has its running rows dropped.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time

import httpx
import pytest
from server_harness import fire, held_out, in_process, metric_value, running

from enzh.serve.options import ServeOptions


def _texts(count: int, seed: int) -> list[str]:
    """Requests of 1 to 5 held-out sentences, some of them long (three held-out sentences joined into one)."""
    rng = random.Random(seed)
    pool = held_out(60, seed=seed)
    texts = []
    for _ in range(count):
        sentences = []
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.25:
                sentences.append(", and ".join(s.rstrip(".?!") for s in rng.sample(pool, 3)) + ".")
            else:
                sentences.append(rng.choice(pool))
        texts.append(" ".join(sentences))
    return texts


def _long_text(sentences: int, seed: int) -> str:
    pool = held_out(60, seed=seed)
    rng = random.Random(seed)
    return " ".join(", and ".join(s.rstrip(".?!") for s in rng.sample(pool, 4)) + "." for _ in range(sentences))


def test_concurrent_mixed_requests_get_their_answers_alone(demo_translator):
    texts = _texts(24, seed=1)
    beams = [1, 4, 1, 2] * 6
    with in_process(ServeOptions(), demo_translator) as client:
        scheduler = client.app.state.service.scheduler
        assert scheduler.options.mode == "continuous" and scheduler.running is not None
        answers = fire(client, [{"text": t, "beam_size": b} for t, b in zip(texts, beams, strict=True)])
        assert all(a.status_code == 200 for a in answers)
        got = [a.json()["translations"][0] for a in answers]
        # the decodes ran (one per beam size) and are empty again
        decodes = {key: d for lane in scheduler._lanes for key, d in lane.decodes.items() if d is not None}
        assert {key[0] for key in decodes} == {1, 2, 4}
        assert not scheduler.busy
    expected = [demo_translator.translate([t], beam_size=b)[0] for t, b in zip(texts, beams, strict=True)]
    assert got == expected


def test_the_old_pooling_is_an_option(demo_translator):
    texts = _texts(8, seed=2)
    for mode in ("dynamic", "single"):
        with in_process(ServeOptions(batching_mode=mode), demo_translator) as client:
            scheduler = client.app.state.service.scheduler
            assert scheduler.options.mode == mode and scheduler.running is None
            answers = fire(client, [{"text": t, "beam_size": 1} for t in texts])
            assert [a.json()["translations"][0] for a in answers] == demo_translator.translate(texts, beam_size=1)
    with pytest.raises(ValueError, match="batching_mode must be one of continuous, dynamic, single, got 'x'"):
        ServeOptions(batching_mode="x")


@pytest.mark.parametrize("express_rows", [8, 0])
def test_a_request_arriving_mid_decode_joins_and_leaves_first(demo_translator, express_rows):
    """The short request takes the express lane (or, without one, joins the running decode of the main lanes)."""
    long_text = _long_text(16, seed=3)
    short = held_out(1, seed=4)[0]
    with in_process(ServeOptions(express_rows=express_rows), demo_translator) as client:
        scheduler = client.app.state.service.scheduler
        assert len(scheduler._main) == demo_translator.running_lanes
        joined: list[tuple[bool, int]] = []  # (express lane?, units) of every join from now on
        join = scheduler._join

        def spy(lane, units) -> None:
            joined.append((lane.express, len(units)))
            join(lane, units)

        scheduler._join = spy
        finished: dict[str, float] = {}
        answers: dict[str, httpx.Response] = {}

        def post(name: str, text: str) -> None:
            answers[name] = client.post("/v1/translate", json={"text": text, "beam_size": 4})
            finished[name] = time.monotonic()

        first = threading.Thread(target=post, args=("long", long_text))
        first.start()
        deadline = time.monotonic() + 30
        while not scheduler._in_flight() and time.monotonic() < deadline:  # the long request is decoding
            time.sleep(0.002)
        assert scheduler._in_flight()
        post("short", short)
        assert "long" not in finished  # answered while the long request still decodes
        first.join(60)
        assert finished["short"] < finished["long"]
        assert sum(n for express, n in joined if express) == (1 if express_rows else 0)
        assert sum(n for express, n in joined if not express) > 10  # (the long request's sentences)
    assert answers["short"].json()["translations"] == demo_translator.translate([short], beam_size=4)
    assert answers["long"].json()["translations"] == demo_translator.translate([long_text], beam_size=4)


def _count_steps(scheduler, pause_s: float = 0.0) -> list[float]:
    """The times of the scheduler's decoder steps from now on (its observer's batch hook, kept).

    ``pause_s`` holds each step that long: a decode that must outlast a deadline does on any machine (600 sentences
    take 1.5 s on a fast one, more than a 2 s deadline on a slow or busy one)."""
    steps: list[float] = []
    observe = scheduler.observer.batch

    def batch(units: int, tokens: int, seconds: float) -> None:
        steps.append(time.monotonic())
        time.sleep(pause_s)
        observe(units, tokens, seconds)

    scheduler.observer.batch = batch
    return steps


def _settled(scheduler, since: float, steps: list[float]) -> int:
    """Wait until the scheduler is idle; the decoder steps it took after ``since``."""
    deadline = time.monotonic() + 60
    while scheduler.busy and time.monotonic() < deadline:
        time.sleep(0.005)
    assert not scheduler.busy, (len(scheduler._queue), len(scheduler._running), scheduler._in_flight())
    return len([t for t in steps if t > since])


def test_a_deadline_drops_the_running_rows(demo_translator):
    """The request times out while its sentences decode: they leave the running decode at the next step (not
    when the decode would have ended: hundreds of sentences were still to go), and the next request is served."""
    options = ServeOptions(request_timeout_s=2.0)
    with in_process(options, demo_translator) as client:
        scheduler = client.app.state.service.scheduler
        steps = _count_steps(scheduler, pause_s=0.05)
        pool = held_out(600, seed=5)
        texts = [" ".join(pool[i : i + 40]) for i in range(0, 600, 40)]
        response = client.post("/v1/translate", json={"text": texts, "beam_size": 4})
        assert response.status_code == 504 and response.json()["error"]["code"] == "timeout"
        assert steps  # it was decoding
        assert _settled(scheduler, time.monotonic(), steps) <= len(scheduler._main)  # (each main lane's step under way)
        assert all(d is None or d.running.rows == 0 for lane in scheduler._lanes for d in lane.decodes.values())
        assert metric_value(client.get("/metrics").text, "enzh_dropped_sentences_total") > 0
        short = held_out(1, seed=6)[0]
        answer = client.post("/v1/translate", json={"text": short, "beam_size": 4})
        assert answer.json()["translations"] == demo_translator.translate([short], beam_size=4)


def test_an_upload_stops_when_its_client_leaves(demo_translator):
    """Issue 26 item 3: a long .txt to /translate_file, its client gone after three seconds: the sentences queued and
    running for it are dropped at the next step and nothing more is translated (before, the document's chunks
    went on for nobody); a client that waits still gets its file."""
    pool = held_out(40, seed=7)
    lines = [f"{pool[i % len(pool)].rstrip('.?!')}, {i} times." for i in range(3000)]
    document = ("\n".join(lines) + "\n").encode()
    with running(ServeOptions(), demo_translator) as srv:
        scheduler = srv.service.scheduler
        steps = _count_steps(scheduler, pause_s=0.02)

        async def leave() -> None:
            async with httpx.AsyncClient(base_url=srv.url, timeout=3.0) as client:
                with pytest.raises(httpx.ReadTimeout):
                    await client.post(
                        "/translate_file", files={"file": ("long.txt", document)}, data={"source": "en", "target": "zh"}
                    )

        asyncio.run(leave())
        gone = time.monotonic()
        assert steps  # it was translating when the client left
        # (the disconnect reaches the server a moment after the client closes: a few steps of each lane at most)
        assert _settled(scheduler, gone, steps) <= 5 * len(scheduler._main)
        idle = time.monotonic()
        time.sleep(1.0)
        assert [t for t in steps if t > idle] == []  # no further chunk: nothing translated for nobody
        metrics = httpx.get(f"{srv.url}/metrics").text
        assert metric_value(metrics, "enzh_rejections_total", reason="client_gone") == 1
        small = "\n".join(pool[:3]) + "\n"
        answer = httpx.post(
            f"{srv.url}/translate_file",
            files={"file": ("small.txt", small.encode())},
            data={"source": "en", "target": "zh"},
        )
        download = httpx.get(answer.json()["translatedFileUrl"])
        assert download.text == "\n".join(demo_translator.translate(pool[:3])) + "\n"
