"""The lexically constrained search (enzh.runtime.constrained) over a numpy stand-in decoder: every constraint
appears exactly as often as asked, decoding always ends within max_length, batches give what single sentences
give."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from enzh.runtime.constrained import GREEDY_BEAMS, Constraint, constrained_nbest, fit_constraints
from enzh.runtime.decoding import Step
from enzh.runtime.options import DecodingSettings

VOCAB, EOS, PAD = 40, 0, 39


class BigramDecoder:
    """Next-token logits from the last token (a random bigram table) plus a bias of the row's source sentence:
    a deterministic decoder whose rows are independent of the batch they are in."""

    def __init__(self, sentences: list[int], seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.table = rng.normal(0, 2.0, (VOCAB, VOCAB)).astype(np.float32)
        self.table[:, EOS] += 1.5  # sentences end after some ten tokens
        self.bias = np.random.default_rng(seed + 1).normal(0, 1.0, (100, VOCAB)).astype(np.float32)
        self.rows = np.asarray(sentences, dtype=np.int64)  # source sentence of each row
        self.steps = 0

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        self.steps += 1
        assert len(tokens) == len(self.rows)
        return Step.from_logits(self.table[tokens] + self.bias[self.rows], top_k, logits)

    def reorder(self, rows: np.ndarray) -> None:
        self.rows = self.rows[rows]


def settings(num_beams: int, max_length: int = 24, **overrides: object) -> DecodingSettings:
    return DecodingSettings(
        decoder_start_token_id=PAD,
        eos_token_id=EOS,
        pad_token_id=PAD,
        max_length=max_length,
        num_beams=num_beams,
        bad_words_ids=((PAD,),),
        forced_eos_token_id=EOS,
        **overrides,  # type: ignore[arg-type]
    )


def occurrences(ids: tuple[int, ...], term: tuple[int, ...]) -> int:
    """Non-overlapping occurrences of ``term`` in ``ids``."""
    count, i = 0, 0
    while i + len(term) <= len(ids):
        if ids[i : i + len(term)] == term:
            count += 1
            i += len(term)
        else:
            i += 1
    return count


def run(sentences: list[int], constraints: list[tuple[Constraint, ...]], decoding: DecodingSettings) -> list:
    decoder = BigramDecoder(sentences)
    return [h[0] for h in constrained_nbest(decoder, len(sentences), decoding, constraints)]


TERMS = [
    (Constraint((7, 8, 9), 1),),
    (Constraint((12,), 2),),
    (Constraint((5, 6), 1), Constraint((21, 22, 23), 1)),
    (Constraint((30, 31), 2), Constraint((3,), 1)),
    (Constraint((14, 15), 1),),
]


@pytest.mark.parametrize("num_beams", [1, 2, 4])
def test_every_constraint_appears_exactly_as_often_as_asked(num_beams: int) -> None:
    decoding = settings(num_beams)
    found = run(list(range(len(TERMS))), TERMS, decoding)
    assert len(found) == len(TERMS)
    for hypothesis, terms in zip(found, TERMS, strict=True):
        ids = hypothesis.token_ids
        assert hypothesis.unmet == 0
        assert ids[-1] == EOS and EOS not in ids[:-1] and len(ids) <= decoding.max_length - 1
        assert PAD not in ids
        for constraint in terms:
            assert occurrences(ids, constraint.tokens) == constraint.count, (ids, constraint)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_batched_equals_one_by_one(num_beams: int) -> None:
    decoding = settings(num_beams)
    batched = run(list(range(len(TERMS))), TERMS, decoding)
    single = [run([i], [terms], decoding)[0] for i, terms in enumerate(TERMS)]
    assert [h.token_ids for h in batched] == [h.token_ids for h in single]
    assert [h.score for h in batched] == [h.score for h in single]


def test_greedy_scores_are_sums_and_beam_scores_normalised() -> None:
    greedy = run([0], [TERMS[0]], settings(1))[0]
    beam = run([0], [TERMS[0]], settings(GREEDY_BEAMS))[0]
    assert greedy.token_ids == beam.token_ids  # greedy requests run the search with GREEDY_BEAMS beams
    assert greedy.score == pytest.approx(beam.score * len(beam.token_ids), rel=1e-6)


def test_terms_that_do_not_fit_are_reported_and_decoding_ends() -> None:
    # max_length 6: five generated tokens, the last one the forced eos: room for four constraint tokens.
    terms = (Constraint((7, 8, 9), 1), Constraint((12, 13), 1))
    decoding = settings(4, max_length=6)
    assert fit_constraints(terms, decoding) == ((Constraint((7, 8, 9), 1),), 1)
    found = run([0], [terms], decoding)[0]
    assert found.unmet == 1
    assert occurrences(found.token_ids, (7, 8, 9)) == 1
    assert len(found.token_ids) <= 5 and found.token_ids[-1] == EOS


def test_terms_filling_every_position_are_placed() -> None:
    terms = (Constraint((7, 8), 2),)
    found = run([3], [terms], settings(2, max_length=6))[0]
    assert found.token_ids == (7, 8, 7, 8, EOS) and found.unmet == 0


def test_a_forced_first_token_comes_before_the_terms() -> None:
    decoding = settings(4, forced_bos_token_id=33)
    found = run([1], [TERMS[2]], decoding)[0]
    assert found.token_ids[0] == 33
    assert occurrences(found.token_ids, (5, 6)) == 1 and occurrences(found.token_ids, (21, 22, 23)) == 1


def test_a_term_the_processors_forbid_twice_still_ends() -> None:
    # no_repeat_ngram_size 2 bans the second (12, 12)... occurrence of a bigram: the search cannot place both,
    # and ends at max_length with what it has, saying so.
    terms = (Constraint((12, 13), 2),)
    found = run([0], [terms], settings(4, max_length=12, no_repeat_ngram_size=2))[0]
    assert found.unmet == 1
    assert len(found.token_ids) <= 11


def test_free_tokens_never_spell_a_term_beyond_its_count() -> None:
    # Token 9 alone is likely everywhere in sentence 4's rows: the term (9,) once means 9 exactly once.
    decoder = BigramDecoder([4])
    decoder.bias[4, 9] += 6.0
    found = constrained_nbest(decoder, 1, settings(4), [(Constraint((9,), 1),)])[0][0]
    assert found.token_ids.count(9) == 1


def test_n_best_and_argument_checks() -> None:
    decoding = settings(4)
    found = constrained_nbest(BigramDecoder([0]), 1, decoding, [TERMS[0]], 3)[0]
    assert len(found) == 3 and len({h.token_ids for h in found}) == 3
    assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)
    assert all(occurrences(h.token_ids, (7, 8, 9)) == 1 for h in found)
    with pytest.raises(ValueError, match="got 2 constraint lists for 1 sentences"):
        constrained_nbest(BigramDecoder([0]), 1, decoding, [TERMS[0], TERMS[1]])
    with pytest.raises(ValueError, match="num_return_sequences must be 1 with greedy search"):
        constrained_nbest(BigramDecoder([0]), 1, replace(decoding, num_beams=1), [TERMS[0]], 2)
    with pytest.raises(ValueError, match="at least one token"):
        Constraint((), 1)


def test_a_term_the_model_can_never_score_ends_unmet() -> None:
    # A token every step bans (as pad here, or one outside a shortlisted variant's candidates): the term cannot be
    # placed; decoding still ends, within max_length, and says so.
    found = run([0], [(Constraint((5, PAD), 1),)], settings(4, max_length=12))[0]
    assert found.unmet == 1
    assert len(found.token_ids) <= 11 and PAD not in found.token_ids
