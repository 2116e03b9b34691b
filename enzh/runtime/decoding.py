"""Greedy search and beam search in numpy, token-identical to ``transformers`` ``generate()`` (5.23.0).

The model is hidden behind :class:`IncrementalDecoder`: feed one token per row, get next-token logits back.
Everything else -- logits processors, beam bookkeeping, stopping -- is reproduced here step for step, in
float32 like HF's torch code, so that the same logits give the same tokens and the same scores.

Read top to bottom:

1. the decoder protocol (a step returns all scores and each row's best few) and the result type;
2. the logits processors (:mod:`enzh.runtime.processors`), applied in the order HF builds them;
3. the fast path: when the processors only ban fixed tokens, a step is decided from each row's best few
   log-probabilities; exact ties and row-dependent processors fall back to all scores;
4. :func:`greedy_search`, :func:`beam_search` and :func:`generate` (n-best: :func:`generate_nbest`);
5. the top-k used by beam search (:mod:`enzh.runtime.topk`) reproduces the order ``torch.topk`` gives ties.

Both searches drop the rows of finished sentences from the running decoder, so a finished sentence costs
nothing. HF keeps computing those rows, but their results can no longer change, so the output is the same.

Lengths follow HF's encoder-decoder convention: every row starts with ``decoder_start_token_id`` and
``max_length`` counts it, so at most ``max_length - 1`` tokens are generated.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from enzh.runtime.options import DecodingSettings
from enzh.runtime.processors import fixed_bans, log_softmax, process_scores
from enzh.runtime.topk import row_index, torch_top_k

# HF's stand-in for "impossible" in beam bookkeeping (exactly representable in float32).
_IMPOSSIBLE = np.float32(-1.0e9)


@dataclass(frozen=True)
class Step:
    """What one decoder step returns for every row. The arrays may be views of buffers that the next step
    overwrites: use them before stepping again. ``log_probs`` belongs to the caller until then (a search may
    process it in place)."""

    logits: np.ndarray | None
    """float32 [rows, vocab]: next-token logits (None when the step was asked not to keep them)."""
    log_probs: np.ndarray
    """float32 [rows, vocab]: log_softmax(logits)."""
    top_log_probs: np.ndarray
    """float32 [rows, k]: the k largest log_probs of every row, largest first."""
    top_ids: np.ndarray
    """int64 [rows, k]: their token ids (equal values: lower id first)."""

    @classmethod
    def from_logits(cls, logits: np.ndarray, top_k: int, keep_logits: bool = True) -> Step:
        """A step computed in numpy from logits (for decoders that only produce logits)."""
        logits = np.asarray(logits, dtype=np.float32)
        log_probs = log_softmax(logits)
        ids = np.argsort(-log_probs, axis=1, kind="stable")[:, : min(top_k, logits.shape[1])]
        kept = logits if keep_logits else None
        return cls(kept, log_probs, np.take_along_axis(log_probs, ids, axis=1), ids)


class IncrementalDecoder(Protocol):
    """A running batch of decoder rows with their key/value caches (one row = one hypothesis)."""

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        """Feed one token per row (int64, shape [rows]); return the next-token scores with the ``top_k`` best
        log-probabilities of every row (and the raw logits unless ``logits=False``)."""
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


@dataclass(frozen=True)
class StepRequest:
    """A search asks for one decoder step: ``decoder.step(tokens, top_k, logits=logits)``; it is sent the Step."""

    tokens: np.ndarray
    top_k: int
    logits: bool


@dataclass(frozen=True)
class Reorder:
    """A search asks for ``decoder.reorder(rows)``."""

    rows: np.ndarray


@dataclass(frozen=True)
class Finished:
    """A search's sentence ``sentence`` is done: its best hypotheses, best first."""

    sentence: int
    hypotheses: list[Hypothesis]


# A search as a generator: it yields what it needs of the decoder (StepRequest: it is sent the Step back;
# Reorder) and each sentence's result as soon as the sentence is done (Finished). The same search runs on a
# decoder of its own (run_search) or beside others in a running batch (enzh.runtime.running).
Search = Generator[StepRequest | Reorder | Finished, Step | None, None]


def run_search(search: Search, decoder: IncrementalDecoder, batch_size: int) -> list[list[Hypothesis]]:
    """Drive ``search`` on ``decoder`` to its end; every sentence's hypotheses, in order."""
    results: list[list[Hypothesis] | None] = [None] * batch_size
    reply: Step | None = None
    while True:
        try:
            op = search.send(reply)
        except StopIteration:
            break
        reply = None
        if isinstance(op, StepRequest):
            reply = decoder.step(op.tokens, op.top_k, logits=op.logits)
        elif isinstance(op, Reorder):
            decoder.reorder(op.rows)
        else:
            results[op.sentence] = op.hypotheses
    return [r for r in results if r is not None]


# ----------------------------------------------------------------------------------------------------------
# Logits processors. Each takes the token history of every row (start token included, int64 [rows, length])
# and the scores (float32 [rows, vocab]), like HF's LogitsProcessor.__call__. To avoid copying a
# [rows, vocab] array per processor they write into ``scores`` and return it.
# ----------------------------------------------------------------------------------------------------------


def _take(values: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``np.take_along_axis(values, columns, axis=1)`` for 2-D arrays, without its per-call overhead."""
    return values[row_index(values.shape[0]), columns]


def _check_vocab(bans: tuple[int, ...], step: Step) -> tuple[int, ...]:
    vocab = step.log_probs.shape[1]
    for token in bans:
        if token >= vocab:
            raise ValueError(f"bad_words_ids {(token,)} has ids outside the model vocabulary ({vocab})")
    return bans


def _best_allowed(step: Step, bans: tuple[int, ...], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``n`` (or fewer, when the step returned too few) allowed tokens of every row and their
    log-probabilities, best first."""
    ids, values = step.top_ids, step.top_log_probs
    if bans:
        allowed = ids != bans[0]
        for token in bans[1:]:
            allowed &= ids != token
        if not allowed[:, :n].all():  # a banned token among some row's best n: move it behind the others
            order = np.argsort(~allowed, axis=1, kind="stable")  # allowed first, order kept
            ids, values = _take(ids, order), _take(values, order)
            n = min(n, int(allowed.sum(axis=1).min()))
    return ids[:, :n], values[:, :n]


def _log_allowed_mass(step: Step, bans: tuple[int, ...], rows: np.ndarray | None = None) -> np.ndarray:
    """log(sum of the probabilities of the allowed tokens) per row (of ``rows`` of the step, when given): what
    renormalizing after the bans subtracts. log1p(-banned mass), or, when the banned mass is large enough for that
    to lose precision, the log-sum-exp of the allowed log-probabilities."""
    log_probs = step.log_probs
    if not bans:
        return np.zeros(len(log_probs) if rows is None else len(rows), dtype=np.float32)
    columns = list(bans)
    # The banned columns of every row (a few values a row; never a copy of whole rows), then the rows asked for.
    if len(columns) == 1:  # the usual case (pad banned): a column, no sum over one value
        banned = np.exp(log_probs[:, columns[0]].astype(np.float64))
    else:
        banned = np.exp(log_probs[:, columns].astype(np.float64)).sum(axis=1)
    if rows is not None:
        banned = banned[rows]
    large = banned > 0.01
    if not large.any():
        return np.log1p(-banned).astype(np.float32)
    result = np.log1p(-np.where(large, 0.0, banned))
    for row in np.flatnonzero(large):
        allowed = log_probs[row if rows is None else rows[row]].copy()
        allowed[columns] = -np.inf
        top = allowed.max()
        result[row] = top + np.log(np.exp(allowed - top).sum())
    return result.astype(np.float32)


def _beam_candidates_from_top(
    step: Step, bans: tuple[int, ...], running_scores: np.ndarray, settings: DecodingSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Beam candidates from each row's best 2k+1 allowed tokens (k = num_beams), or None when that cannot
    decide them exactly: too few tokens returned, or ties among the best 2k+1 (torch.topk orders equal values
    its own way, which :func:`torch_top_k` reproduces from all scores)."""
    num_beams = settings.num_beams
    need = 2 * num_beams + 1
    ids, values = _best_allowed(step, bans, need)
    if ids.shape[1] < need:
        return None
    if settings.renormalize_logits:
        values = values - _log_allowed_mass(step, bans)[:, None]
    active = running_scores.shape[0]
    # The best 2k of all (beam, token) pairs of a sentence are among its beams' best 2k + 1 each.
    totals = (values + running_scores.reshape(-1, 1)).reshape(active, num_beams * need)
    order = (-totals).argsort(axis=1, kind="stable")[:, :need]
    best = _take(totals, order)
    if np.any(best[:, 1:] >= best[:, :-1]):
        return None
    top = order[:, : 2 * num_beams]
    cand_rows = top // need + row_index(active) * num_beams
    cand_tokens = _take(ids.reshape(active, num_beams * need), top)
    return best[:, : 2 * num_beams], cand_rows, cand_tokens


def _forced_candidates(
    running_scores: np.ndarray, settings: DecodingSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Beam candidates of the forced last step: every beam continues with the forced token at log-probability
    0, best beam first; the other candidates score -inf (they can never be kept). None when running scores tie
    (their order is torch.topk's)."""
    num_beams = settings.num_beams
    active = running_scores.shape[0]
    order = np.argsort(-running_scores, axis=1, kind="stable")
    best = _take(running_scores, order)
    if np.any(best[:, 1:] >= best[:, :-1]):
        return None
    scores = np.concatenate([best, np.full((active, num_beams), -np.inf, dtype=np.float32)], axis=1)
    rows = np.concatenate([order, order], axis=1) + np.arange(active)[:, None] * num_beams
    tokens = np.full((active, 2 * num_beams), settings.forced_eos_token_id, dtype=np.int64)
    return scores, rows, tokens


def _beam_candidates(
    history: np.ndarray, log_probs: np.ndarray, running_scores: np.ndarray, settings: DecodingSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Beam candidates from all scores: the processors on the log-probabilities (modified in place), the
    running scores added, the best 2k of each sentence's (beam, token) pairs in torch.topk's order."""
    num_beams = settings.num_beams
    log_probs = process_scores(history, log_probs, settings)
    vocab = log_probs.shape[1]
    active = running_scores.shape[0]
    log_probs += running_scores.reshape(-1, 1)
    totals = log_probs.reshape(active, num_beams * vocab)
    top = torch_top_k(totals, 2 * num_beams)
    cand_rows = top // vocab + np.arange(active)[:, None] * num_beams
    return _take(totals, top), cand_rows, top % vocab


# ----------------------------------------------------------------------------------------------------------
# Search strategies.
# ----------------------------------------------------------------------------------------------------------


def greedy_search(decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings) -> list[Hypothesis]:
    """Pick the highest processed score at every step (HF ``_sample`` with ``do_sample=False``)."""
    return [found[0] for found in run_search(greedy_steps(batch_size, settings), decoder, batch_size)]


def greedy_steps(batch_size: int, settings: DecodingSettings, cancelled: np.ndarray | None = None) -> Search:
    """:func:`greedy_search` as a :data:`Search`. ``cancelled`` (bool per sentence, may be set while it runs):
    sentences to stop after the current step (their result is whatever they have, for nobody)."""
    if batch_size == 0:
        return
    sentence = np.arange(batch_size)  # source sentence of each running row
    max_length, eos = settings.max_length, settings.eos_token_id
    # Token history of every running row, start token included: its first `length` columns are filled.
    history = np.empty((batch_size, max_length), dtype=np.int64)
    history[:, 0] = settings.decoder_start_token_id
    length = 1
    tokens = history[:, 0].copy()
    total = np.zeros(batch_size, dtype=np.float32)
    bans_for = _BansByLength(settings)
    forced_length = max_length - 1 if settings.forced_eos_token_id is not None else -1
    while True:
        # 1. The next token of every running row and its log-probability after the logits processors: from the
        #    step's best few when the processors only ban fixed tokens, else from all scores.
        if length == forced_length:
            # Only the forced token is left, with log-probability 0: no decoder step needed.
            tokens = np.full(len(tokens), settings.forced_eos_token_id, dtype=np.int64)
            log_probs = np.zeros(len(tokens), dtype=np.float32)
        else:
            bans = bans_for(length)
            # Raw logits only for the processors that need them (repetition penalty depends on their sign).
            step = yield StepRequest(tokens, 1 + len(bans or ()), bans is None)
            assert step is not None
            best = _greedy_from_top(step, bans_for.checked(bans, step)) if bans is not None else None
            if best is None:
                # Fixed bans only: processing the log-probabilities instead of the logits picks the same token
                # with the same score (log-softmax is shift invariant).
                scores = step.logits if step.logits is not None else step.log_probs
                tokens, log_probs = _greedy_from_scores(history[:, :length], scores.copy(), settings)
            else:
                tokens, log_probs = best
        total += log_probs
        history[:, length] = tokens
        length += 1
        # 2. A row is finished when it produced eos or reached max_length.
        if length >= max_length:
            finished = np.ones(len(tokens), dtype=bool)
        else:
            finished = tokens == eos
            if cancelled is not None:
                finished |= cancelled[sentence]
            if not finished.any():
                continue
        for row in finished.nonzero()[0].tolist():
            yield Finished(int(sentence[row]), [Hypothesis(tuple(history[row, 1:length].tolist()), float(total[row]))])
        if finished.all():
            break
        # 3. Drop the finished rows from the decoder (rows from the end fill their places: fewest rows move).
        keep = _fill_from_end(finished)
        yield Reorder(keep)
        sentence, history, total, tokens = sentence[keep], history[keep], total[keep], tokens[keep]


def _fill_from_end(finished: np.ndarray) -> np.ndarray:
    """The rows to keep when the ``finished`` ones are dropped, as few of them moved as possible: the running
    rows beyond the new row count take the places of the finished rows before it, the others stay put."""
    running = (~finished).nonzero()[0]
    count = len(running)
    keep = np.arange(count)
    keep[finished[:count].nonzero()[0]] = running[running >= count]
    return keep


class _BansByLength:
    """:func:`fixed_bans` for every step of one call, computed twice instead of once per step (the tokens it
    bans depend on the length only through ``length < min_length``, besides a forced first token), with their
    vocabulary check done once."""

    def __init__(self, settings: DecodingSettings) -> None:
        self.min_length = settings.min_length
        self.forced_first = settings.forced_bos_token_id is not None
        later = replace(settings, forced_bos_token_id=None)  # the bans of every step after the forced one
        self.early = fixed_bans(1, later) if settings.min_length > 1 else None
        self.late = fixed_bans(max(1, settings.min_length), later)
        self.vocab_checked: set[tuple[int, ...]] = set()

    def __call__(self, length: int) -> tuple[int, ...] | None:
        if length == 1 and self.forced_first:
            return None  # the forced first token: decided from all scores (every other one is -inf)
        return self.early if length < self.min_length else self.late

    def checked(self, bans: tuple[int, ...], step: Step) -> tuple[int, ...]:
        if bans not in self.vocab_checked:
            _check_vocab(bans, step)
            self.vocab_checked.add(bans)
        return bans


def _greedy_from_top(step: Step, bans: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """Every row's best allowed token and its log-probability renormalized over the allowed tokens, from the
    step's best few (None when they hold no allowed token for some row)."""
    ids, values = step.top_ids, step.top_log_probs
    first = ids[:, 0]
    if not bans:
        return first.copy(), values[:, 0].copy()
    banned = first == bans[0]
    for token in bans[1:]:
        banned |= first == token
    if banned.any():
        ids, values = _best_allowed(step, bans, 1)
        if ids.shape[1] == 0:
            return None
        first = ids[:, 0]
    else:
        values = values[:, :1]
    return first.copy(), values[:, 0] - _log_allowed_mass(step, bans)


def _greedy_from_scores(
    history: np.ndarray, logits: np.ndarray, settings: DecodingSettings
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy choice from all scores: the processors on the raw logits, argmax (first index on ties, like
    torch.argmax), and the chosen tokens' log-probabilities."""
    scores = process_scores(history, logits, settings)
    tokens = scores.argmax(axis=1)
    log_probs = scores if settings.renormalize_logits else log_softmax(scores)
    return tokens, log_probs[np.arange(len(tokens)), tokens]


def beam_search(decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings) -> list[Hypothesis]:
    """HF's (vectorized, 2025+) beam search; returns the best finished hypothesis of every sentence.

    Per sentence it keeps ``num_beams`` running beams and ``num_beams`` slots of finished hypotheses. Each
    step takes the best ``2 * num_beams`` (beam, token) continuations; those that stop (eos or max_length) and
    rank among the first ``num_beams`` compete for the finished slots with a length-penalised score, the best
    ``num_beams`` that do not stop become the next running beams.
    """
    return [best[0] for best in beam_search_nbest(decoder, batch_size, settings, 1)]


def check_num_return_sequences(num_return_sequences: int, num_beams: int) -> None:
    """HF's rule: at most ``num_beams`` hypotheses per sentence (greedy search: one)."""
    if isinstance(num_return_sequences, bool) or not isinstance(num_return_sequences, (int, np.integer)):
        raise TypeError(f"num_return_sequences must be an int, got {type(num_return_sequences).__name__}")
    if num_beams == 1 and num_return_sequences != 1:
        raise ValueError(
            f"num_return_sequences must be 1 with greedy search (num_beams=1), got {num_return_sequences}; "
            f"beam search with num_beams >= {max(2, num_return_sequences)} returns more"
        )
    if not 1 <= num_return_sequences <= num_beams:
        raise ValueError(
            f"num_return_sequences must be between 1 and num_beams ({num_beams}), got {num_return_sequences}"
        )


def beam_search_nbest(
    decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings, num_return_sequences: int
) -> list[list[Hypothesis]]:
    """:func:`beam_search` returning the best ``num_return_sequences`` finished hypotheses of every sentence,
    best first, as ``generate(num_return_sequences=N)`` orders them (with their ``sequences_scores``)."""
    check_num_return_sequences(num_return_sequences, settings.num_beams)
    return run_search(beam_steps(batch_size, settings, num_return_sequences), decoder, batch_size)


def beam_steps(
    batch_size: int, settings: DecodingSettings, num_return_sequences: int = 1, cancelled: np.ndarray | None = None
) -> Search:
    """:func:`beam_search_nbest` as a :data:`Search` (``cancelled``: as in :func:`greedy_steps`)."""
    # Long on purpose: one function per strategy, one comment per step, read top to bottom against HF's.
    if batch_size == 0:
        return
    num_beams = settings.num_beams
    num_candidates = 2 * num_beams  # HF: max(2, 1 + number of eos ids) * num_beams
    max_generated = settings.max_length - 1
    eos, length_penalty = settings.eos_token_id, settings.length_penalty
    forced_length = max_generated if settings.forced_eos_token_id is not None else -1
    bans_for = _BansByLength(settings)
    # Early-stop heuristic: with early_stopping="never" and a positive length penalty HF assumes the best
    # running beam could grow to max_length.
    never_stops_early = settings.early_stopping == "never" and length_penalty > 0.0
    stop_when_full = settings.early_stopping is True

    # Each sentence starts as num_beams identical rows; all but the first get an impossible score so the first
    # step expands only one of them.
    yield Reorder(np.repeat(np.arange(batch_size, dtype=np.int64), num_beams))
    sentence = np.arange(batch_size)  # source sentence of each active sentence slot
    # Token history of every running row, start token included: its first `generated` columns are filled.
    history = np.empty((batch_size * num_beams, settings.max_length), dtype=np.int64)
    history[:, 0] = settings.decoder_start_token_id
    last = history[:, 0].copy()  # every row's last token
    running_scores = np.zeros((batch_size, num_beams), dtype=np.float32)
    running_scores[:, 1:] = _IMPOSSIBLE
    # Finished slots, best first ("beam_scores", "sequences" and "is_sent_finished" in HF). Tokens and lengths
    # are kept per source sentence (they are not compacted when sentences are done), the rest per active slot.
    kept_scores = np.full((batch_size, num_beams), _IMPOSSIBLE, dtype=np.float32)
    kept_finished = np.zeros((batch_size, num_beams), dtype=bool)
    kept_tokens = np.zeros((batch_size, num_beams, max_generated), dtype=np.int64)
    kept_lengths = np.zeros((batch_size, num_beams), dtype=np.int64)
    can_improve = np.ones(batch_size, dtype=bool)  # HF: is_early_stop_heuristic_unsatisfied
    vocab = 0  # known after the first step
    generated = 0

    while True:
        generated += 1  # tokens generated once this step's token is appended (= history columns so far)

        # 1-2. Log-softmax, the logits processors, each beam's running score added; of all (beam, token) pairs
        #      the best 2 * num_beams are the candidates (cand_rows: their parent row in `history`).
        bans = bans_for(generated)
        candidates = None
        if vocab and generated == forced_length:
            candidates = _forced_candidates(running_scores, settings)  # no decoder step needed
            # (tied running scores: torch.topk's order decides, from a full row of scores; any scores will do)
            log_probs = log_softmax(np.zeros((len(last), vocab), dtype=np.float32)) if candidates is None else None
        elif bans is None:
            full = yield StepRequest(last, 1, False)
            assert full is not None
            log_probs = full.log_probs
        else:
            step = yield StepRequest(last, num_candidates + 1 + len(bans), False)
            assert step is not None
            candidates = _beam_candidates_from_top(step, bans_for.checked(bans, step), running_scores, settings)
            log_probs = step.log_probs
        if log_probs is not None:
            vocab = log_probs.shape[1]
        if candidates is None:
            assert log_probs is not None
            candidates = _beam_candidates(history[:, :generated], log_probs, running_scores, settings)
        cand_scores, cand_rows, cand_tokens = candidates

        # 3. A candidate stops when it ends with eos or reaches max_length.
        cand_stops = np.ones(cand_tokens.shape, dtype=bool) if generated >= max_generated else cand_tokens == eos

        # 4. Next running beams: the best num_beams candidates, stopped ones pushed down by -1e9.
        running_candidates = np.where(cand_stops, cand_scores + _IMPOSSIBLE, cand_scores)
        pick = torch_top_k(running_candidates, num_beams)
        running_scores = _take(running_candidates, pick)
        parent_rows = _take(cand_rows, pick).ravel()
        last = _take(cand_tokens, pick).ravel()

        # 5. Finished slots: stopped candidates among the first num_beams, score / length ** length_penalty
        #    (length = generated tokens, eos included), merged with the kept ones; keep the best num_beams.
        #    (HF also masks sentences whose slots are full under early_stopping=True or that cannot improve;
        #    those sentences were already dropped below, so the masks never apply here.)
        just_finished = cand_stops.copy()
        just_finished[:, num_beams:] = False
        penalised = cand_scores / np.float32(generated**length_penalty)
        penalised = np.where(just_finished, penalised, penalised + _IMPOSSIBLE)
        merged_scores = np.concatenate([kept_scores, penalised], axis=1)
        order = torch_top_k(merged_scores, num_beams)
        kept_scores = _take(merged_scores, order)
        kept_finished = _take(np.concatenate([kept_finished, just_finished], axis=1), order)
        _store_kept(kept_tokens, kept_lengths, sentence, order, history[:, :generated], cand_rows, cand_tokens)

        # 6. Extend the running beams' histories.
        history = history[parent_rows]
        history[:, generated] = last

        # 7. Early-stop heuristic: can the best running beam still beat the worst finished slot?
        best_length = max_generated if never_stops_early else generated
        best_possible = running_scores[:, :1] / np.float32(best_length**length_penalty)
        worst_kept = np.where(kept_finished, kept_scores.min(axis=1, keepdims=True), _IMPOSSIBLE)
        can_improve &= (best_possible > worst_kept).any(axis=1)

        # 8. A sentence is done when it cannot improve, when early_stopping=True and all its slots are
        #    finished, or at max_length; its best slot is the answer.
        if generated >= max_generated:
            done = np.ones(len(can_improve), dtype=bool)
        elif stop_when_full:
            done = ~can_improve | kept_finished.all(axis=1)
        else:
            done = ~can_improve
        if cancelled is not None:
            done |= cancelled[sentence]
        if not done.any():
            yield Reorder(parent_rows)  # 9. (nothing dropped)
            continue
        for slot in done.nonzero()[0].tolist():
            tokens, lengths = kept_tokens[sentence[slot]], kept_lengths[sentence[slot]]
            yield Finished(
                int(sentence[slot]),
                [
                    Hypothesis(tuple(tokens[j, : lengths[j]].tolist()), float(kept_scores[slot, j]))
                    for j in range(num_return_sequences)
                ],
            )
        if done.all():
            break

        # 9. Reorder the decoder to the new running beams, leaving out the rows of done sentences.
        keep = np.flatnonzero(~done)
        keep_rows = np.repeat(~done, num_beams)
        yield Reorder(parent_rows[keep_rows])
        history, last = history[keep_rows], last[keep_rows]
        sentence, can_improve, running_scores = sentence[keep], can_improve[keep], running_scores[keep]
        kept_scores, kept_finished = kept_scores[keep], kept_finished[keep]


def _store_kept(
    kept_tokens: np.ndarray,
    kept_lengths: np.ndarray,
    sentence: np.ndarray,
    order: np.ndarray,
    history: np.ndarray,
    cand_rows: np.ndarray,
    cand_tokens: np.ndarray,
) -> None:
    """Finished slots' tokens after the merge, in place: slot j of an active sentence becomes entry order[j]
    of [its kept slots, its candidates]. Only sentences whose slots changed are touched, and only the picked
    candidates' sequences are built (``history`` rows + the candidate token)."""
    num_beams = order.shape[1]
    changed = (order != row_index(num_beams)[:, 0]).any(axis=1).nonzero()[0]
    if not len(changed):
        return
    owners, picks = sentence[changed], order[changed]
    from_kept = np.minimum(picks, num_beams - 1)
    tokens = kept_tokens[owners[:, None], from_kept]
    lengths = kept_lengths[owners[:, None], from_kept]
    slot, j = np.nonzero(picks >= num_beams)
    candidate = picks[slot, j] - num_beams
    generated = history.shape[1]
    tokens[slot, j, : generated - 1] = history[cand_rows[changed[slot], candidate], 1:]
    tokens[slot, j, generated - 1] = cand_tokens[changed[slot], candidate]
    lengths[slot, j] = generated
    kept_tokens[owners], kept_lengths[owners] = tokens, lengths


def generate(decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings) -> list[Hypothesis]:
    """Greedy search for ``num_beams == 1``, beam search otherwise (as HF dispatches without sampling)."""
    if settings.num_beams > 1:
        return beam_search(decoder, batch_size, settings)
    return greedy_search(decoder, batch_size, settings)


def generate_nbest(
    decoder: IncrementalDecoder, batch_size: int, settings: DecodingSettings, num_return_sequences: int
) -> list[list[Hypothesis]]:
    """The best ``num_return_sequences`` hypotheses of every sentence (1 <= N <= num_beams), best first."""
    check_num_return_sequences(num_return_sequences, settings.num_beams)
    if settings.num_beams > 1:
        return beam_search_nbest(decoder, batch_size, settings, num_return_sequences)
    return [[hypothesis] for hypothesis in greedy_search(decoder, batch_size, settings)]
