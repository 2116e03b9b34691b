"""Random source-id batches, shared by the export's numerics check and the precision variants' comparison."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np


def token_range(special_ids: dict[str, int], vocab: int) -> tuple[int, int]:
    """``[low, high)``: the ordinary token ids of a vocabulary of ``vocab`` ids, past the special ids at its start
    (Marian: eos 0, unk 1; M2M100/NLLB/mBART: bos 0, pad 1, eos 2, unk 3) and before a pad that ends it (Marian)."""
    specials = set(special_ids.values())
    low = 0
    while low in specials:
        low += 1
    high = vocab - 1 if vocab - 1 in specials else vocab
    return low, high


def random_source_batches(
    rng: np.random.Generator,
    shapes: Iterable[tuple[int, int, int]],
    *,
    pad: int,
    eos: int,
    high: int,
    low: int = 2,
    longest_first: bool = False,
) -> Iterator[np.ndarray]:
    """One padded ``int64`` batch of source ids per ``(rows, shortest, longest)`` of ``shapes``.

    Each row's length (eos included) is drawn uniformly from ``shortest..longest`` (with ``longest_first`` the
    first row takes ``longest`` itself, so the batch is exactly that wide); its tokens before eos are drawn
    uniformly from ``[low, high)`` (above the special ids: :func:`token_range`), the rest of the row is ``pad``.
    The batches are drawn lazily from ``rng``, one per ``next()``: a caller may draw from the same ``rng`` between
    two batches (the sequence of draws is the caller's to keep; the same seed and the same calls give the same
    ids).
    """
    for rows, shortest, longest in shapes:
        if longest_first:
            lengths = [longest, *rng.integers(shortest, longest + 1, size=rows - 1)]
        else:
            lengths = list(rng.integers(shortest, longest + 1, size=rows))
        batch = np.full((rows, int(max(lengths))), pad, dtype=np.int64)
        for row, n in enumerate(lengths):
            batch[row, : n - 1] = rng.integers(low, high, size=n - 1)
            batch[row, n - 1] = eos
        yield batch
