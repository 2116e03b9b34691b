"""Helpers for the server tests: the app in-process (Starlette's TestClient, no socket), or a real uvicorn
server on 127.0.0.1 (random free port) in a thread or a process.

Imported by the tests/serve/test_server_*.py files; holds no tests and no fixtures itself.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.testclient import TestClient

from enzh.runtime.default_model import DEMO_DIR, DEMO_TEST_SET, DEMO_ZH_EN_DIR
from enzh.serve.app import create_app
from enzh.serve.options import ServeOptions
from enzh.serve.protocol import http_protocol
from enzh.serve.run import proxy_settings
from enzh.tools.server_bench import wait_ready

# Sentences from the demo model's domain (its held-out test set), for realistic mixed-length requests.
SENTENCES = [
    "The weather is nice today.",
    "I would like a cup of coffee.",
    "The meeting has been postponed.",
    "Where is the train station?",
    "My brother is taller than me.",
]


def held_out(n: int, seed: int = 0) -> list[str]:
    """``n`` English sentences of the demo model's held-out test set, drawn with ``seed``."""
    lines = DEMO_TEST_SET.read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    return [line.split("\t")[0] for line in rng.sample(lines, n)]


@contextlib.contextmanager
def in_process(options: ServeOptions, translator: Any = None, *, wait_ready: bool = True) -> Iterator[TestClient]:
    """The app without a socket: a TestClient whose lifespan (load, warm-up, stop) runs in its own thread.

    ``client.app.state.service`` is the app's Service; requests from several threads run concurrently.
    """
    with TestClient(create_app(options, translator), base_url="http://enzh.test") as client:
        if wait_ready:
            wait_ready_client(client, 120)
        yield client


def wait_ready_client(client: TestClient, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (response := client.get("/readyz")).status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError(f"not ready after {timeout} s: {response.text}")
        time.sleep(0.02)


def fire(client: TestClient, payloads: list[Any], path: str = "/v1/translate") -> list[Any]:
    """POST every payload at once (one thread each); the responses in payload order."""
    with ThreadPoolExecutor(max_workers=len(payloads)) as pool:
        return list(pool.map(lambda payload: client.post(path, json=payload), payloads))


class ThreadServer:
    """uvicorn serving ``app`` from a daemon thread on a free port of 127.0.0.1."""

    def __init__(self, app: Any, **settings: Any) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=10, **settings)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def service(self) -> Any:
        return self.app.state.service

    def start(self, *, wait_ready: bool = True, timeout: float = 120) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        if wait_ready:
            wait_ready_url(self.url, deadline - time.monotonic())
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        with contextlib.suppress(OSError):
            self.sock.close()


def wait_ready_url(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            response = httpx.get(f"{url}/readyz", timeout=5)
            if response.status_code == 200:
                return
            last = response.text
        except httpx.TransportError as exc:
            last = repr(exc)
        time.sleep(0.05)
    raise RuntimeError(f"{url} not ready after {timeout} s: {last}")


@contextlib.contextmanager
def running(options: ServeOptions, translator: Any = None, *, wait_ready: bool = True) -> Iterator[ThreadServer]:
    settings = dict(http=http_protocol(options.header_timeout_s), **proxy_settings(options))  # as `enzh serve`
    server = ThreadServer(create_app(options, translator), **settings).start(wait_ready=wait_ready)
    try:
        yield server
    finally:
        server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ProcessServer:
    """``python -m enzh -v serve`` in a subprocess (for signals: SIGTERM drain); -v: the service's log lines."""

    def __init__(self, model_dir: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "enzh", "-v", "serve", "--model", str(model_dir), "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )

    def wait_ready(self, timeout: float = 120) -> ProcessServer:
        wait_ready(self.url, self.proc, timeout, exited=lambda: f": {self.output()}")
        return self

    def output(self) -> str:
        if self.proc.poll() is None:
            return ""
        return self.proc.stdout.read() if self.proc.stdout else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def metric_value(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` (with these labels) in Prometheus text."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, label_text = head.partition("{")
        if metric != name:
            continue
        if all(f'{k}="{v}"' in label_text for k, v in labels.items()):
            total += float(value)
    return total


_TRANSLATORS: dict[str, Any] = {}


def shared_translator(model_dir: Path) -> Any:
    """One loaded Translator per model directory for the whole test session (ONNX sessions are thread-safe)."""
    from enzh.runtime.translator import Translator

    key = str(model_dir)
    if key not in _TRANSLATORS:
        _TRANSLATORS[key] = Translator.load(model_dir)
    return _TRANSLATORS[key]


def embedded_pair() -> list[Any]:
    """The embedded demo pair, loaded once per session: English->Chinese, then Chinese->English."""
    return [shared_translator(DEMO_DIR), shared_translator(DEMO_ZH_EN_DIR)]
