"""The random source-id batches of compare_logits (and of the export's numerics check): the same ids per seed."""

from __future__ import annotations

import numpy as np

from enzh.export.samples import random_source_batches


def test_random_source_batches_keep_their_draws():
    """A caller drawing between batches (compare_logits draws each batch's targets) sees the same ids as before
    the generator was shared: docs/precision.md's agreement numbers depend on them."""
    rng = np.random.default_rng(0)
    batches = random_source_batches(rng, [(3, 2, 5), (2, 2, 5)], pad=9, eos=0, high=8)
    first = next(batches)
    targets = rng.integers(2, 8, size=(3, 2))
    second = next(batches)
    assert first.tolist() == [[3, 3, 2, 2, 0], [2, 3, 6, 0, 9], [5, 7, 5, 0, 9]]
    assert targets.tolist() == [[5, 7], [6, 5], [5, 5]]
    assert second.tolist() == [[6, 6, 2, 4, 0], [7, 5, 0, 9, 9]]
    assert first.dtype == np.int64


def test_random_source_batches_longest_first():
    """With longest_first each batch is exactly its longest length wide, its first row unpadded."""
    shapes = [(1, 1, 1), (3, 1, 4), (4, 1, 23)]
    for batch, (rows, _, longest) in zip(
        random_source_batches(np.random.default_rng(1), shapes, pad=9, eos=0, high=7, longest_first=True),
        shapes,
        strict=True,
    ):
        assert batch.shape == (rows, longest) and batch[0, -1] == 0
        assert ((batch == 9) | (batch == 0) | ((batch >= 2) & (batch < 7))).all()
        assert ((batch == 0).sum(axis=1) == 1).all()  # one eos per row, then padding
