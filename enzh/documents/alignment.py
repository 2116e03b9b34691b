"""Sentence alignments from the model's aligner graph: where each inline mark's words went in the translation.

:class:`ModelAligner` is the ``align`` of the aligner protocol (:mod:`enzh.documents.inline`): for each
(sentence, translation) pair the engine (:meth:`enzh.runtime.engine.Engine.align_texts`) cuts both sides into
the model's SentencePiece pieces, with each piece's character range, and returns the cross-attention of the
translation (teacher forced) on the sentence. The translation is cut again by the target tokenizer rather than
taken from the search, so a pair read back from a journal aligns exactly as a fresh one.

A pair gets None (its marks then take the anchors and the fallback) when the model has no aligner, when either
side is longer than the model's positions, or when the pieces do not give the ids the tokenizer gives (special
token strings typed in the text).
"""

from __future__ import annotations

from collections.abc import Sequence

from enzh.documents.placement import Alignment
from enzh.runtime.engine import Engine


class ModelAligner:
    """``(sentence, translation)`` pairs -> :class:`Alignment` (or None) with ``translator``'s aligner graph.

    ``target``: the language token the sentences were translated with (None: the model's default)."""

    def __init__(self, translator: Engine, target: str | None = None) -> None:
        self.translator = translator
        self.language_token = translator.resolve_target(target)
        self.available = translator.info.has_aligner

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[Alignment | None]:
        if not self.available or not pairs:
            return [None] * len(pairs)
        found = self.translator.align_texts(pairs, self.language_token)
        return [None if a is None else Alignment(a.source, a.target, a.weights) for a in found]
