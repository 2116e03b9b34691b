"""413 for oversized bodies, over a real socket (the client must receive the 413, not a connection reset):
from Content-Length without reading the body, with ``Expect: 100-continue``, and counted while streaming."""

from __future__ import annotations

import contextlib
import socket
import time

import httpx
import pytest
from fake_translator import FakeTranslator
from server_harness import running

from enzh.serve.options import ServeOptions


@pytest.fixture(scope="module")
def server():
    """A real server (the HTTP layer only: a fake engine), shared by the tests of this module."""
    with running(ServeOptions(), FakeTranslator()) as srv:
        yield srv


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
