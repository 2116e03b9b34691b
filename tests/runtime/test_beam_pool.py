"""The pooled beam search of a running-batch lane (enzh.runtime.beam_pool): sentences joining at different steps,
each with its own max_length, get exactly the tokens and scores beam_steps gives each of them alone, on a toy
decoder whose scores tie often (the fallback to all scores), with and without the forced last token, under every
early-stopping rule and several length penalties."""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pytest

from enzh.runtime.beam_pool import BeamPool, pooled_beam
from enzh.runtime.decoding import Hypothesis, Step, beam_steps, run_search
from enzh.runtime.options import DecodingSettings

VOCAB = 11
START = PAD = VOCAB - 1  # Marian's convention: decoding starts from pad, which is banned
EOS = 0


def _logits(history: tuple[int, ...]) -> np.ndarray:
    """A row's next-token logits, a function of the tokens it was fed; rounded to quarters, so that they tie."""
    rng = np.random.default_rng(zlib.crc32(repr(history).encode()))
    logits = np.round(rng.normal(0.0, 2.0, VOCAB) * 4) / 4
    logits[EOS] += 0.25 * len(history)  # (eos grows likelier: sentences end at different lengths)
    return logits.astype(np.float32)


def _step(histories: list[tuple[int, ...]], top_k: int) -> Step:
    return Step.from_logits(np.stack([_logits(h) for h in histories]), top_k, keep_logits=False)


class _ToyDecoder:
    """An IncrementalDecoder whose rows remember what they were fed."""

    def __init__(self, rows: int) -> None:
        self.histories: list[tuple[int, ...]] = [() for _ in range(rows)]

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        self.histories = [(*h, int(t)) for h, t in zip(self.histories, tokens.tolist(), strict=True)]
        return _step(self.histories, top_k)

    def reorder(self, rows: np.ndarray) -> None:
        self.histories = [self.histories[r] for r in rows.tolist()]


def _settings(**overrides: object) -> DecodingSettings:
    """Marian's kind of settings on the toy vocabulary: pad banned, three beams."""
    fields: dict = {"max_length": 12, "num_beams": 3, "bad_words_ids": ((PAD,),)} | overrides
    return DecodingSettings(decoder_start_token_id=START, eos_token_id=EOS, pad_token_id=PAD, **fields)


def _alone(settings: DecodingSettings) -> Hypothesis:
    return run_search(beam_steps(1, settings), _ToyDecoder(1), 1)[0][0]


def _pooled(settings: DecodingSettings, max_lengths: list[int], joins: list[int]) -> dict[int, Hypothesis]:
    """Sentence i (max_lengths[i]) joins the pool before step joins[i]; the decoder's other rows (even ones)
    belong to nobody, as a lane's rows of other searches do."""
    pool = BeamPool(settings)
    beams = settings.num_beams
    fed: list[tuple[int, ...]] = []  # per pool row, what its decoder row was fed
    found: dict[int, Hypothesis] = {}
    for step_number in range(200):
        for i in [i for i, at in enumerate(joins) if at == step_number]:
            pool.add(np.array([2 * len(fed) + 1]), [i], [5], max_lengths[i])
            fed += [() for _ in range(beams)]  # (the lane copies a new sentence's first row into its block)
        if pool.request is None:
            if step_number > max(joins):
                return found
            continue
        # The lane steps every row: pool row i is decoder row 2i + 1.
        fed = [(*h, int(t)) for h, t in zip(fed, pool.request.tokens.tolist(), strict=True)]
        decoder_rows = [h for row in fed for h in ((), row)]
        decoder_rows = [h if h else (PAD,) for h in decoder_rows]
        for tag, hypotheses, length, cancelled in pool.advance_from(_step(decoder_rows, pool.request.top_k)):
            assert length == 5 and not cancelled and tag not in found
            found[int(tag)] = hypotheses[0]  # type: ignore[call-overload]
        # The lane's settle: every row gets the cache of the row the search reordered it to, in place 2i + 1.
        fed = [fed[(r - 1) // 2] for r in pool.rows.tolist()]
        pool.rows = 2 * np.arange(len(fed)) + 1
    raise AssertionError("the pool did not finish")


@pytest.mark.parametrize("early_stopping", [False, True, "never"])
@pytest.mark.parametrize("length_penalty", [1.0, 0.6, 1.4])
@pytest.mark.parametrize("forced_eos", [None, EOS])
def test_pooled_sentences_get_exactly_what_they_get_alone(early_stopping, length_penalty, forced_eos):
    base = _settings(length_penalty=length_penalty, early_stopping=early_stopping, forced_eos_token_id=forced_eos)
    assert pooled_beam(base, 3)
    max_lengths = [2, 3, 5, 7, 9, 12, 4, 12, 6, 8]
    joins = [0, 0, 1, 1, 2, 4, 4, 5, 9, 9]
    pooled = _pooled(base, max_lengths, joins)
    alone = [_alone(replace(base, max_length=m)) for m in max_lengths]
    assert [pooled[i] for i in range(len(max_lengths))] == alone  # tokens and scores, bit for bit
    assert len({h.token_ids for h in alone}) > 3  # (different sentences: lengths, eos, forced tokens)


def test_ties_take_the_fallback_for_the_tied_sentence_only(monkeypatch):
    """Quarter-rounded logits tie: some sentences need all their scores. Only they take that path."""
    import enzh.runtime.beam_pool as beam_pool

    calls: list[int] = []
    original = beam_pool._beam_candidates
    monkeypatch.setattr(beam_pool, "_beam_candidates", lambda h, *rest: calls.append(len(h)) or original(h, *rest))
    base = _settings()
    pooled = _pooled(base, [12] * 6, [0] * 6)
    assert calls and all(rows == 3 for rows in calls)  # one sentence's beams each time
    assert [pooled[i] for i in range(6)] == [_alone(base)] * 6


def test_settings_whose_processors_read_each_row_are_not_pooled():
    base = _settings(max_length=9, bad_words_ids=())
    assert pooled_beam(base, 3)
    assert not pooled_beam(base, 4)  # (not this lane's width)
    assert not pooled_beam(replace(base, num_beams=1), 1)
    assert not pooled_beam(replace(base, repetition_penalty=1.2), 3)
    assert not pooled_beam(replace(base, no_repeat_ngram_size=2), 3)
    assert not pooled_beam(replace(base, min_length=3), 3)
    assert not pooled_beam(replace(base, forced_bos_token_id=4), 3)
