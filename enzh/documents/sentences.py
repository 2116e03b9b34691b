"""The sentence translator behind every document: each distinct sentence is translated once, in fixed chunks.

Chunks are cut from the document's distinct sentences in order of first appearance, so they are the same on
every run of the same input and options: a run resumed from a :class:`~enzh.documents.journal.Journal`
translates the remaining chunks exactly as an uninterrupted run does, and writes the same bytes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from enzh.documents.alignment import ModelAligner
from enzh.documents.convert import converter
from enzh.documents.journal import Journal
from enzh.documents.options import DocumentOptions

if TYPE_CHECKING:
    from enzh.runtime.confidence import Confidence
    from enzh.runtime.engine import Engine

CHUNK = 64  # sentences per model call and per journal record


class SentenceEngine:
    """Callable ``(sentences) -> translations`` (a :data:`~enzh.documents.inline.SentenceTranslator`)."""

    def __init__(
        self,
        translator: Engine,
        options: DocumentOptions,
        *,
        journal: Journal | None = None,
        progress: bool = False,
        chunk: int = CHUNK,
        scores: bool = False,
    ) -> None:
        translator.resolve_target(options.target)  # an unknown target fails before any work
        self.translator = translator
        self.options = options
        self.journal = journal
        self.progress = progress
        self.chunk = chunk
        self.known: dict[str, str] = journal.known if journal is not None else {}
        self.translated = 0  # sentences sent to the model by this engine
        self._convert = converter(options.convert)
        self.align = ModelAligner(translator, options.target)  # the aligner protocol of enzh.documents.inline
        # With scores: each sentence this engine translated -> its confidence (journaled sentences have none).
        self.scores = scores
        self.confidence: dict[str, Confidence] = {}

    def __call__(self, sentences: list[str]) -> list[str]:
        unique = list(dict.fromkeys(sentences))
        chunks = [unique[i : i + self.chunk] for i in range(0, len(unique), self.chunk)]
        pending = [chunk for chunk in chunks if not all(s in self.known for s in chunk)]
        todo = sum(len(chunk) for chunk in pending)
        with _bar(len(unique), len(unique) - todo, enabled=self.progress and todo > 0) as bar:
            for chunk in pending:
                outputs = self._translate(chunk)
                if self.journal is not None:
                    self.journal.record(chunk, outputs)
                else:
                    self.known.update(zip(chunk, outputs, strict=True))
                self.translated += len(chunk)
                bar.update(len(chunk))
        return [self._convert(self.known[s]) for s in sentences]

    def _translate(self, chunk: list[str]) -> list[str]:
        options = self.options
        # The document's language: a multilingual model is told it (a Marian model has one source and ignores it).
        beam, target, source = options.beam_size, options.target, options.source
        if not self.scores and not options.glossary:
            return self.translator.translate(chunk, beam_size=beam, target=target, source=source)
        # (the glossary only when there is one: stand-ins without the keyword keep working)
        extra: dict[str, Any] = {"glossary": options.glossary} if options.glossary else {}
        found = self.translator.translate_detailed(chunk, beam_size=beam, target=target, source=source, **extra)
        for sentence, translation in zip(chunk, found, strict=True):
            if translation.confidence is not None:
                self.confidence[sentence] = translation.confidence
        return [t.text for t in found]


class _NoBar:
    def update(self, n: int) -> None:
        pass


@contextmanager
def _bar(total: int, initial: int, *, enabled: bool) -> Iterator[Any]:
    """A tqdm bar on stderr (sentences/s, ETA) that shows only when the work lasts more than a second."""
    if not enabled:
        yield _NoBar()
        return
    from tqdm import tqdm

    bar = tqdm(total=total, initial=initial, unit=" sentences", file=sys.stderr, delay=1.0, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
