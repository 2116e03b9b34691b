"""A translator's decoders reuse the cache buffers of the ones before them, and greedy search drops finished rows
moving as few rows as possible: tokens and scores stay those of fresh buffers, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from enzh.runtime.decoding import _fill_from_end
from enzh.runtime.translator import Translator


def _poisoned_spares(translator: Translator) -> list[int]:
    """Fill the spare buffers with NaN (a stale value read anywhere would show in the scores) and make
    take_caches record how many poisoned buffers it hands out per decoder."""
    sessions = translator.sessions
    for buffer in sessions._spare_caches:
        buffer[:] = np.nan
    served: list[int] = []
    take = sessions.take_caches

    def counting(count: int, size: int, dtype: type) -> list[np.ndarray]:
        buffers = take(count, size, dtype)
        served.append(sum(bool(np.isnan(b[0])) for b in buffers))
        return buffers

    sessions.take_caches = counting  # type: ignore[method-assign]
    return served


def _no_spares(translator: Translator) -> Translator:
    translator.sessions.give_back_caches = lambda buffers: None  # type: ignore[method-assign]
    return translator


def _results(translator: Translator, sources: list[tuple[int, ...]], beams: int) -> list[list[tuple]]:
    got = translator.generate_nbest_ids(sources, beam_size=beams, num_return_sequences=beams, max_new_tokens=40)
    return [[(h.token_ids, h.score) for h in hs] for hs in got]


@pytest.mark.parametrize("shards", [1, 2])  # 2: two decoders at once, each with its own buffers
@pytest.mark.parametrize("name", ["base", "gelu"])  # gelu: a head size of 12, its cache zero-padded to 16
def test_reused_cache_buffers_change_nothing(tiny_export, name, shards):
    directory = tiny_export(name)
    reusing = Translator.load(directory, intra_op_threads=2, decode_shards=shards)
    fresh = _no_spares(Translator.load(directory, decode_shards=1))
    rng = np.random.default_rng(3)
    eos = reusing.adapter.eos_token_id
    sources = [(*rng.integers(5, 60, size=n).tolist(), eos) for n in (3, 9, 5, 12, 7, 4, 10, 6)]
    # The largest call first (all sources, 4 beams): every later decoder fits in the buffers it hands back.
    _results(reusing, sources, 4)
    layers = reusing.sessions.layers
    assert len(reusing.sessions._spare_caches) == shards * 2 * layers
    for beams, batch in ((1, sources[:3]), (4, sources[2:5]), (1, sources), (2, sources[::-1])):
        served = _poisoned_spares(reusing)
        assert _results(reusing, batch, beams) == _results(fresh, batch, beams)
        assert served and served[0] == 2 * layers  # the first decoder of the call ran on the poisoned spares
        del reusing.sessions.take_caches


def test_demo_batches_reuse_buffers_bit_for_bit(demo_dir):
    """Batch after batch of the demo's sentences (the translator splits them by length), greedy and beam 4."""
    reusing, fresh = Translator.load(demo_dir, decode_shards=1), _no_spares(Translator.load(demo_dir))
    texts = [line.split("\t")[0] for line in (demo_dir / "test.tsv").read_text("utf-8").splitlines()[:40]]
    sources = [tuple(reusing.tokenizer.encode(f">>cmn_Hans<< {t}")) for t in texts]
    _results(reusing, sources, 4)  # the largest buffers first: every later decoder fits in them
    for beams in (1, 4, 1):
        served = _poisoned_spares(reusing)
        assert _results(reusing, sources, beams) == _results(fresh, sources, beams)
        assert served[0] == 2 * reusing.sessions.layers
        del reusing.sessions.take_caches


def test_spares_too_small_are_dropped_not_kept(demo_dir):
    sessions = Translator.load(demo_dir).sessions
    sessions.give_back_caches([np.zeros(10, np.float32) for _ in range(6)])
    taken = sessions.take_caches(6, 100, np.float32)
    assert [b.size for b in taken] == [100] * 6 and sessions._spare_caches == []
    sessions.give_back_caches([np.zeros(n, np.float32) for n in range(1, 20)])
    assert sorted(b.size for b in sessions._spare_caches) == list(range(8, 20))  # 4 x 3 layers, the largest


def test_a_released_decoder_refuses_to_step(demo_dir):
    translator = Translator.load(demo_dir)
    sessions = translator.sessions
    ids = np.array([[5, 6, 0]], dtype=np.int64)
    with sessions.decoder_for(sessions.encode(ids, np.ones_like(ids))) as decoder:
        decoder.step(np.array([translator.adapter.decoder_start_token_id]))
    with pytest.raises(RuntimeError, match="step\\(\\) on a released decoder"):
        decoder.step(np.array([0]))


@pytest.mark.parametrize(
    ("finished", "keep"),
    [
        ([0, 0, 0, 0], [0, 1, 2, 3]),
        ([0, 1, 0, 0], [0, 3, 2]),  # the last row takes the finished row's place
        ([1, 0, 1, 0, 0], [3, 1, 4]),
        ([0, 0, 1, 1], [0, 1]),  # the last rows finished: nothing moves
        ([1, 1, 1], []),
        ([1, 0, 0, 0, 1, 0], [5, 1, 2, 3]),
    ],
)
def test_fill_from_end_moves_the_fewest_rows(finished, keep):
    got = _fill_from_end(np.array(finished, dtype=bool))
    assert got.tolist() == keep
    running = [i for i, f in enumerate(finished) if not f]
    assert sorted(got.tolist()) == running  # every running row kept once


def test_cache_rows_copied_in_order_equal_a_gather_of_each_rows_own_positions():
    # Beam reorders of a running batch: every moved row copies its own source's filled positions straight from
    # it, in an order that reads each row before it is overwritten; in swaps and longer cycles a row is set aside.
    from enzh.runtime.sessions import copy_rows_in_order

    rng = np.random.default_rng(0)
    cycles = 0
    for trial in range(300):
        rows = int(rng.integers(2, 13))
        parents = rng.integers(0, rows, size=rows)
        if trial % 3 == 0:
            parents = rng.permutation(rows)  # (a permutation: only cycles)
        lengths_of = rng.integers(0, 7, size=rows)  # each old row's filled positions
        arrays = [rng.standard_normal((rows, 2, 7, 3)).astype(np.float32) for _ in range(3)]
        old = [array.copy() for array in arrays]
        moved = (parents != np.arange(rows)).nonzero()[0]
        copy_rows_in_order(arrays, moved, parents[moved], lengths_of[parents[moved]])
        # (what a row holds past its filled positions is never read)
        for got, was in zip(arrays, old, strict=True):
            for target, source in enumerate(parents):
                filled = lengths_of[source]
                np.testing.assert_array_equal(got[target, :, :filled], was[source, :, :filled])
        cycles += bool(len(moved)) and set(moved.tolist()) == set(parents[moved].tolist())
    assert cycles >= 50  # (the permutations set rows aside)
