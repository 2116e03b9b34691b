"""Raw ASGI middleware: the body-size limit (with the drain that lets a client read its 413) and metrics.

Raw ASGI rather than Starlette's BaseHTTPMiddleware: the body limit must see the stream as it arrives, and the
metrics must see every response, including the ones the router and the body limit make themselves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from enzh.serve.errors import BodyTooLarge, error_for_path
from enzh.serve.metrics import Metrics

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# How much of an oversized body is read and thrown away around a 413. Closing a connection with unread request
# bytes makes the kernel reset it, and a reset can destroy the 413 the client has not read yet; past this many
# bytes, or when the client pauses this long, it is cut off instead (it may then see a reset, not the 413).
DRAIN_BYTES = 64 * 1024 * 1024
DRAIN_IDLE_S = 1.0


async def _drain(receive: Receive, message: Message) -> None:
    """Read and discard the rest of a request body (after ``message``) within the limits above."""
    budget = DRAIN_BYTES
    while message["type"] == "http.request" and message.get("more_body", False) and budget > 0:
        try:
            message = await asyncio.wait_for(receive(), DRAIN_IDLE_S)
        except TimeoutError:
            return
        budget -= len(message.get("body", b""))


def _request_headers(scope: Scope) -> tuple[int | None, bool]:
    """(Content-Length or None, whether the client expects ``100 Continue`` before it sends the body)."""
    declared = None
    expects_continue = False
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                declared = None
        elif name == b"expect":
            expects_continue = value.lower() == b"100-continue"
    return declared, expects_continue


class BodyLimitMiddleware:
    """413 for bodies over ``max_bytes``: from Content-Length before reading, else counted while streaming.

    The body is never buffered here; an oversized streamed body raises :class:`BodyTooLarge` from
    ``receive()`` inside the endpoint that reads it. The rest of an oversized body is read and discarded (see
    :data:`DRAIN_BYTES`) so that the client receives the 413 rather than a connection reset: after the 413 is
    written when Content-Length gave the size away, before it otherwise.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, on_reject: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared, expects_continue = _request_headers(scope)
        if declared is not None and declared > self.max_bytes:
            await self._reject_declared(scope, receive, send, expects_continue)
            return
        received = 0
        limit = self.max_bytes

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    if self.on_reject:
                        self.on_reject("body_too_large")
                    await _drain(receive, message)
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, limited_receive, send)

    async def _reject_declared(self, scope: Scope, receive: Receive, send: Send, expects_continue: bool) -> None:
        """413 from Content-Length alone, without reading the body (such a client waits: nothing to drain)."""
        if self.on_reject:
            self.on_reject("body_too_large")
        message = f"the request body is larger than {self.max_bytes} bytes"
        response = error_for_path(scope.get("path", ""), 413, "body_too_large", message)
        response.headers["connection"] = "close"
        if expects_continue:
            await response(scope, receive, send)
            return
        # The whole 413 goes out now; the response is completed (and the connection closed) only once the
        # body the client is already sending has been read and thrown away.
        await send({"type": "http.response.start", "status": 413, "headers": response.raw_headers})
        await send({"type": "http.response.body", "body": response.body, "more_body": True})
        await _drain(receive, {"type": "http.request", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class MetricsMiddleware:
    """Count every response by route and status, including those the router or the body limit made."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = path if path in self.routes else "other"
        start = time.perf_counter()
        status = 500

        async def counting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            self.metrics.requests.labels(endpoint=endpoint, status=str(status)).inc()
            self.metrics.request_seconds.labels(endpoint=endpoint).observe(time.perf_counter() - start)
