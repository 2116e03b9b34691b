"""Per-client request and character limits over a moving one-minute window (in memory, one per process).

A client is an API key (by its hash) or, with keys off, a client address. Every accepted request is remembered
with its time and its character count for one window; a request is accepted while the requests and the
characters of the last window, itself included, stay within the client's limits. A refusal says which limit it
hit and after how many seconds enough of the window has passed for the same request to fit (``Retry-After``);
refused requests are not counted. Clients without a request in the last window are forgotten.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_S = 60.0


@dataclass(frozen=True)
class Limits:
    """Per window; 0 = no limit."""

    requests: int = 0
    chars: int = 0

    @property
    def unlimited(self) -> bool:
        return self.requests == 0 and self.chars == 0


@dataclass(frozen=True)
class Refusal:
    """Why a request was refused. ``retry_after_s`` is 0 when waiting cannot help (``chars`` > the limit)."""

    limit: str  # "requests" or "chars"
    allowed: int  # the limit that was hit, per window
    retry_after_s: int

    @property
    def never_fits(self) -> bool:
        return self.retry_after_s == 0


class _Window:
    """One client's accepted requests of the last window: (time, characters), oldest first."""

    __slots__ = ("chars", "hits")

    def __init__(self) -> None:
        self.hits: deque[tuple[float, int]] = deque()
        self.chars = 0

    def forget_before(self, start: float) -> None:
        while self.hits and self.hits[0][0] <= start:
            self.chars -= self.hits.popleft()[1]


class Limiter:
    """``check(client, limits, chars)``: None (accepted and counted) or the :class:`Refusal`.

    ``clock``: monotonic seconds (tests pass a fake one).
    """

    def __init__(self, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.clock = clock
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()
        self._last_sweep = clock()

    def __len__(self) -> int:
        """Clients remembered now."""
        return len(self._windows)

    def check(self, client: str, limits: Limits, chars: int) -> Refusal | None:
        if limits.unlimited:
            return None
        with self._lock:
            now = self.clock()
            self._sweep(now)
            window = self._windows.get(client)
            if window is None:
                window = self._windows[client] = _Window()
            window.forget_before(now - self.window_s)
            refusal = self._refusal(window, limits, chars, now)
            if refusal is None:
                window.hits.append((now, chars))
                window.chars += chars
            elif not window.hits:
                del self._windows[client]
            return refusal

    def _refusal(self, window: _Window, limits: Limits, chars: int, now: float) -> Refusal | None:
        if limits.chars and chars > limits.chars:
            return Refusal("chars", limits.chars, 0)
        if limits.requests and len(window.hits) + 1 > limits.requests:
            # the oldest hits that must leave the window before one more request fits
            leaving = window.hits[len(window.hits) - limits.requests]
            return Refusal("requests", limits.requests, self._seconds_until(leaving[0], now))
        if limits.chars and window.chars + chars > limits.chars:
            excess = window.chars + chars - limits.chars
            for at, count in window.hits:
                excess -= count
                if excess <= 0:
                    return Refusal("chars", limits.chars, self._seconds_until(at, now))
        return None

    def _seconds_until(self, hit_time: float, now: float) -> int:
        """Whole seconds (at least 1) until a hit made at ``hit_time`` leaves the window."""
        return max(1, math.ceil(hit_time + self.window_s - now))

    def _sweep(self, now: float) -> None:
        """Forget the clients without a hit in the last window (at most once per window)."""
        if now - self._last_sweep < self.window_s:
            return
        self._last_sweep = now
        start = now - self.window_s
        for client in [c for c, w in self._windows.items() if not w.hits or w.hits[-1][0] <= start]:
            del self._windows[client]
