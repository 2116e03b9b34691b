"""A confidence for every translation: a score from the search's own log-probabilities plus named warning flags.

The **score** of a translation is the beam search's length-normalised log-probability of the whole text, its
parts taken as one sequence: ``sum of every generated token's log-probability / (generated tokens) **
length_penalty``, where the tokens are those of every part the text was split into (eos included, the
decoder's start token not) and the log-probabilities are the search's (log-softmax of the processed scores).
With ``length_penalty`` 1.0 (the default of every model enzh ships or tests) that is the **mean token
log-probability**, and for a text of several parts the token-weighted mean of its parts' means. It is at most 0
(certain); blank text and text returned unchanged score 0.0.

The **flags** (:data:`FLAGS`) name what looks wrong:

* ``low_score``: the score is below ``ConfidenceOptions.threshold`` (calibrated on the demo models,
  docs/quality.md);
* ``repetition``: the output holds a loop, a block of 1..``repeat_max_ngram`` tokens repeated back to back
  at least ``repeat_min_copies`` times and covering at least ``repeat_min_tokens`` tokens;
* ``length_ratio``: output tokens / source tokens (special tokens left out) outside ``length_ratio``, for
  sources of at least ``ratio_min_source_tokens`` tokens;
* ``copy``: the output copies the input: stretches of ``copy_min_chars`` letters or digits that the source has
  too (both case folded, everything else dropped) cover ``copy_fraction`` or more of the output's;
* ``unknown_token``: the model generated its unknown token;
* ``glossary``: some of the glossary's terms could not be placed (their tokens do not fit within the length
  bound; set by the translator, :mod:`enzh.runtime.constrained`).

A translation is of *low confidence* when it has any flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from enzh.runtime.errors import require

FLAGS = ("low_score", "repetition", "length_ratio", "copy", "unknown_token", "glossary")

# Calibrated on the embedded demo models (in-domain held-out sentences against out-of-domain ones written for
# this project): `python -m enzh.tools.confidence_report --out docs/quality.md` prints how it was chosen.
DEFAULT_THRESHOLD = -0.26


@dataclass(frozen=True, kw_only=True)
class ConfidenceOptions:
    """Where the flags of :mod:`enzh.runtime.confidence` fire."""

    threshold: float = DEFAULT_THRESHOLD
    repeat_max_ngram: int = 8
    repeat_min_copies: int = 3
    repeat_min_tokens: int = 6
    # Output tokens per source token; on the demo models' held-out sentences 99 % lie within 0.30..1.57 (en->zh)
    # and 0.64..3.33 (zh->en), medians 0.81 and 1.22: one range wide enough for both directions.
    length_ratio: tuple[float, float] = (0.3, 3.0)
    ratio_min_source_tokens: int = 4
    copy_fraction: float = 0.6
    copy_min_chars: int = 8

    def __post_init__(self) -> None:
        require(self.threshold <= 0, f"threshold must be <= 0 (a log-probability), got {self.threshold}")
        require(self.repeat_max_ngram >= 1, f"repeat_max_ngram must be >= 1, got {self.repeat_max_ngram}")
        require(self.repeat_min_copies >= 2, f"repeat_min_copies must be >= 2, got {self.repeat_min_copies}")
        require(self.repeat_min_tokens >= 2, f"repeat_min_tokens must be >= 2, got {self.repeat_min_tokens}")
        low, high = self.length_ratio
        require(0 <= low < high, f"length_ratio must be (low, high) with 0 <= low < high, got {self.length_ratio}")
        require(
            self.ratio_min_source_tokens >= 1,
            f"ratio_min_source_tokens must be >= 1, got {self.ratio_min_source_tokens}",
        )
        require(0 < self.copy_fraction <= 1, f"copy_fraction must be in (0, 1], got {self.copy_fraction}")
        require(self.copy_min_chars >= 1, f"copy_min_chars must be >= 1, got {self.copy_min_chars}")


@dataclass(frozen=True, kw_only=True)
class Confidence:
    """A translation's score (see the module docstring: its length-normalised log-probability, <= 0) and
    the names of the flags that fired (:data:`FLAGS`, in that order)."""

    score: float
    flags: tuple[str, ...] = ()

    @property
    def low(self) -> bool:
        """Whether the translation is of low confidence (any flag)."""
        return bool(self.flags)


UNCHANGED = Confidence(score=0.0)


@dataclass(frozen=True, kw_only=True)
class Part:
    """One model output as the confidence reads it."""

    source_tokens: int  # the source's pieces (the language token and eos left out)
    token_ids: tuple[int, ...]  # generated ids, eos included when generated
    score: float  # the search's score (greedy: the sum; beam: the sum / length ** length_penalty)


def text_score(parts: Sequence[Part], *, beams: int, length_penalty: float) -> float:
    """The score of a text from its parts' hypotheses (see the module docstring)."""
    total = 0.0
    tokens = 0
    for part in parts:
        length = max(1, len(part.token_ids))
        # Greedy scores are sums already; beam scores were divided by length ** length_penalty.
        total += part.score if beams == 1 else part.score * length**length_penalty
        tokens += length
    if tokens == 0:
        return 0.0
    return min(0.0, total / tokens**length_penalty)


def assess(
    source: str,
    output: str,
    parts: Sequence[Part],
    *,
    beams: int,
    length_penalty: float,
    special_ids: frozenset[int],
    unk_id: int | None,
    options: ConfidenceOptions,
) -> Confidence:
    """The confidence of one text's translation from its parts (``special_ids``: ids left out of lengths and
    loops, such as eos; ``unk_id``: the model's unknown token)."""
    if not parts:
        return UNCHANGED
    score = text_score(parts, beams=beams, length_penalty=length_penalty)
    flags = set()
    if score < options.threshold:
        flags.add("low_score")
    generated = [[t for t in p.token_ids if t not in special_ids] for p in parts]
    if any(has_loop(ids, options) for ids in generated):
        flags.add("repetition")
    source_tokens = sum(p.source_tokens for p in parts)
    if source_tokens >= options.ratio_min_source_tokens:
        ratio = sum(len(ids) for ids in generated) / source_tokens
        low, high = options.length_ratio
        if not low <= ratio <= high:
            flags.add("length_ratio")
    if copies(source, output, options):
        flags.add("copy")
    if unk_id is not None and any(unk_id in p.token_ids for p in parts):
        flags.add("unknown_token")
    return Confidence(score=score, flags=tuple(f for f in FLAGS if f in flags))


def has_loop(ids: Sequence[int], options: ConfidenceOptions) -> bool:
    """Whether ``ids`` holds a block of n tokens (n <= repeat_max_ngram) repeated back to back at least
    repeat_min_copies times and over at least repeat_min_tokens tokens."""
    for n in range(1, options.repeat_max_ngram + 1):
        copies_needed = max(options.repeat_min_copies, -(-options.repeat_min_tokens // n))
        if n * copies_needed > len(ids):
            continue
        # run: how many positions in a row equal the one n before them; k copies need (k - 1) * n of them
        run = 0
        for i in range(n, len(ids)):
            run = run + 1 if ids[i] == ids[i - n] else 0
            if run >= (copies_needed - 1) * n:
                return True
    return False


def _letters(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def copies(source: str, output: str, options: ConfidenceOptions) -> bool:
    """Whether ``output`` copies ``source`` (see the ``copy`` flag): linear in the texts' lengths, so every
    translation can afford it."""
    a, b = _letters(source), _letters(output)
    k = options.copy_min_chars
    if len(b) < k or len(a) < k:
        return False
    # stretches of k letters of the output that the source has too; the share of the output they cover
    grams = {a[i : i + k] for i in range(len(a) - k + 1)}
    covered = [False] * len(b)
    for j in range(len(b) - k + 1):
        if b[j : j + k] in grams:
            covered[j : j + k] = [True] * k
    return sum(covered) >= options.copy_fraction * len(b)


__all__ = [
    "DEFAULT_THRESHOLD",
    "FLAGS",
    "UNCHANGED",
    "Confidence",
    "ConfidenceOptions",
    "Part",
    "assess",
    "copies",
    "has_loop",
    "text_score",
]
