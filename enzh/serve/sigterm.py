"""SIGTERM drain: flip readiness, refuse new work, let in-flight work finish, then hand the signal on."""

from __future__ import annotations

import asyncio
import signal
import threading
from types import FrameType

from enzh.serve.service import Service


def install_sigterm(service: Service, loop: asyncio.AbstractEventLoop) -> None:
    """Drain ``service`` on SIGTERM, then pass the signal to the previous handler (uvicorn's).

    Only from the main thread (signal handlers live there); a second SIGTERM stops at once.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def hand_on(sig: int, frame: FrameType | None) -> None:
        if callable(previous):
            previous(sig, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    def on_sigterm(sig: int, frame: FrameType | None) -> None:
        if service.draining:  # a second SIGTERM: stop now
            hand_on(sig, frame)
            return
        service.draining = True
        loop.call_soon_threadsafe(lambda: loop.create_task(service.drain(lambda: hand_on(sig, frame))))

    signal.signal(signal.SIGTERM, on_sigterm)
