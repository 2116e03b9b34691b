"""The seam between the runtime and the layers above it (serve, documents, scale, cli, tools).

:class:`Engine` is everything those layers use of a translator; :class:`enzh.runtime.translator.Translator`
implements it, and so do the stand-ins of the tests (tests/serve/fake_translator.py). Code above the runtime
types its translator as an ``Engine`` and never reaches into a translator's tokenizer, model adapter, sessions
or private methods (tests/test_engine_seam.py keeps it so; the profilers in enzh/tools, which instrument the
ONNX Runtime sessions on purpose, are the named exception).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from enzh.runtime.confidence import Confidence
from enzh.runtime.pieces import Span
from enzh.runtime.words import WordAlignment

if TYPE_CHECKING:
    from enzh.runtime.decoding import Hypothesis
    from enzh.runtime.segment import PreparedText


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """What the layers above the runtime show or key on about a loaded model."""

    name: str  # for people: the embedded demo's name, else the source model's id or the directory's name
    source_id: str  # the model the export came from (a hub id or a path)
    precision: str  # fp32, fp16, int8 or int4
    directory: Path
    embedded: bool  # the embedded default model
    default_beam_size: int  # the model's generation default
    max_positions: int  # source and target tokens the model accepts per input
    targets: tuple[str, ...]  # its target-language tokens (empty: it translates into one language)
    default_target: str | None  # the token used when none is asked for
    has_aligner: bool  # whether align() and align_texts() work
    fingerprint: str  # changes whenever the model's files or settings do (what cached translations are valid for)
    # The (source, target) language pairs it translates, as ISO 639-1 codes among en and zh (("en", "zh"),);
    # empty when nothing in the model says which languages it reads and writes.
    directions: tuple[tuple[str, str], ...] = ()
    # Target tokens a decoder step scores a row: the vocabulary, or a global shortlist's size (0: unknown). A step's
    # cost grows with it (the HTTP service's continuous batching runs fewer rows at once when it is large).
    scored_tokens: int = 0

    @property
    def label(self) -> str:
        """``name (precision)``: how logs, pages and metrics name the model."""
        return f"{self.name} ({self.precision})"


@dataclass(frozen=True)
class TextAlignment:
    """A sentence, its translation and the model's cross-attention between their pieces.

    ``source``/``target``: the character range each SentencePiece piece covers in the sentence / translation
    (the space a word-initial piece starts with left out); ``weights[t, s]``: the attention of target piece t on
    source piece s, each row summing to 1."""

    source: tuple[Span, ...]
    target: tuple[Span, ...]
    weights: np.ndarray


@dataclass(frozen=True)
class Alternative:
    """One of an input's n-best translations: the k-th best hypothesis of every part it was split into."""

    text: str
    token_ids: tuple[tuple[int, ...], ...]
    scores: tuple[float, ...]


@dataclass(frozen=True)
class Translation:
    """One input's translation with the token ids and score of every part it was split into."""

    text: str
    token_ids: tuple[tuple[int, ...], ...]
    scores: tuple[float, ...]
    parts: int
    alternatives: tuple[Alternative, ...] = ()
    """With ``translate_detailed(..., alternatives=N)``: the N best translations, best first (the first is this
    translation); empty otherwise. A blank input has one, the empty translation."""
    confidence: Confidence | None = None
    """The translation's score and warning flags (:mod:`enzh.runtime.confidence`); a translator always sets it
    (None only from a stand-in that does not)."""
    alignment: WordAlignment | None = None
    """With ``translate_detailed(..., alignments=True)``: the source word <-> translated word pairs
    (:mod:`enzh.runtime.words`); None otherwise."""


@runtime_checkable
class Engine(Protocol):
    """What serve, documents, scale, cli and tools need from a translator."""

    @property
    def info(self) -> ModelInfo: ...

    def resolve_target(self, target: str | None) -> str | None:
        """The language token for a user's target (``zh-Hant``, ``cmn_Hant``, ``>>cmn_Hant<<``; None: the model's
        default); ``ValueError`` naming the accepted values for one the model does not have."""
        ...

    def prepare_text(self, text: str, language_token: str | None, source: str | None = None) -> PreparedText:
        """``text`` segmented into pieces, with the model inputs of each piece it translates (``source``: the
        language it is in, for the multilingual families; None: the model's default)."""
        ...

    def assemble_text(self, prepared: PreparedText, outputs: Sequence[Sequence[str]]) -> str:
        """The translated text from each piece's outputs (one string per model input), layout kept."""
        ...

    def generate_ids(
        self,
        sources: Sequence[Sequence[int]],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        **overrides: object,
    ) -> list[Hypothesis]:
        """One hypothesis per source id list, in order."""
        ...

    def decode(self, token_ids: Sequence[Sequence[int]]) -> list[str]:
        """Target ids to text, special tokens dropped."""
        ...

    def translate(
        self,
        texts: Sequence[str],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        target: str | None = None,
        source: str | None = None,
    ) -> list[str]: ...

    def translate_detailed(
        self,
        texts: Sequence[str],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        target: str | None = None,
        alternatives: int | None = None,
        source: str | None = None,
        alignments: bool = False,
        glossary: Any = None,
    ) -> list[Translation]:
        """Each text's :class:`Translation` (``alignments``: with its word alignment; ``glossary``: terms whose
        fixed target each translation must hold, a :class:`enzh.runtime.glossary.Glossary` or a mapping of source
        to target term; callers pass these only when
        asked for, so stand-ins without the keywords keep working)."""
        ...

    def assess(
        self,
        prepared: PreparedText,
        text: str,
        token_ids: Sequence[Sequence[int]],
        scores: Sequence[float],
        *,
        beam_size: int | None = None,
    ) -> Confidence:
        """The confidence (:mod:`enzh.runtime.confidence`) of ``text``, assembled from ``prepared``'s model inputs'
        hypotheses (their ``token_ids`` and ``score``, one per input in order, from :meth:`generate_ids` with
        ``beam_size``; None: the model's default), exactly as :meth:`translate_detailed` scores it."""
        ...

    def align_texts(self, pairs: Sequence[tuple[str, str]], language_token: str | None) -> list[TextAlignment | None]:
        """For each (sentence, translation) pair, the cross-attention between their pieces; None for a pair that
        cannot be aligned (no aligner, longer than the model's positions, special-token strings in the text)."""
        ...


__all__ = ["Alternative", "Confidence", "Engine", "ModelInfo", "Span", "TextAlignment", "Translation", "WordAlignment"]
