"""Random source-id batches, shared by the export's numerics check and the precision variants' comparison."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np


def random_source_batches(
    rng: np.random.Generator,
    shapes: Iterable[tuple[int, int, int]],
    *,
    pad: int,
    eos: int,
    high: int,
    longest_first: bool = False,
) -> Iterator[np.ndarray]:
    """One padded ``int64`` batch of source ids per ``(rows, shortest, longest)`` of ``shapes``.

    Each row's length (eos included) is drawn uniformly from ``shortest..longest`` (with ``longest_first`` the
    first row takes ``longest`` itself, so the batch is exactly that wide); its tokens before eos are drawn
    uniformly from ``[2, high)``, the rest of the row is ``pad``. The batches are drawn lazily from ``rng``, one
    per ``next()``: a caller may draw from the same ``rng`` between two batches (the sequence of draws is the
    caller's to keep; the same seed and the same calls give the same ids).
    """
    for rows, shortest, longest in shapes:
        if longest_first:
            lengths = [longest, *rng.integers(shortest, longest + 1, size=rows - 1)]
        else:
            lengths = list(rng.integers(shortest, longest + 1, size=rows))
        batch = np.full((rows, int(max(lengths))), pad, dtype=np.int64)
        for row, n in enumerate(lengths):
            batch[row, : n - 1] = rng.integers(2, high, size=n - 1)
            batch[row, n - 1] = eos
        yield batch
