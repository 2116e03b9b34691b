"""Start-up and options, in-process: not ready until loaded and warmed up, a load failure reported (not
hidden), options validated, the limits in the OpenAPI schema, and uvicorn's worker factory."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import pytest
from server_harness import in_process, metric_value

from enzh.runtime.errors import EnzhError, OptionsError
from enzh.serve.app import app_from_env, create_app
from enzh.serve.errors import ApiError
from enzh.serve.options import ENV_OPTIONS, ServeOptions
from enzh.serve.run import APP_FACTORY
from enzh.serve.scheduler import SchedulerError
from enzh.serve.service import Service


def test_not_ready_until_loaded_and_warmed_up(demo_dir, monkeypatch):
    release = threading.Event()
    real_load = Service._load

    def slow_load(self, directory):
        release.wait(30)
        return real_load(self, directory)

    monkeypatch.setattr(Service, "_load", slow_load)
    with in_process(ServeOptions(model_dir=str(demo_dir)), wait_ready=False) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "loading"
        assert client.get("/livez").status_code == 200
        early = client.post("/v1/translate", json={"text": "Hello."})
        assert early.status_code == 503 and early.json()["error"]["code"] == "not_ready"
        release.set()
        deadline = time.monotonic() + 60
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "enzh_batch_size_count") >= 1  # the warm-up ran before ready
        translated = client.post("/v1/translate", json={"text": "The weather is nice today."}).json()
        assert translated["translations"] == ["今天天气很好。"]


def test_load_failure_is_reported_not_hidden(tmp_path):
    with in_process(ServeOptions(model_dir=str(tmp_path / "missing")), wait_ready=False) as client:
        deadline = time.monotonic() + 30
        while (ready := client.get("/readyz")).json()["status"] == "loading":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert ready.status_code == 503 and ready.json()["status"] == "load_failed"
        assert client.get("/livez").status_code == 503
        response = client.post("/v1/translate", json={"text": "Hello."})
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
        with pytest.raises(OptionsError):  # a ValueError, and an EnzhError the CLI reports in one line
            ServeOptions(**bad)
    with pytest.raises(TypeError):
        ServeOptions(1)  # type: ignore[misc]
    app = create_app(ServeOptions(max_texts_per_request=3, max_chars_per_text=7))
    schema = app.openapi()["paths"]["/v1/translate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert '"maxItems": 3' in json.dumps(schema) and '"maxLength": 7' in json.dumps(schema)


def test_the_service_errors_are_enzh_errors():
    assert issubclass(ApiError, EnzhError) and issubclass(SchedulerError, EnzhError)


def test_worker_processes_build_the_app_from_the_environment(monkeypatch):
    """``--workers N``: uvicorn imports APP_FACTORY in each process, which reads the options from ENV_OPTIONS."""
    from uvicorn.importer import import_from_string

    assert import_from_string(APP_FACTORY) is app_from_env
    options = ServeOptions(port=0, max_texts_per_request=3, default_beam_size=2, batching=False, warmup=False)
    monkeypatch.setenv(ENV_OPTIONS, json.dumps(dataclasses.asdict(options)))
    assert app_from_env().state.service.options == options
