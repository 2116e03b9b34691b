"""Greedy search and beam search in numpy, token-identical to ``transformers`` ``generate()`` (5.23.0).

The model is hidden behind :class:`IncrementalDecoder`: feed one token per row, get next-token logits back.
Everything else -- logits processors, beam bookkeeping, stopping -- is reproduced here step for step, in
float32 like HF's torch code, so that the same logits give the same tokens and the same scores.

Read top to bottom:

1. the decoder protocol and the result type;
2. the logits processors, one small function each, applied in the order HF builds them
   (repetition penalty, no-repeat n-gram, bad words, min length, forced eos, renormalization);
3. :func:`greedy_search`, :func:`beam_search` and :func:`generate`.

Both searches drop the rows of finished sentences from the running decoder, so a finished sentence costs
nothing. HF keeps computing those rows, but their results can no longer change, so the output is the same.

Lengths follow HF's encoder-decoder convention: every row starts with ``decoder_start_token_id`` and
``max_length`` counts it, so at most ``max_length - 1`` tokens are generated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from enzh.options import DecodingSettings

# HF's stand-in for "impossible" in beam bookkeeping (exactly representable in float32).
_IMPOSSIBLE = np.float32(-1.0e9)


class IncrementalDecoder(Protocol):
    """A running batch of decoder rows with their key/value caches (one row = one hypothesis)."""

    def step(self, tokens: np.ndarray) -> np.ndarray:
        """Feed one token per row (int64, shape [rows]); return next-token logits, float32 [rows, vocab]."""
        ...

    def reorder(self, rows: np.ndarray) -> None:
        """Rebuild the batch so that new row i is old row rows[i] (int64 index array; may drop, keep or
        repeat rows). Also used to drop finished sentences from the running batch."""
        ...


@dataclass(frozen=True)
class Hypothesis:
    """One decoded sentence."""

    token_ids: tuple[int, ...]
    """Generated ids without the decoder start token; with the final eos if one was generated; no padding."""
    score: float
    """Greedy: sum of the chosen tokens' log-probabilities (log-softmax of the processed scores).
    Beam: HF's sequence score, i.e. the summed log-probabilities divided by ``length ** length_penalty``."""


# ----------------------------------------------------------------------------------------------------------
# Logits processors. Each takes the token history of every row (start token included, int64 [rows, length])
# and the scores (float32 [rows, vocab]) and returns new scores, like HF's LogitsProcessor.__call__.
# ----------------------------------------------------------------------------------------------------------


def repetition_penalty(history: np.ndarray, scores: np.ndarray, penalty: float) -> np.ndarray:
    """Make every token already in the row (the start token too) less likely: negative scores are multiplied
    by ``penalty``, positive ones divided by it. Applied once per token however often it occurred."""
    rows = np.arange(history.shape[0])[:, None]
    seen = scores[rows, history]
    factor = np.float32(penalty)
    out = scores.copy()
    out[rows, history] = np.where(seen < 0, seen * factor, seen / factor)
    return out


def no_repeat_ngram(history: np.ndarray, scores: np.ndarray, size: int) -> np.ndarray:
    """Ban every token that would complete an n-gram (n = ``size``) already present in the row."""
    length = history.shape[1]
    if length < size:
        return scores
    # The next token completes an n-gram whose first n-1 tokens are the row's current suffix; every earlier
    # window that starts with that suffix bans its own last token.
    suffix = history[:, length - size + 1 :]
    windows = np.lib.stride_tricks.sliding_window_view(history, size, axis=1)
    matches = (windows[:, :, :-1] == suffix[:, None, :]).all(axis=2)
    rows, starts = np.nonzero(matches)
    out = scores.copy()
    out[rows, windows[rows, starts, -1]] = -np.inf
    return out


def bad_words(history: np.ndarray, scores: np.ndarray, sequences: tuple[tuple[int, ...], ...], eos: int) -> np.ndarray:
    """Ban the last token of every bad sequence whose other tokens end the row (single tokens: always).
    Like HF, a bad sequence that is exactly ``[eos]`` is ignored."""
    vocab = scores.shape[1]
    out = scores.copy()
    for sequence in dict.fromkeys(sequences):
        if sequence == (eos,):
            continue
        if max(sequence) >= vocab:
            raise ValueError(f"bad_words_ids {sequence} has ids outside the model vocabulary ({vocab})")
        *prefix, last = sequence
        if len(prefix) > history.shape[1]:
            continue
        if prefix:
            rows = (history[:, history.shape[1] - len(prefix) :] == prefix).all(axis=1)
            out[rows, last] = -np.inf
        else:
            out[:, last] = -np.inf
    return out


def min_length(history: np.ndarray, scores: np.ndarray, length: int, eos: int) -> np.ndarray:
    """Forbid eos while the row (start token included) is shorter than ``length``."""
    if history.shape[1] >= length:
        return scores
    out = scores.copy()
    out[:, eos] = -np.inf
    return out


def forced_eos(history: np.ndarray, scores: np.ndarray, max_length: int, eos: int) -> np.ndarray:
    """On the last possible step (one token short of ``max_length``) only ``eos`` is allowed, with score 0."""
    if history.shape[1] != max_length - 1:
        return scores
    out = np.full_like(scores, -np.inf)
    out[:, eos] = 0.0
    return out


def log_softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float32, computed as torch does: ``(x - max) - log(sum(exp(x - max)))``."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def process_scores(history: np.ndarray, scores: np.ndarray, settings: DecodingSettings) -> np.ndarray:
    """Apply the enabled processors in the order HF's ``_get_logits_processor`` builds them."""
    if settings.repetition_penalty != 1.0:
        scores = repetition_penalty(history, scores, settings.repetition_penalty)
    if settings.no_repeat_ngram_size > 0:
        scores = no_repeat_ngram(history, scores, settings.no_repeat_ngram_size)
    if settings.bad_words_ids:
        scores = bad_words(history, scores, settings.bad_words_ids, settings.eos_token_id)
    if settings.min_length > 0:
        scores = min_length(history, scores, settings.min_length, settings.eos_token_id)
    if settings.forced_eos_token_id is not None:
        scores = forced_eos(history, scores, settings.max_length, settings.forced_eos_token_id)
    if settings.renormalize_logits:
        scores = log_softmax(scores)
    return scores


# ----------------------------------------------------------------------------------------------------------
# Search strategies.
# ----------------------------------------------------------------------------------------------------------


def greedy_search(decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings) -> list[Hypothesis]:
    """Pick the highest processed score at every step (HF ``_sample`` with ``do_sample=False``)."""
    results: list[Hypothesis | None] = [None] * batch_size
    sentence = np.arange(batch_size)  # source sentence of each running row
    history = np.full((batch_size, 1), settings.decoder_start_token_id, dtype=np.int64)
    total = np.zeros(batch_size, dtype=np.float32)
    while True:
        # 1. Next-token logits of every running row, then the logits processors (on raw logits here).
        logits = np.asarray(decoder.step(np.ascontiguousarray(history[:, -1])), dtype=np.float32)
        scores = process_scores(history, logits, settings)
        # 2. Argmax (first index on ties, like torch.argmax) and its log-probability.
        tokens = scores.argmax(axis=1)
        log_probs = scores if settings.renormalize_logits else log_softmax(scores)
        total = total + log_probs[np.arange(len(tokens)), tokens]
        history = np.concatenate([history, tokens[:, None]], axis=1)
        # 3. A row is finished when it produced eos or reached max_length.
        finished = (tokens == settings.eos_token_id) | (history.shape[1] >= settings.max_length)
        for row in np.flatnonzero(finished):
            results[sentence[row]] = Hypothesis(tuple(history[row, 1:].tolist()), float(total[row]))
        if finished.all():
            break
        # 4. Drop the finished rows from the decoder.
        if finished.any():
            keep = np.flatnonzero(~finished)
            decoder.reorder(keep)
            sentence, history, total = sentence[keep], history[keep], total[keep]
    return [hypothesis for hypothesis in results if hypothesis is not None]


def beam_search(decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings) -> list[Hypothesis]:
    """HF's (vectorized, 2025+) beam search; returns the best finished hypothesis of every sentence.

    Per sentence it keeps ``num_beams`` running beams and ``num_beams`` slots of finished hypotheses. Each
    step takes the best ``2 * num_beams`` (beam, token) continuations; those that stop (eos or max_length) and
    rank among the first ``num_beams`` compete for the finished slots with a length-penalised score, the best
    ``num_beams`` that do not stop become the next running beams.
    """
    num_beams = settings.num_beams
    num_candidates = 2 * num_beams  # HF: max(2, 1 + number of eos ids) * num_beams
    max_generated = settings.max_length - 1

    # Each sentence starts as num_beams identical rows; all but the first get an impossible score so the first
    # step expands only one of them.
    decoder.reorder(np.repeat(np.arange(batch_size, dtype=np.int64), num_beams))
    results: list[Hypothesis | None] = [None] * batch_size
    sentence = np.arange(batch_size)  # source sentence of each active sentence slot
    history = np.full((batch_size * num_beams, 1), settings.decoder_start_token_id, dtype=np.int64)
    running_scores = np.zeros((batch_size, num_beams), dtype=np.float32)
    running_scores[:, 1:] = _IMPOSSIBLE
    # Finished slots, best first ("beam_scores", "sequences" and "is_sent_finished" in HF).
    kept_scores = np.full((batch_size, num_beams), _IMPOSSIBLE, dtype=np.float32)
    kept_finished = np.zeros((batch_size, num_beams), dtype=bool)
    kept_tokens = np.zeros((batch_size, num_beams, max_generated), dtype=np.int64)
    kept_lengths = np.zeros((batch_size, num_beams), dtype=np.int64)
    can_improve = np.ones(batch_size, dtype=bool)  # HF: is_early_stop_heuristic_unsatisfied

    while True:
        active = len(sentence)
        generated = history.shape[1]  # tokens generated once this step's token is appended

        # 1. Log-softmax of the logits, then the logits processors on those log-probabilities.
        logits = np.asarray(decoder.step(np.ascontiguousarray(history[:, -1])), dtype=np.float32)
        log_probs = process_scores(history, log_softmax(logits), settings)
        vocab = log_probs.shape[1]

        # 2. Add each beam's running score, flatten (beam, token) and keep the best 2 * num_beams candidates.
        totals = (log_probs.reshape(active, num_beams, vocab) + running_scores[:, :, None]).reshape(active, -1)
        top = _top_k(totals, num_candidates)
        cand_scores = np.take_along_axis(totals, top, axis=1)
        cand_rows = top // vocab + np.arange(active)[:, None] * num_beams  # parent row in `history`
        cand_tokens = top % vocab

        # 3. A candidate stops when it ends with eos or reaches max_length.
        cand_stops = (cand_tokens == settings.eos_token_id) | (generated >= max_generated)

        # 4. Next running beams: the best num_beams candidates, stopped ones pushed down by -1e9.
        running_candidates = np.where(cand_stops, cand_scores + _IMPOSSIBLE, cand_scores)
        pick = _top_k(running_candidates, num_beams)
        running_scores = np.take_along_axis(running_candidates, pick, axis=1)
        parent_rows = np.take_along_axis(cand_rows, pick, axis=1).ravel()
        next_tokens = np.take_along_axis(cand_tokens, pick, axis=1).ravel()

        # 5. Finished slots: stopped candidates among the first num_beams, score / length ** length_penalty
        #    (length = generated tokens, eos included), merged with the kept ones; keep the best num_beams.
        #    (HF also masks sentences whose slots are full under early_stopping=True or that cannot improve;
        #    those sentences were already dropped below, so the masks never apply here.)
        just_finished = cand_stops.copy()
        just_finished[:, num_beams:] = False
        penalised = cand_scores / np.float32(generated**settings.length_penalty)
        penalised = np.where(just_finished, penalised, penalised + _IMPOSSIBLE)
        cand_sequences = np.zeros((active, num_candidates, max_generated), dtype=np.int64)
        cand_sequences[:, :, : generated - 1] = history[cand_rows, 1:]
        cand_sequences[:, :, generated - 1] = cand_tokens
        merged_scores = np.concatenate([kept_scores, penalised], axis=1)
        order = _top_k(merged_scores, num_beams)
        kept_scores = np.take_along_axis(merged_scores, order, axis=1)
        kept_finished = np.take_along_axis(np.concatenate([kept_finished, just_finished], axis=1), order, axis=1)
        cand_lengths = np.full((active, num_candidates), generated, dtype=np.int64)
        kept_lengths = np.take_along_axis(np.concatenate([kept_lengths, cand_lengths], axis=1), order, axis=1)
        kept_tokens = np.take_along_axis(
            np.concatenate([kept_tokens, cand_sequences], axis=1), order[:, :, None], axis=1
        )

        # 6. Extend the running beams' histories.
        history = np.concatenate([history[parent_rows], next_tokens[:, None]], axis=1)

        # 7. Early-stop heuristic: can the best running beam still beat the worst finished slot? With
        #    early_stopping="never" and a positive length penalty HF assumes it could grow to max_length.
        if settings.early_stopping == "never" and settings.length_penalty > 0.0:
            best_length = max_generated
        else:
            best_length = generated
        best_possible = running_scores[:, :1] / np.float32(best_length**settings.length_penalty)
        worst_kept = np.where(kept_finished, kept_scores.min(axis=1, keepdims=True), _IMPOSSIBLE)
        can_improve &= (best_possible > worst_kept).any(axis=1)

        # 8. A sentence is done when it cannot improve, when early_stopping=True and all its slots are
        #    finished, or at max_length; its best slot is the answer.
        done = ~can_improve | (kept_finished.all(axis=1) & (settings.early_stopping is True))
        if generated >= max_generated:
            done[:] = True
        for slot in np.flatnonzero(done):
            tokens = kept_tokens[slot, 0, : kept_lengths[slot, 0]]
            results[sentence[slot]] = Hypothesis(tuple(tokens.tolist()), float(kept_scores[slot, 0]))
        if done.all():
            break

        # 9. Reorder the decoder to the new running beams, leaving out the rows of done sentences.
        keep = np.flatnonzero(~done)
        keep_rows = np.repeat(~done, num_beams)
        decoder.reorder(parent_rows[keep_rows])
        history = history[keep_rows]
        sentence, can_improve, running_scores = sentence[keep], can_improve[keep], running_scores[keep]
        kept_scores, kept_finished = kept_scores[keep], kept_finished[keep]
        kept_tokens, kept_lengths = kept_tokens[keep], kept_lengths[keep]
    return [hypothesis for hypothesis in results if hypothesis is not None]


def generate(decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings) -> list[Hypothesis]:
    """Greedy search for ``num_beams == 1``, beam search otherwise (as HF dispatches without sampling)."""
    if settings.num_beams > 1:
        return beam_search(decoder, batch_size, settings)
    return greedy_search(decoder, batch_size, settings)


def _top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k largest values of every row, largest first; equal values: lower index first.

    (torch.topk leaves the order of equal values unspecified; exact ties between real scores do not occur in
    practice, and ties between -inf/-1e9 placeholders never decide the output.)
    """
    kth_largest = np.partition(values, -k, axis=1)[:, -k]
    result = np.empty((values.shape[0], k), dtype=np.int64)
    for row, threshold in enumerate(kth_largest):
        # Only columns at least as large as the k-th largest can make it; a stable sort keeps ties in index
        # order.
        columns = np.flatnonzero(values[row] >= threshold)
        result[row] = columns[np.argsort(-values[row, columns], kind="stable")[:k]]
    return result
