"""Sharing a translation out over the pieces of text a format keeps apart (Word ``w:t`` elements, the lines and
tags of a subtitle cue) so that every piece that had words gets some: a mark never comes back empty.
"""

from __future__ import annotations

import bisect
import logging

logger = logging.getLogger("enzh")

# A cut reads best right after one of these.
_BREAK_AFTER = set("，。；：！？、,.;:!?)）」』”’")


def share_out(shares: list[str], sources: list[str]) -> list[str]:
    """``shares`` (the translated text of each mark, in order) with every mark whose source had words given some.

    A mark left empty joins the nearest mark before it that has text (or after it, at the start), and that group
    shares its text out in proportion to the source lengths, cut between words (between any characters in
    Chinese). When a group has too little text for its marks, the whole translation is shared out that way over
    all the marks (when that serves them all; else the marks keep what the placement gave them). Marks whose
    source is only spaces are never given text. A mark that still cannot get any (the whole translation has
    fewer characters than marks) keeps its source text, with a warning."""
    wanted = [bool(source.strip()) for source in sources]
    if _served(shares, wanted):
        return shares
    groups: list[list[int]] = []
    for i, share in enumerate(shares):
        if share.strip() or not groups:
            groups.append([i])
        else:
            groups[-1].append(i)
    if len(groups) > 1 and not shares[groups[0][0]].strip():  # leading empties join the first group with text
        groups[1:2] = [groups[0] + groups[1]]
        del groups[0]
    out = list(shares)
    for group in groups:
        if not _served([out[i] for i in group], [wanted[i] for i in group]):
            _share(out, group, shares, sources, wanted)
    if not _served(out, wanted):
        _share(out, list(range(len(shares))), shares, sources, wanted)
    short = [i for i, (text, want) in enumerate(zip(out, wanted, strict=True)) if want and not text.strip()]
    for i in short:
        out[i] = sources[i]
    if short:
        logger.warning(
            "a translation of %d characters is too short to give each of its %d marks text; %d keep their source text",
            len("".join(shares).strip()),
            sum(wanted),
            len(short),
        )
    return out


def _served(texts: list[str], wanted: list[bool]) -> bool:
    return all(text.strip() or not want for text, want in zip(texts, wanted, strict=True))


def _share(out: list[str], group: list[int], shares: list[str], sources: list[str], wanted: list[bool]) -> None:
    """Share the group's text out over its marks in ``out``, when that gives each of them text."""
    text = "".join(shares[i] for i in group)
    weights = [len(sources[i].strip()) if wanted[i] else 0 for i in group]
    pieces = cut(text, weights)
    if _served(pieces, [wanted[i] for i in group]):
        for i, piece in zip(group, pieces, strict=True):
            out[i] = piece


def cut(text: str, weights: list[int]) -> list[str]:
    """``text`` cut into ``len(weights)`` consecutive pieces of about the given relative sizes: a piece of weight 0
    gets nothing, the others at least one character other than a space when the text has enough; cuts go
    between words where the text has spaces, and right after punctuation when some is near the proportional
    place. Linear in the text and the pieces (bisection over the possible cuts)."""
    total = sum(weights) or 1
    counted = [k for k, weight in enumerate(weights) if weight]
    words = [i for i in range(1, len(text)) if _cuttable(text, i)]
    punctuated = [i for i in words if text[i - 1] in _BREAK_AFTER]
    visible = [i for i, char in enumerate(text) if not char.isspace()]  # offsets of the other characters
    ends = {k: len(text) for k in counted[-1:]}
    start = done = 0
    for n, k in enumerate(counted[:-1]):
        done += weights[k]
        later = len(counted) - n - 1  # pieces after this one, each needs a visible character
        first = bisect.bisect_left(visible, start)
        if first >= len(visible) or len(visible) - first - 1 < later:
            ends[k] = start  # too few characters left: this piece stays empty (its mark keeps its source)
            continue
        low = visible[first] + 1  # the piece holds at least one visible character
        high = visible[len(visible) - later]  # and leaves one for each piece after it
        want = min(max(len(text) * done / total, low), high)
        reach = max(4.0, 0.15 * len(text))
        near = _nearest(punctuated, want, low, high)
        if near is None or abs(near - want) > reach:
            near = _nearest(words, want, low, high)
        start = ends[k] = near if near is not None else round(want)
    pieces: list[str] = []
    start = 0
    for k in range(len(weights)):
        end = ends.get(k, start)
        pieces.append(text[start:end])
        start = end
    return pieces


def _nearest(cuts: list[int], want: float, low: int, high: int) -> int | None:
    """The cut of ``cuts`` (sorted) in ``[low, high]`` nearest to ``want`` (the earlier one on a tie)."""
    at = bisect.bisect_left(cuts, want)
    found = [c for c in cuts[max(at - 1, 0) : at + 1] if low <= c <= high]
    if not found:
        inside = bisect.bisect_left(cuts, low)
        found = [cuts[inside]] if inside < len(cuts) and cuts[inside] <= high else []
    return min(found, key=lambda c: (abs(c - want), c)) if found else None


def _cuttable(text: str, at: int) -> bool:
    """A cut between ``text[at - 1]`` and ``text[at]`` that does not split a word of a spaced script."""
    before, after = text[at - 1], text[at]
    if before.isspace() or after.isspace():
        return not (before.isspace() and after.isspace())
    return not (before.isascii() and after.isascii() and before.isalnum() and after.isalnum())
