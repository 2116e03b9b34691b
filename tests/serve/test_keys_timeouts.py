"""The read timeout (enzh.serve.protocol) on a real socket: stalled connections (a partial request line or head,
nothing at all, a body that stops, a kept-alive connection that stalls) are closed after ``header_timeout_s``
while real requests are served, including slow-but-moving bodies and translations longer than the timeout."""

from __future__ import annotations

import json
import logging
import pickle
import select
import socket
import time

import httpx
import uvicorn
from fake_translator import FakeTranslator, fake_translation
from server_harness import metric_value, running

from enzh.cli.main import main
from enzh.serve.keys import KeyStore
from enzh.serve.options import ServeOptions
from enzh.serve.protocol import ReadTimeoutH11Protocol

TIMEOUT_S = 1.0


def connect(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if data:
        sock.sendall(data)
    return sock


def is_closed(sock: socket.socket) -> bool:
    """True once the server closed the connection (EOF or reset); reads whatever the server sent meanwhile."""
    while select.select([sock], [], [], 0)[0]:
        try:
            if not sock.recv(65536):
                return True
        except OSError:
            return True
    return False


def wait_closed(socks: list[socket.socket], timeout: float) -> float:
    """Seconds until every socket was closed by the server (or ``timeout`` passed)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(is_closed(s) for s in socks):
            break
        time.sleep(0.05)
    return time.monotonic() - start


def test_stalled_connections_are_closed_while_real_requests_are_served(caplog):
    options = ServeOptions(header_timeout_s=TIMEOUT_S)
    with running(options, FakeTranslator()) as srv:
        port = srv.port
        start = time.monotonic()  # no connection below was opened before this
        kept_alive = []
        for _ in range(10):  # one full request, then a second one that stalls
            sock = connect(port, b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            sock.sendall(b"GET /livez HT")
            kept_alive.append(sock)
        body_head = (
            b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        )
        groups = {
            "partial request line": [connect(port, b"POST /translate HT") for _ in range(50)],
            "partial head": [connect(port, b"GET /livez HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n") for _ in range(10)],
            "nothing sent": [connect(port) for _ in range(10)],
            "body stopped": [connect(port, body_head + b'{"text": "Hel') for _ in range(10)],
            "kept alive, then stalled": kept_alive,
        }
        stalled = [s for socks in groups.values() for s in socks]
        try:
            response = httpx.post(f"{srv.url}/v1/translate", json={"text": "Hello."}, timeout=10)
            assert response.status_code == 200 and response.json()["translations"] == [fake_translation("Hello.")]
            if time.monotonic() - start < 0.8 * TIMEOUT_S:  # (a slow machine may have taken longer to get here)
                assert not any(is_closed(s) for s in stalled), "closed before the timeout"
            wait_closed(stalled, 10)
            still_open = {name: sum(not is_closed(s) for s in socks) for name, socks in groups.items()}
            assert still_open == dict.fromkeys(groups, 0)
            assert time.monotonic() - start < TIMEOUT_S + 3.0
            assert httpx.get(f"{srv.url}/livez", timeout=5).status_code == 200
        finally:
            for sock in stalled:
                sock.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors[0].getMessage()  # a body cut off by the timeout is no error of the service


def test_a_trickled_request_head_is_closed_though_bytes_keep_coming():
    """The head has a deadline, not an idle timeout: one byte now and then does not keep the connection."""
    with running(ServeOptions(header_timeout_s=TIMEOUT_S), FakeTranslator()) as srv:
        sock = connect(srv.port)
        start = time.monotonic()
        try:
            for byte in b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
                if is_closed(sock):
                    break
                try:
                    sock.sendall(bytes([byte]))
                except OSError:  # closed meanwhile
                    break
                time.sleep(0.1)
            assert is_closed(sock), "still open after 100 trickled bytes"
            assert time.monotonic() - start < TIMEOUT_S + 3.0
        finally:
            sock.close()


def test_slow_moving_bodies_and_long_translations_are_not_cut():
    """A body whose pauses are shorter than the timeout, and a request running longer than it, both get 200."""
    translator = FakeTranslator()
    with running(ServeOptions(header_timeout_s=TIMEOUT_S), translator) as srv:
        translator.delay_s = 1.5 * TIMEOUT_S  # now that the warm-up is over
        text = "Hello there."
        body = json.dumps({"text": text}).encode()
        head = (
            f"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        )
        sock = connect(srv.port, head.encode() + b"\r\nConnection: close\r\n\r\n")
        sock.settimeout(10)
        try:
            pieces = [body[i : i + 4] for i in range(0, len(body), 4)]  # 2 s of body at 0.4 s per piece
            for piece in pieces:
                time.sleep(0.4 * TIMEOUT_S)
                sock.sendall(piece)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        finally:
            sock.close()
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["translations"] == [fake_translation(text)]


def test_enzh_serve_runs_uvicorn_with_the_protocol(monkeypatch):
    """`enzh serve --header-timeout-s` reaches uvicorn's ``http=``, picklable for ``--workers`` processes."""
    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(kwargs))
    assert main(["serve", "--port", "0", "--header-timeout-s", "3.5"]) == 0
    factory = pickle.loads(pickle.dumps(calls[0]["http"]))
    assert factory.func is ReadTimeoutH11Protocol and factory.keywords == {"read_timeout_s": 3.5}


def test_a_body_cut_off_by_the_timeout_with_keys_on_is_no_error(tmp_path, caplog):
    """The key check reads bodies itself: a body the timeout cuts off is a 499 in the metrics, not an error."""
    with KeyStore(tmp_path / "keys.db", create=True) as store:
        key = store.add()
    options = ServeOptions(header_timeout_s=TIMEOUT_S, api_keys=str(tmp_path / "keys.db"))
    with running(options, FakeTranslator()) as srv:
        head = b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        sock = connect(srv.port, head + b'{"api_key": "' + key.encode())
        try:
            wait_closed([sock], 5)
            assert is_closed(sock)
        finally:
            sock.close()
        metrics = httpx.get(f"{srv.url}/metrics", timeout=5).text
    assert metric_value(metrics, "enzh_http_requests_total", endpoint="/translate", status="499") == 1
    assert metric_value(metrics, "enzh_http_requests_total", status="500") == 0
    assert key not in metrics and key not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
