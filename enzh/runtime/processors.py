"""Logits processors, one small function each, as ``transformers`` applies them (same order, float32).

:func:`process_scores` applies every processor a :class:`~enzh.runtime.options.DecodingSettings` asks for
(repetition penalty, no-repeat n-gram, bad words, min length, forced eos, renormalization);
:func:`fixed_bans` says when a step needs no scores at all beyond the banned tokens (the search's fast path).
"""

from __future__ import annotations

import numpy as np

from enzh.runtime.options import DecodingSettings


def repetition_penalty(history: np.ndarray, scores: np.ndarray, penalty: float) -> np.ndarray:
    """Make every token already in the row (the start token too) less likely: negative scores are multiplied
    by ``penalty``, positive ones divided by it. Applied once per token however often it occurred."""
    rows = np.arange(history.shape[0])[:, None]
    seen = scores[rows, history]
    factor = np.float32(penalty)
    scores[rows, history] = np.where(seen < 0, seen * factor, seen / factor)
    return scores


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
    scores[rows, windows[rows, starts, -1]] = -np.inf
    return scores


def bad_words(history: np.ndarray, scores: np.ndarray, sequences: tuple[tuple[int, ...], ...], eos: int) -> np.ndarray:
    """Ban the last token of every bad sequence whose other tokens end the row (single tokens: always).
    Like HF, a bad sequence that is exactly ``[eos]`` is ignored."""
    vocab = scores.shape[1]
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
            scores[rows, last] = -np.inf
        else:
            scores[:, last] = -np.inf
    return scores


def min_length(history: np.ndarray, scores: np.ndarray, length: int, eos: int) -> np.ndarray:
    """Forbid eos while the row (start token included) is shorter than ``length``."""
    if history.shape[1] < length:
        scores[:, eos] = -np.inf
    return scores


def forced_bos(history: np.ndarray, scores: np.ndarray, bos: int) -> np.ndarray:
    """On the first generated position (the history is the start token alone) only ``bos`` is allowed, with
    score 0 (the multilingual families' target-language token)."""
    if history.shape[1] == 1:
        scores[:] = -np.inf
        scores[:, bos] = 0.0
    return scores


def forced_eos(history: np.ndarray, scores: np.ndarray, max_length: int, eos: int) -> np.ndarray:
    """On the last possible step (one token short of ``max_length``) only ``eos`` is allowed, with score 0."""
    if history.shape[1] == max_length - 1:
        scores[:] = -np.inf
        scores[:, eos] = 0.0
    return scores


def log_softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float32 (a new array), computed as torch does:
    ``(x - max) - log(sum(exp(x - max)))``."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return shifted


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
    if settings.forced_bos_token_id is not None:
        scores = forced_bos(history, scores, settings.forced_bos_token_id)
    if settings.forced_eos_token_id is not None:
        scores = forced_eos(history, scores, settings.max_length, settings.forced_eos_token_id)
    if settings.renormalize_logits:
        scores = log_softmax(scores)
    return scores


# ----------------------------------------------------------------------------------------------------------
# The fast path. With the usual settings the processors only ban fixed tokens (bad single-token words such as
# pad, eos before min_length) and force eos on the last step. Such a step needs only each row's few best
# log-probabilities (which the decoder returns, see Step.top_ids) and the probability mass of the banned
# tokens; the forced last step needs no decoder run at all. Any other processor reads every score.
# ----------------------------------------------------------------------------------------------------------


def fixed_bans(length: int, settings: DecodingSettings) -> tuple[int, ...] | None:
    """Tokens the processors ban in every row at this step (``length`` = tokens in each row so far), or None
    when a processor depends on the row's scores or history. The answer depends on ``length`` only through
    ``length < settings.min_length`` (the searches compute it once for each side)."""
    if settings.repetition_penalty != 1.0 or settings.no_repeat_ngram_size > 0:
        return None
    if settings.forced_bos_token_id is not None and length == 1:
        return None  # the forced first token: every score but one is -inf
    banned = []
    for sequence in settings.bad_words_ids:
        if len(sequence) > 1:
            return None
        if sequence != (settings.eos_token_id,):  # HF ignores a bad word that is exactly [eos]
            banned.append(sequence[0])
    if length < settings.min_length:
        banned.append(settings.eos_token_id)
    return tuple(dict.fromkeys(banned))
