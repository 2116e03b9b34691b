"""Length-sorted, token-budget batches: which sentences are translated together."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def plan_batches(
    lengths: Sequence[int],
    *,
    max_tokens: int,
    max_batch: int,
    group: Callable[[int], object] | None = None,
) -> list[list[int]]:
    """Split sentence indices into batches.

    Sentences are sorted by length (longest first) so padding is small; a batch holds at most ``max_batch``
    sentences and at most ``max_tokens`` padded source tokens (a single longer sentence still gets its own
    batch). ``group(index)`` keys that must not share a batch (for example different output bounds)
    start a new batch. Every index appears exactly once.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    current_key: object = None
    for i in order:
        key = group(i) if group is not None else None
        longest = lengths[current[0]] if current else lengths[i]
        fits = len(current) < max_batch and (len(current) + 1) * longest <= max_tokens
        if current and (not fits or key != current_key):
            batches.append(current)
            current = []
        if not current:
            current_key = key
        current.append(i)
    if current:
        batches.append(current)
    return batches


def length_groups(lengths: Sequence[int], *, ratio: float = 2.0, slack: int = 8) -> list[list[int]]:
    """Split sentence indices into groups of similar lengths, to be padded and encoded together: sorted by length
    (shortest first), a group ends before a sentence more than ``ratio`` times and ``slack`` tokens longer than its
    shortest. (A call costs little beside the padding a long sentence forces on short ones.)"""
    groups: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        shortest = lengths[groups[-1][0]] if groups else 0
        if not groups or (lengths[i] > ratio * shortest and lengths[i] - shortest > slack):
            groups.append([])
        groups[-1].append(i)
    return groups


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad id lists into ``input_ids`` and ``attention_mask`` int64 arrays."""
    width = max(len(s) for s in sequences)
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask
