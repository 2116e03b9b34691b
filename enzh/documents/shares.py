"""Sharing a translation out over the pieces of text a format keeps apart (Word ``w:t`` elements, the lines and
tags of a subtitle cue) so that every piece that had words gets some: a mark never comes back empty.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("enzh")

# A cut reads best right after one of these.
_BREAK_AFTER = set("，。；：！？、,.;:!?)）」』”’")


def share_out(shares: list[str], sources: list[str]) -> list[str]:
    """``shares`` (the translated text of each mark, in order) with every mark whose source had words given some.

    A mark left empty joins the nearest mark before it that has text (or after it, at the start), and that group
    shares its text out in proportion to the source lengths, cut between words (between any characters in
    Chinese). When a group has too little text for its marks, the whole translation is shared out that way over
    all the marks. Marks whose source is only spaces are never given text. A mark that still cannot get any (the
    whole translation has fewer characters than marks) keeps its source text, with a warning."""
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
        out = list(shares)
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
    text = "".join(shares[i] for i in group)
    weights = [len(sources[i].strip()) if wanted[i] else 0 for i in group]
    for i, piece in zip(group, cut(text, weights), strict=True):
        out[i] = piece


def cut(text: str, weights: list[int]) -> list[str]:
    """``text`` cut into ``len(weights)`` consecutive pieces of about the given relative sizes: a piece of weight 0
    gets nothing, the others at least one character when the text has enough; cuts go between words where the text
    has spaces, and right after punctuation when some is near the proportional place."""
    total = sum(weights) or 1
    counted = [k for k, weight in enumerate(weights) if weight]
    cuts = [i for i in range(1, len(text)) if _cuttable(text, i)]
    ends = {k: len(text) for k in counted[-1:]}
    visible = [0] * (len(text) + 1)  # characters other than spaces from each offset on
    for i in range(len(text) - 1, -1, -1):
        visible[i] = visible[i + 1] + (not text[i].isspace())
    start = done = 0
    for n, k in enumerate(counted[:-1]):
        done += weights[k]
        later = len(counted) - n - 1  # pieces with weight after this one, each needs a cut after this one's
        usable = [c for c in cuts if c > start and visible[start] > visible[c] >= later] or [
            c for c in range(start + 1, len(text)) if visible[start] > visible[c] >= later
        ]  # no cut between words is left: one inside a word rather than a piece without text
        want = len(text) * done / total
        reach = max(4.0, 0.15 * len(text))
        punctuated = [c for c in usable if text[c - 1] in _BREAK_AFTER and abs(c - want) <= reach]
        start = ends[k] = min(punctuated or usable, key=lambda c: (abs(c - want), c)) if usable else start
    pieces: list[str] = []
    start = 0
    for k in range(len(weights)):
        end = ends.get(k, start)
        pieces.append(text[start:end])
        start = end
    return pieces


def _cuttable(text: str, at: int) -> bool:
    """A cut between ``text[at - 1]`` and ``text[at]`` that does not split a word of a spaced script."""
    before, after = text[at - 1], text[at]
    if before.isspace() or after.isspace():
        return not (before.isspace() and after.isspace())
    return not (before.isascii() and after.isascii() and before.isalnum() and after.isalnum())
