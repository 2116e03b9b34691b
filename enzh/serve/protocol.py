"""uvicorn's h11 protocol with a read timeout: connections that stall before a request is in are closed.

uvicorn 0.54.0 has no timeout for reading a request: a connection that sends part of a request head (or
nothing, or a body that stops) stays open for ever, each one holding a file descriptor and a protocol object
(a "slowloris"). :class:`ReadTimeoutH11Protocol` closes a connection

* whose request head is not complete ``read_timeout_s`` after the connection opened, or after the previous
  response on a kept-alive connection (a deadline: trickling bytes does not extend it);
* whose request body has not moved for ``read_timeout_s`` while the app waits for it (reading paused by
  uvicorn's flow control, or a client waiting for ``100 Continue``, does not count).

It uses attributes of uvicorn's own class (``conn``, ``cycle``, ``flow``, ``transport``, ``loop``): private API,
hence the exact pin ``uvicorn==0.54.0`` and tests/serve/test_keys_timeouts.py. Pass :func:`http_protocol` as
uvicorn's ``http=`` (a picklable factory, so worker processes get it too).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger("enzh")


class ReadTimeoutH11Protocol(H11Protocol):
    """uvicorn's H11Protocol, closing connections that stall while sending a request (see the module)."""

    def __init__(self, *args: Any, read_timeout_s: float = 10.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout_s = read_timeout_s
        self._read_timer: asyncio.TimerHandle | None = None
        self._head_since: float | None = None  # when the wait for the current request head began
        self._last_read = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._last_read = self.loop.time()
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._last_read = self.loop.time()
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        super().connection_lost(exc)

    def _deadline(self) -> float | None:
        """When the connection is to be closed if nothing changes (None: not waiting for the client)."""
        state = self.conn.their_state
        if state is h11.IDLE:  # waiting for (the rest of) a request head
            if self._head_since is None:
                self._head_since = self.loop.time()
            return self._head_since + self.read_timeout_s
        self._head_since = None
        if state is h11.SEND_BODY:
            return self._last_read + self.read_timeout_s
        return None

    def _watch(self) -> None:
        self._cancel_timer()
        if self.transport is None or self.transport.is_closing():
            return
        deadline = self._deadline()
        if deadline is not None:
            self._read_timer = self.loop.call_at(deadline, self._timed_out)

    def _timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        deadline = self._deadline()
        if deadline is None:
            return
        if self.conn.their_state is h11.SEND_BODY and self._app_not_reading():
            self._last_read = self.loop.time()  # not the client's fault: give it a fresh period
            self._watch()
            return
        if deadline > self.loop.time():
            self._watch()
            return
        phase = "request head" if self.conn.their_state is h11.IDLE else "request body"
        logger.debug("closing a connection: its %s stalled for %s s", phase, self.read_timeout_s)
        self.transport.close()

    def _app_not_reading(self) -> bool:
        """True while the client cannot send: uvicorn paused reading, or the client awaits 100 Continue."""
        cycle = self.cycle
        return self.flow.read_paused or (cycle is not None and cycle.waiting_for_100_continue)

    def _cancel_timer(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None


def http_protocol(read_timeout_s: float) -> Callable[..., asyncio.Protocol]:
    """uvicorn's ``http=``: the protocol with this read timeout (uvicorn calls it as it would a class)."""
    return functools.partial(ReadTimeoutH11Protocol, read_timeout_s=read_timeout_s)
