"""Lexically constrained beam search: glossary terms the translation must contain, placed by the model.

Our own reading of dynamic beam allocation (Post & Vilar 2018, "Fast Lexically Constrained Decoding with
Dynamic Beam Allocation for Neural Machine Translation") over the same :class:`IncrementalDecoder` as
:mod:`enzh.runtime.decoding`, with the per-sentence candidate sets of its vectorized form (Hu et al. 2019)
gathered with numpy and the allocation done per sentence:

* a **constraint** is a target term's token ids and how many times it must appear (its source term's
  occurrences); a hypothesis's **progress** is how many constraint tokens it has placed;
* every step, each sentence's candidates are its beams' best ``2k`` continuations overall, each beam's own best
  token, and each beam's next constraint tokens (the next token of the term it is inside, else the first token
  of every term it still owes);
* a term, once begun, must be finished: a beam inside a term has its next token as its only continuation. A
  term's first token generated freely begins it (the model placed it), unless that token is SentencePiece's bare
  word-start piece (``weak_start``: it begins most English words); free tokens may never spell out a whole term
  (so a term appears exactly as often as asked), and after a term that ends a word (``closed``: English) no
  token may continue the word;
* the ``k`` next beams are taken from **banks** of equal progress, round robin from the most advanced bank
  down (DBA's allocation: each bank its share of the beam, what an empty bank leaves going to the others),
  best score first within a bank;
* a hypothesis may end (eos, or the length limit) only with every constraint met, and a candidate whose
  remaining constraint tokens no longer fit before the length limit is dropped, so every constraint is met by
  ``max_length``: decoding always ends within the same bound as the unconstrained search. Terms whose tokens
  cannot fit at all are left out before the search starts and reported as ``unmet``.

A sentence is done when ``k`` hypotheses have finished and no running beam that holds every constraint has a
length-normalised score above the worst of them (HF's early-stop heuristic, over the beams that could end now:
one still owing terms has their cost ahead of it), or at the length limit.

Greedy requests (``num_beams == 1``) run this search with :data:`GREEDY_BEAMS` beams: a single beam cannot hold
more than one bank (on the demo glossary set of docs/quality.md, 2 and 3 beams placed terms worse than 4 in
exploratory runs). Their scores are returned as greedy's (the sum of the tokens'
log-probabilities), beam requests' as beam search's (divided by ``length ** length_penalty``).

Only sentences with a glossary term go through here; every other sentence keeps the unconstrained search, so
its output is token-identical to decoding without a glossary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from enzh.runtime.decoding import Hypothesis, IncrementalDecoder, check_num_return_sequences
from enzh.runtime.options import DecodingSettings
from enzh.runtime.processors import process_scores

# The beam a greedy request's sentences with glossary terms are decoded with (see the module docstring).
GREEDY_BEAMS = 4


_IMPOSSIBLE = np.float32(-1.0e9)
_DEAD = -5.0e8  # running scores below this are rows that hold no hypothesis


@dataclass(frozen=True)
class Constraint:
    """A target term's token ids, and how many times the translation must contain them; ``closed``: the term ends
    a word (the token after it may not continue one: an English term must not become the start of a longer
    word); ``weak_start``: its first token alone says nothing (SentencePiece's bare word-start piece, which
    begins most words): the model writing it does not begin the term, only the search placing it does."""

    tokens: tuple[int, ...]
    count: int
    closed: bool = False
    weak_start: bool = False

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("a constraint needs at least one token")
        if self.count < 1:
            raise ValueError(f"a constraint's count must be >= 1, got {self.count}")


@dataclass(frozen=True)
class ConstrainedHypothesis(Hypothesis):
    """A hypothesis of the constrained search, with the constraint occurrences it could not place (0: all met;
    more only when the terms' tokens do not fit within ``max_length``)."""

    unmet: int = 0


# A beam's place in its sentence's constraints: (occurrences done per constraint, the constraint it is inside or
# -1, tokens of that one placed so far, whether its last token ended a closed term, constraint tokens placed).
_State = tuple[tuple[int, ...], int, int, bool, int]
# How a candidate token is taken: FREE (the model's own word; it counts for no term), CONTINUE (the next token
# of the term the beam is inside), or the index of the term it begins.
FREE, CONTINUE = -1, -2


def fit_constraints(
    constraints: Sequence[Constraint], settings: DecodingSettings
) -> tuple[tuple[Constraint, ...], int]:
    """The constraints whose tokens fit in the positions a translation has (``max_length - 1`` generated tokens,
    less a forced first and a forced last token), occurrences left out from the last constraint backwards; and
    how many occurrences were left out."""
    budget = settings.max_length - 1
    budget -= (settings.forced_bos_token_id is not None) + (settings.forced_eos_token_id is not None)
    kept: list[Constraint] = []
    unmet = 0
    used = 0
    for constraint in constraints:
        fits = max(0, min(constraint.count, (budget - used) // len(constraint.tokens)))
        unmet += constraint.count - fits
        if fits:
            kept.append(replace(constraint, count=fits))
            used += fits * len(constraint.tokens)
    return tuple(kept), unmet


class _Sentence:
    """One sentence's constraints, its beams' states and its finished hypotheses."""

    def __init__(self, constraints: Sequence[Constraint], unmet: int, beams: int) -> None:
        self.constraints = tuple(constraints)
        self.lengths = tuple(len(c.tokens) for c in self.constraints)
        self.total = sum(c.count * n for c, n in zip(self.constraints, self.lengths, strict=True))
        self.unmet = unmet
        start: _State = (tuple(0 for _ in self.constraints), -1, 0, False, 0)
        self.states: list[_State] = [start] * beams
        self.finished: list[tuple[float, float, tuple[int, ...]]] = []  # (rank, summed, tokens), best first

    @staticmethod
    def progress(state: _State) -> int:
        """Constraint tokens placed: the bank of a beam."""
        return state[4]

    def owed(self, state: _State) -> list[tuple[int, int]]:
        """The (token, how) a beam in ``state`` may place next for its constraints: the next token of the term
        it is inside, else the first token of every term it still owes."""
        done, active, placed, _, _ = state
        if active >= 0:
            return [(self.constraints[active].tokens[placed], CONTINUE)]
        return [(c.tokens[0], i) for i, (c, d) in enumerate(zip(self.constraints, done, strict=True)) if d < c.count]

    def advance(
        self, state: _State, token: int, how: int, history: np.ndarray, continues_word: np.ndarray | None
    ) -> _State | None:
        """The state after ``token`` taken ``how`` (``history``: the beam's tokens so far), or None when it is not
        allowed: inside a term, anything but its next token; after a closed term, a token continuing the word;
        a free token completing the tokens of a term (a term is only ever written as a counted occurrence)."""
        done, active, placed, closed, progress = state
        if closed and continues_word is not None and continues_word[token]:
            return None
        if active >= 0:
            constraint = self.constraints[active]
            if token != constraint.tokens[placed]:
                return None
            if placed + 1 < len(constraint.tokens):
                return (done, active, placed + 1, False, progress + 1)
            return (_bump(done, active), -1, 0, constraint.closed, progress + 1)
        if how == FREE:  # the model's own token begins a term it owes (DBA), unless that token says nothing
            how = next(
                (
                    i
                    for i, (c, d) in enumerate(zip(self.constraints, done, strict=True))
                    if d < c.count and c.tokens[0] == token and not c.weak_start
                ),
                FREE,
            )
        if how >= 0:
            constraint = self.constraints[how]
            if len(constraint.tokens) == 1:
                return (_bump(done, how), -1, 0, constraint.closed, progress + 1)
            return (done, how, 1, False, progress + 1)
        for constraint in self.constraints:
            tokens = constraint.tokens
            if tokens[-1] != token or len(history) < len(tokens) - 1:
                continue
            if len(tokens) == 1 or tuple(history[len(history) - len(tokens) + 1 :].tolist()) == tokens[:-1]:
                return None
        return (done, -1, 0, False, progress)

    def keep(self, normalised: float, summed: float, tokens: tuple[int, ...], beams: int) -> None:
        self.finished.append((normalised, summed, tokens))
        self.finished.sort(key=lambda f: -f[0])
        del self.finished[beams:]


def _bump(done: tuple[int, ...], index: int) -> tuple[int, ...]:
    return (*done[:index], done[index] + 1, *done[index + 1 :])


# A candidate: (score: the log-probability of all its tokens, parent row, token, constraint state).
_Candidate = tuple[float, int, int, _State]


def _allocate(banks: dict[int, list[_Candidate]], beams: int) -> list[_Candidate]:
    """The next beams: round robin over the banks, most progress first, best score first within each."""
    queues = [sorted(banks[p], key=lambda c: -c[0]) for p in sorted(banks, reverse=True)]
    picked: list[_Candidate] = []
    depth = 0
    while len(picked) < beams and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(picked) < beams:
                picked.append(queue[depth])
        depth += 1
    return picked


# Long on purpose: one function per strategy, one comment per step (as enzh.runtime.decoding's searches).
def constrained_nbest(
    decoder: IncrementalDecoder,
    batch_size: int,
    settings: DecodingSettings,
    constraints: Sequence[Sequence[Constraint]],
    num_return_sequences: int = 1,
    continues_word: np.ndarray | None = None,
) -> list[list[ConstrainedHypothesis]]:
    """The best ``num_return_sequences`` hypotheses of every sentence holding its ``constraints`` (see the
    module docstring), best first. ``continues_word``: bool per vocabulary id, the tokens that continue a word
    (not allowed after a closed constraint)."""
    if len(constraints) != batch_size:
        raise ValueError(f"constrained_nbest() got {len(constraints)} constraint lists for {batch_size} sentences")
    greedy = settings.num_beams == 1
    beams = GREEDY_BEAMS if greedy else settings.num_beams
    check_num_return_sequences(num_return_sequences, 1 if greedy else beams)
    if batch_size == 0:
        return []
    max_length, eos, length_penalty = settings.max_length, settings.eos_token_id, settings.length_penalty
    max_generated = max_length - 1
    forced_last = settings.forced_eos_token_id is not None
    never_stops_early = settings.early_stopping == "never" and length_penalty > 0.0
    sentences = []
    for own in constraints:
        fitted, unmet = fit_constraints(own, settings)
        sentences.append(_Sentence(fitted, unmet, beams))
    results: list[list[ConstrainedHypothesis] | None] = [None] * batch_size
    slots = list(range(batch_size))  # source sentence of each active slot (k decoder rows each)

    # Each sentence starts as k identical rows; all but the first hold no hypothesis yet.
    decoder.reorder(np.repeat(np.arange(batch_size, dtype=np.int64), beams))
    history = np.empty((batch_size * beams, max_length), dtype=np.int64)
    history[:, 0] = settings.decoder_start_token_id
    running = np.full((batch_size, beams), _IMPOSSIBLE, dtype=np.float32)
    running[:, 0] = 0.0
    length = 1  # filled history columns (start token included)

    def finish(slot: int, sentence: _Sentence, extra: list[tuple[float, float, tuple[int, ...], int]]) -> None:
        # The best finished hypotheses; running beams fill in when fewer finished (never with constraints unmet
        # unless they could not fit).
        found = [(n, s, t, sentence.unmet) for n, s, t in sentence.finished] + extra
        found.sort(key=lambda f: -f[0])
        results[slots[slot]] = [
            ConstrainedHypothesis(
                tokens, summed if greedy else summed / max(1, len(tokens)) ** settings.length_penalty, unmet
            )
            for _, summed, tokens, unmet in found[:num_return_sequences]
        ]

    while True:
        generated = length  # tokens generated once this step's token is appended
        # 1. Every row's log-probabilities after the logits processors (as beam search computes them), plus its
        #    running score.
        step = decoder.step(history[:, length - 1].copy(), 1, logits=False)
        log_probs = process_scores(history[:, :length], step.log_probs, settings)
        vocab = log_probs.shape[1]
        totals = log_probs + running.reshape(-1, 1)
        # 2. Candidates from the scores: each sentence's best 2k (beam, token) pairs and each beam's best token.
        flat = totals.reshape(len(slots), beams * vocab)
        top = np.argpartition(-flat, 2 * beams - 1, axis=1)[:, : 2 * beams]
        best = totals.argmax(axis=1)
        # Constraint tokens may still be placed after this one: the positions left, less a forced last eos.
        usable = max(0, max_generated - generated - forced_last)
        at_limit = generated >= max_generated
        parents: list[int] = []
        tokens: list[int] = []
        scores: list[float] = []
        done: list[int] = []
        top_rows = (top // vocab + (np.arange(len(slots)) * beams)[:, None]).tolist()
        top_tokens = (top % vocab).tolist()
        best_tokens = best.tolist()
        alive = (running > _DEAD).tolist()
        every: list[list[tuple[int, int, int]]] = []
        for slot in range(len(slots)):
            sentence = sentences[slots[slot]]
            base = slot * beams
            pairs = {(row, token, FREE) for row, token in zip(top_rows[slot], top_tokens[slot], strict=True)}
            for beam in range(beams):
                if not alive[slot][beam]:
                    continue
                row = base + beam
                pairs.add((row, best_tokens[row], FREE))
                # 3. ... and each beam's next constraint tokens.
                pairs.update((row, token, how) for token, how in sentence.owed(sentence.states[beam]))
            every.append(sorted(pairs))
        # (every candidate's log-probability and total score, gathered at once)
        flat_rows = np.asarray([row for pairs in every for row, _, _ in pairs], dtype=np.int64)
        flat_tokens = np.asarray([token for pairs in every for _, token, _ in pairs], dtype=np.int64)
        gathered_logp = log_probs[flat_rows, flat_tokens].tolist()
        gathered_total = totals[flat_rows, flat_tokens].tolist()
        at = 0
        for slot in range(len(slots)):
            sentence = sentences[slots[slot]]
            base = slot * beams
            pairs_of = every[slot]
            logps, scores_of = gathered_logp[at : at + len(pairs_of)], gathered_total[at : at + len(pairs_of)]
            at += len(pairs_of)
            # 4. Each candidate's constraint state; a candidate that breaks a term, repeats a full one, ends with
            #    constraints owed, or owes more tokens than can still fit, is dropped. Those that end are kept as
            #    finished hypotheses; the others go to the bank of their progress.
            banks: dict[int, list[_Candidate]] = {}
            seen: set[tuple[int, int, _State]] = set()
            for (row, token, how), logp, score in zip(pairs_of, logps, scores_of, strict=True):
                if not (logp > _DEAD and alive[slot][row - base]):
                    continue
                before = sentence.states[row - base]
                if before[1] >= 0 and how == FREE:
                    continue  # inside a term: its next token comes as CONTINUE
                state = sentence.advance(before, token, how, history[row, 1:length], continues_word)
                if state is None or (row, token, state) in seen:
                    continue
                seen.add((row, token, state))
                progress = sentence.progress(state)
                owed = sentence.total - progress
                if at_limit or token == eos:
                    if owed == 0:
                        ids = (*history[row, 1:length].tolist(), token)
                        sentence.keep(score / generated**length_penalty, score, tuple(ids), beams)
                    continue
                if owed <= usable:
                    banks.setdefault(progress, []).append((score, row, token, state))
            # 5. The next beams, allocated over the banks.
            picked = _allocate(banks, beams)
            # 6. Done: at the length limit, nothing left to continue, or no running beam holding every constraint
            #    can beat the worst of k finished hypotheses (HF's heuristic; early_stopping=True: k finished).
            finished = sentence.finished
            full = len(finished) >= beams
            if picked and full and settings.early_stopping is not True:
                best_length = max_generated if never_stops_early else generated
                ready = [p[0] for p in picked if sentence.progress(p[3]) == sentence.total]
                full = not ready or max(ready) / best_length**length_penalty <= finished[-1][0]
            if at_limit or not picked or full:
                extra = []
                if len(finished) < num_return_sequences:  # (constraints that could not be met: never loops)
                    extra = [
                        (
                            s / generated**length_penalty,
                            s,
                            (*history[r, 1:length].tolist(), t),
                            sentence.unmet + sentence.total - sentence.progress(st),
                        )
                        for s, r, t, st in picked
                    ]
                if len(finished) + len(extra) < num_return_sequences:  # nothing could continue: the beams as they are
                    extra += [
                        (
                            float(running[slot, b]) / max(1, length - 1) ** length_penalty,
                            float(running[slot, b]),
                            tuple(history[base + b, 1:length].tolist()),
                            sentence.unmet + sentence.total - sentence.progress(sentence.states[b]),
                        )
                        for b in range(beams)
                        if running[slot, b] > _DEAD
                    ]
                finish(slot, sentence, extra)
                done.append(slot)
                continue
            # Fewer candidates than beams: the rest of the rows hold no hypothesis.
            picked += [(float(_IMPOSSIBLE), *picked[0][1:])] * (beams - len(picked))
            sentence.states = [candidate[3] for candidate in picked]
            for score, row, token, _ in picked:
                parents.append(row)
                tokens.append(token)
                scores.append(score)
        if len(done) == len(slots):
            break
        # 7. Reorder the decoder to the next beams (done sentences' rows left out) and extend their histories.
        rows = np.asarray(parents, dtype=np.int64)
        decoder.reorder(rows)
        history = history[rows]
        history[:, length] = tokens
        running = np.asarray(scores, dtype=np.float32).reshape(-1, beams)
        kept = set(done)
        slots = [s for i, s in enumerate(slots) if i not in kept]
        length += 1
    return [r for r in results if r is not None]


__all__ = ["GREEDY_BEAMS", "ConstrainedHypothesis", "Constraint", "constrained_nbest", "fit_constraints"]
