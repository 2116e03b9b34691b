"""The soak tool's mix of requests (enzh.tools.soak), briefly, against a real server with stand-in models and the
limit checks on: every kind gets the answer it must (no 5xx, the hostile ones refused), and the drift arithmetic.
The soak itself (an hour, RSS over time) is run by hand: docs/server.md "Soak"."""

from __future__ import annotations

import os
from collections import Counter

from fake_translator import FakeTranslator, FakeZhEnTranslator
from server_harness import running

from enzh.serve.options import ServeOptions
from enzh.tools.soak import Sample, drift, rss_mib, run_soak

EXPECTED = {
    "v1": {200},
    "v1 html list": {200},
    "libre json": {200},
    "libre form auto": {200},
    "libre zh->en": {200},
    "alternatives": {200},
    "detect": {200},
    "file + download": {200},
    "bad json": {400, 422},
    "over limits": {422},
    "body too large": {413, -1},  # -1: the connection closed after the 413, before the client read it
    "broken multipart": {400},
    "hostile files": {400},
    "leaves mid-body": {0},
    "reads": {200},
}


def test_every_kind_of_soak_request_gets_its_answer():
    options = ServeOptions(char_limit=10**9, req_limit=10**9, max_body_bytes=1 << 20)
    with running(options, [FakeTranslator(), FakeZhEnTranslator()]) as server:
        samples, statuses, failures = run_soak(server.url, os.getpid(), 120.0, 2, 1.0, options.max_body_bytes, rounds=1)
        assert failures == []
        seen: dict[str, set[int]] = {}
        for key, count in Counter(statuses).items():
            kind, status = key.rsplit(" ", 1)
            seen.setdefault(kind, set()).add(int(status))
            assert count > 0
        assert sum(statuses.values()) == 2 * len(EXPECTED)  # one round each
        assert set(seen) == set(EXPECTED)
        for kind, statuses_seen in seen.items():
            assert statuses_seen <= EXPECTED[kind], (kind, statuses_seen)
        assert server.service.in_flight == 0
    assert len(samples) >= 2 and all(s.rss_mib > 0 for s in samples)


def test_drift_compares_the_medians_after_the_warm_up():
    rss = [100, 150, 200, 200, 202, 198, 200, 204, 206, 210, 208]
    samples = [Sample(t_s=10.0 * i, rss_mib=m, requests=i) for i, m in enumerate(rss)]
    baseline, final, percent = drift(samples, warmup_s=20)  # from 200 on: 9 samples, windows of 1
    assert (baseline, final) == (200, 208) and round(percent, 6) == 4.0
    assert drift(samples, warmup_s=10_000)[0] == 125  # nothing after the warm-up: all 11, windows of 2
    assert rss_mib(os.getpid()) > 1
