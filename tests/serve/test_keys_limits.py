"""The moving-window limiter (enzh.serve.limits) with a fake clock: counts, Retry-After, refusals not counted,
requests that can never fit, and forgetting idle clients."""

from __future__ import annotations

import pytest

from enzh.serve.limits import Limiter, Limits, Refusal


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_request_limit_and_retry_after(clock):
    limiter = Limiter(clock=clock)
    limits = Limits(requests=3)
    for _ in range(3):
        assert limiter.check("a", limits, 10) is None
        clock.now += 10  # hits at 1000, 1010, 1020
    clock.now = 1030.0
    refusal = limiter.check("a", limits, 10)
    assert refusal == Refusal("requests", 3, 30)  # the hit at 1000 leaves the window at 1060
    assert limiter.check("b", limits, 10) is None  # another client has its own window
    clock.now = 1059.5
    assert limiter.check("a", limits, 10) == Refusal("requests", 3, 1)  # rounded up, at least 1
    clock.now = 1060.0
    assert limiter.check("a", limits, 10) is None
    assert limiter.check("a", limits, 10) == Refusal("requests", 3, 10)  # next: the hit at 1010 must leave


def test_char_limit_waits_for_enough_characters_to_leave(clock):
    limiter = Limiter(clock=clock)
    limits = Limits(chars=100)
    assert limiter.check("a", limits, 40) is None  # at 1000
    clock.now += 5
    assert limiter.check("a", limits, 40) is None  # at 1005: 80 used
    clock.now += 5
    assert limiter.check("a", limits, 20) is None  # at 1010: 100 used
    assert limiter.check("a", limits, 50) == Refusal("chars", 100, 55)  # 1000 and 1005 must leave: at 1065
    assert limiter.check("a", limits, 30) == Refusal("chars", 100, 50)  # the hit of 1000 is enough
    clock.now = 1060.0
    assert limiter.check("a", limits, 30) is None


def test_refusals_are_not_counted(clock):
    limiter = Limiter(clock=clock)
    limits = Limits(requests=1)
    assert limiter.check("a", limits, 0) is None
    for _ in range(100):
        assert limiter.check("a", limits, 0) is not None
    clock.now += 60
    assert limiter.check("a", limits, 0) is None


def test_a_request_larger_than_the_char_limit_never_fits(clock):
    refusal = Limiter(clock=clock).check("a", Limits(chars=100), 101)
    assert refusal is not None and refusal.never_fits and refusal.limit == "chars"


def test_both_limits_at_once(clock):
    limiter = Limiter(clock=clock)
    limits = Limits(requests=10, chars=50)
    assert limiter.check("a", limits, 50) is None
    refusal = limiter.check("a", limits, 1)
    assert refusal is not None and refusal.limit == "chars" and refusal.retry_after_s == 60


def test_no_limits_remember_nothing(clock):
    limiter = Limiter(clock=clock)
    for i in range(1000):
        assert limiter.check(f"client{i}", Limits(), 10**6) is None
    assert len(limiter) == 0


def test_idle_clients_are_forgotten(clock):
    """Bounded memory against many addresses: a client without a hit in the last window is dropped."""
    limiter = Limiter(clock=clock)
    for i in range(500):
        limiter.check(f"10.0.{i // 256}.{i % 256}", Limits(requests=5), 1)
    assert len(limiter) == 500
    clock.now += 61
    limiter.check("late", Limits(requests=5), 1)
    assert len(limiter) == 1
