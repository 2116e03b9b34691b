"""Summary statistics shared by the tools' reports (enzh bench, the server benchmark)."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 <= q <= 1) by linear interpolation between the closest ranks (numpy's default
    "linear" method, Hyndman & Fan type 7): ``percentile([1, 2], 0.5) == 1.5``. NaN for no values.

    The definition of docs/benchmarks.md's IQR column (q1/q3 in its bench.json). The server benchmark used
    the nearest rank until both shared this one; its percentiles move by less than the gap between two
    neighbouring latencies.
    """
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
