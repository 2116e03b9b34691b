"""Every beam-search sentence of a running-batch lane in one vectorized search, each sentence at its own length.

A lane of :mod:`enzh.runtime.running` used to run one :func:`~enzh.runtime.decoding.beam_steps` generator per
group of sentences that joined together; under load a lane holds many such groups, and each paid the search's
Python for every step. :class:`BeamPool` does, for all of them at once, step for step what ``beam_steps`` does
for a sentence alone: the same candidates (from each row's best few, or from all scores where those tie), the
same stopping rule and finished slots, the same forced last token. Only ``generated`` (tokens so far) and
``max_length`` differ between its sentences, so they are arrays here; everything else is computed row by row,
and a sentence's tokens and scores are those it gets decoded alone.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

import numpy as np

from enzh.runtime.decoding import (
    _IMPOSSIBLE,
    Hypothesis,
    Step,
    StepRequest,
    _beam_candidates,
    _best_allowed,
    _check_vocab,
    _forced_candidates,
    _log_allowed_mass,
    _take,
)
from enzh.runtime.options import DecodingSettings
from enzh.runtime.processors import fixed_bans, log_softmax
from enzh.runtime.topk import row_index, torch_top_k

# What a search of a lane (a pool, or a cohort of enzh.runtime.running) hands back for each sentence that is
# done: its tag, hypotheses, source length, and whether it was cancelled (then nobody wants it).
Done = tuple[Hashable, list[Hypothesis], int, bool]


def pooled_beam(settings: DecodingSettings, beams: int) -> bool:
    """Whether sentences of these settings can share one :class:`BeamPool`: beam search whose logits processors
    only ban the same tokens at every step (no forced first token, no minimum length, no repetition rules:
    Marian's settings)."""
    return (
        beams > 1
        and settings.num_beams == beams
        and settings.forced_bos_token_id is None
        and settings.min_length <= 1
        and fixed_bans(1, settings) is not None
    )


class BeamPool:
    """The beam-search sentences of one lane that share settings (``max_length`` aside). ``rows``: the decoder
    row of each of its rows (sentence by sentence, ``num_beams`` each); ``request``: the step it waits for."""

    def __init__(self, settings: DecodingSettings) -> None:
        self.settings = settings
        self.beams = beams = settings.num_beams
        self.bans = fixed_bans(1, settings) or ()
        self.checked = False
        self.lp = settings.length_penalty
        self.never_stops_early = settings.early_stopping == "never" and self.lp > 0.0
        self.stop_when_full = settings.early_stopping is True
        self.tags: list[Hashable] = []
        self.rows = np.zeros(0, dtype=np.int64)
        self.lengths = np.zeros(0, dtype=np.int64)  # source tokens, per sentence
        self.cancelled = np.zeros(0, dtype=bool)
        self.max_length = np.zeros(0, dtype=np.int64)  # per sentence, start token counted
        self.generated = np.zeros(0, dtype=np.int64)  # tokens so far, per sentence
        self.history = np.zeros((0, 1), dtype=np.int64)  # per row, start token first
        self.last = np.zeros(0, dtype=np.int64)  # per row
        self.running_scores = np.zeros((0, beams), dtype=np.float32)
        self.kept_scores = np.zeros((0, beams), dtype=np.float32)
        self.kept_finished = np.zeros((0, beams), dtype=bool)
        self.kept_tokens = np.zeros((0, beams, 0), dtype=np.int64)
        self.kept_lengths = np.zeros((0, beams), dtype=np.int64)
        self.can_improve = np.zeros(0, dtype=bool)
        self.request: StepRequest | None = None

    def add(self, rows: np.ndarray, tags: list[Hashable], lengths: list[int], max_length: int) -> None:
        """Start sentences whose first decoder rows are ``rows`` (the rest of each block follows at the lane's next
        settle); as ``beam_steps`` starts them: ``num_beams`` copies of the start row, all but the first
        impossible."""
        beams, count = self.beams, len(tags)
        width = max(self.history.shape[1], max_length)
        history = np.zeros((len(self.history) + count * beams, width), dtype=np.int64)
        history[: len(self.history), : self.history.shape[1]] = self.history
        history[len(self.history) :, 0] = self.settings.decoder_start_token_id
        self.history = history
        kept_tokens = np.zeros((len(self.tags) + count, beams, width - 1), dtype=np.int64)
        kept_tokens[: len(self.tags), :, : self.kept_tokens.shape[2]] = self.kept_tokens
        self.kept_tokens = kept_tokens
        start = np.zeros((count, beams), dtype=np.float32)
        start[:, 1:] = _IMPOSSIBLE
        self.tags += tags
        self.rows = np.concatenate([self.rows, np.repeat(rows, beams)])
        self.lengths = np.concatenate([self.lengths, np.asarray(lengths, dtype=np.int64)])
        self.cancelled = np.concatenate([self.cancelled, np.zeros(count, dtype=bool)])
        self.max_length = np.concatenate([self.max_length, np.full(count, max_length, dtype=np.int64)])
        self.generated = np.concatenate([self.generated, np.zeros(count, dtype=np.int64)])
        self.last = np.concatenate([self.last, np.full(count * beams, self.settings.decoder_start_token_id)])
        self.running_scores = np.concatenate([self.running_scores, start])
        self.kept_scores = np.concatenate([self.kept_scores, np.full((count, beams), _IMPOSSIBLE, np.float32)])
        self.kept_finished = np.concatenate([self.kept_finished, np.zeros((count, beams), dtype=bool)])
        self.kept_lengths = np.concatenate([self.kept_lengths, np.zeros((count, beams), dtype=np.int64)])
        self.can_improve = np.concatenate([self.can_improve, np.ones(count, dtype=bool)])
        self._ask()

    def _ask(self) -> None:
        top_k = 2 * self.beams + 1 + len(self.bans)
        self.request = StepRequest(self.last, top_k, False) if self.tags else None

    def cancel(self, wanted: set[Hashable]) -> None:
        for i, tag in enumerate(self.tags):
            if tag in wanted:
                self.cancelled[i] = True

    def advance_from(self, step: Step) -> list[Done]:
        """One step of every sentence from ``step``, a step of the whole decoder (this pool reads its rows)."""
        if not self.checked:
            _check_vocab(self.bans, step)
            self.checked = True
        beams = self.beams
        self.generated += 1
        generated, max_generated = self.generated, self.max_length - 1
        forces = self.settings.forced_eos_token_id is not None

        # 1-2. The candidates of every sentence: from its rows' best few (ties: from all its scores); on its
        #      forced last step, the forced token (that step's decoder output is not read).
        cand_scores, cand_rows, cand_tokens, tied = self._from_top(step)
        # (beam_steps forces the last token once the vocabulary is known, from its second step on)
        forced = (generated == max_generated) & (generated > 1) if forces else np.zeros(len(generated), dtype=bool)
        for s in np.flatnonzero(tied | forced).tolist():
            scores, parents, tokens = self._one_sentence(s, step, bool(forced[s]))
            cand_scores[s], cand_rows[s], cand_tokens[s] = scores[0], parents[0] + s * beams, tokens[0]

        # 3. A candidate stops when it ends with eos or reaches max_length.
        cand_stops = (cand_tokens == self.settings.eos_token_id) | (generated >= max_generated)[:, None]

        # 4. Next running beams: the best num_beams candidates, stopped ones pushed down by -1e9.
        running_candidates = np.where(cand_stops, cand_scores + _IMPOSSIBLE, cand_scores)
        pick = torch_top_k(running_candidates, beams)
        self.running_scores = _take(running_candidates, pick)
        parent_rows = _take(cand_rows, pick).ravel()
        last = _take(cand_tokens, pick).ravel()

        # 5. Finished slots: stopped candidates among the first num_beams, score / length ** length_penalty,
        #    merged with the kept ones; keep the best num_beams.
        just_finished = cand_stops.copy()
        just_finished[:, beams:] = False
        penalised = cand_scores / self._powers(generated)[:, None]
        penalised = np.where(just_finished, penalised, penalised + _IMPOSSIBLE)
        merged_scores = np.concatenate([self.kept_scores, penalised], axis=1)
        order = torch_top_k(merged_scores, beams)
        self.kept_scores = _take(merged_scores, order)
        self.kept_finished = _take(np.concatenate([self.kept_finished, just_finished], axis=1), order)
        self._store_kept(order, cand_rows, cand_tokens)

        # 6. Extend the running beams' histories.
        self.history = self.history[parent_rows]
        self.history[np.arange(len(parent_rows)), np.repeat(generated, beams)] = last
        self.last = last

        # 7. Early-stop heuristic: can the best running beam still beat the worst finished slot?
        best_length = max_generated if self.never_stops_early else generated
        best_possible = self.running_scores[:, :1] / self._powers(best_length)[:, None]
        worst_kept = np.where(self.kept_finished, self.kept_scores.min(axis=1, keepdims=True), _IMPOSSIBLE)
        self.can_improve &= (best_possible > worst_kept).any(axis=1)

        # 8. A sentence is done when it cannot improve, when early_stopping=True and all its slots are finished,
        #    or at max_length (or when cancelled); its best slot is the answer.
        done = ~self.can_improve | (generated >= max_generated) | self.cancelled
        if self.stop_when_full:
            done |= self.kept_finished.all(axis=1)
        found: list[Done] = []
        for s in np.flatnonzero(done).tolist():
            best = tuple(self.kept_tokens[s, 0, : self.kept_lengths[s, 0]].tolist())
            hypotheses = [Hypothesis(best, float(self.kept_scores[s, 0]))]
            found.append((self.tags[s], hypotheses, int(self.lengths[s]), bool(self.cancelled[s])))

        # 9. The rows follow the new running beams (the lane moves them into place), done sentences' left out.
        keep = ~done
        keep_rows = np.repeat(keep, beams)
        self.rows = self.rows[parent_rows][keep_rows]
        if found:
            self.history, self.last = self.history[keep_rows], self.last[keep_rows]
            self.tags = [tag for tag, k in zip(self.tags, keep.tolist(), strict=True) if k]
            for name in ("lengths", "cancelled", "max_length", "generated", "running_scores", "kept_scores"):
                setattr(self, name, getattr(self, name)[keep])
            for name in ("kept_finished", "kept_tokens", "kept_lengths", "can_improve"):
                setattr(self, name, getattr(self, name)[keep])
        self._ask()
        return found

    def _powers(self, lengths: np.ndarray) -> np.ndarray:
        """``np.float32(length ** length_penalty)`` of every sentence, as beam_steps computes it for one."""
        return np.array([np.float32(length**self.lp) for length in lengths.tolist()], dtype=np.float32)

    def _from_top(self, step: Step) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every sentence's candidates from its rows' best 2k+1 allowed tokens (``_beam_candidates_from_top`` on
        each sentence) and whether the sentence needs all its scores instead (ties among its best, or too few
        tokens returned)."""
        beams = self.beams
        need = 2 * beams + 1
        rows = self.rows
        count = len(self.tags)
        k = min(self.request.top_k if self.request is not None else need, step.top_ids.shape[1])  # (as asked)
        top = Step(None, step.log_probs, step.top_log_probs[rows, :k], step.top_ids[rows, :k])
        ids, values = _best_allowed(top, self.bans, need)
        if ids.shape[1] < need:
            empty = np.zeros((count, 2 * beams), dtype=np.int64)
            return empty.astype(np.float32), empty, empty.copy(), np.ones(count, dtype=bool)
        if self.settings.renormalize_logits:
            mass = _log_allowed_mass(step, self.bans, rows)  # (reads the banned columns of its rows only)
            values = values - mass[:, None]
        totals = (values + self.running_scores.reshape(-1, 1)).reshape(count, beams * need)
        order = (-totals).argsort(axis=1, kind="stable")[:, :need]
        best = _take(totals, order)
        tied = np.any(best[:, 1:] >= best[:, :-1], axis=1)
        chosen = order[:, : 2 * beams]
        cand_rows = chosen // need + row_index(count) * beams
        cand_tokens = _take(ids.reshape(count, beams * need), chosen)
        return best[:, : 2 * beams], cand_rows, cand_tokens, tied

    def _one_sentence(self, s: int, step: Step, forced: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sentence ``s``'s candidates as beam_steps finds them for it alone when its best few cannot decide
        them, or on its forced last step (rows relative to the sentence's first)."""
        beams = self.beams
        settings = replace(self.settings, max_length=int(self.max_length[s]))
        running = self.running_scores[s : s + 1]
        mine = slice(s * beams, (s + 1) * beams)
        history = self.history[mine, : int(self.generated[s])]
        if forced:
            candidates = _forced_candidates(running, settings)
            if candidates is not None:
                return candidates
            log_probs = log_softmax(np.zeros((beams, step.log_probs.shape[1]), dtype=np.float32))
        else:
            log_probs = step.log_probs[self.rows[mine]]
        return _beam_candidates(history, log_probs, running, settings)

    def _store_kept(self, order: np.ndarray, cand_rows: np.ndarray, cand_tokens: np.ndarray) -> None:
        """Finished slots' tokens after the merge: slot j of a sentence becomes entry order[j] of [its kept slots,
        its candidates] (``_store_kept`` of decoding, with a length of its own for every sentence)."""
        beams = self.beams
        changed = (order != row_index(beams)[:, 0]).any(axis=1).nonzero()[0]
        if not len(changed):
            return
        picks = order[changed]
        from_kept = np.minimum(picks, beams - 1)
        tokens = self.kept_tokens[changed[:, None], from_kept]
        lengths = self.kept_lengths[changed[:, None], from_kept]
        slot, j = np.nonzero(picks >= beams)
        owner = changed[slot]
        candidate = picks[slot, j] - beams
        generated = self.generated[owner]
        width = tokens.shape[2]
        # (a whole history row is copied; what lies beyond the slot's length is never read)
        tokens[slot, j] = self.history[cand_rows[owner, candidate], 1 : width + 1]
        tokens[slot, j, generated - 1] = cand_tokens[owner, candidate]
        lengths[slot, j] = generated
        self.kept_tokens[changed], self.kept_lengths[changed] = tokens, lengths
