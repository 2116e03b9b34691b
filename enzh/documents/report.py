"""``translate-file --report FILE``: a JSON sidecar naming a document's lowest-scoring units and where they are.

A *unit* is what the document's format translates as one block: a line of text (txt), a record's field (jsonl,
tsv), a cue or a group of cues holding one sentence (srt, vtt), a paragraph, heading, list item or table cell
(html, md, docx). Units are numbered from 1 in document order (``unit``); for the text formats ``line`` is the
input line the unit starts on, found by searching the input for the unit's first words in order (None where
escapes or markup keep them from being found, and for docx, which has no lines).

A unit's ``score`` is its lowest-scoring sentence's (:mod:`enzh.runtime.confidence`), its ``flags`` are its
sentences' together; ``sentences`` lists each sentence with its translation (the model's, before any
``--convert``), score and flags. Sentences reused
from a resume journal were not scored in this run: they count in ``unscored`` and carry no score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from enzh.documents.api import Parsed
from enzh.documents.options import DocumentOptions
from enzh.documents.sentences import SentenceEngine
from enzh.runtime.confidence import FLAGS
from enzh.runtime.segment import needs_translation, reading, split_sentences

LOWEST = 20  # units listed, lowest score first


@dataclass(frozen=True, kw_only=True)
class UnitScore:
    unit: int
    line: int | None
    score: float | None
    flags: tuple[str, ...]
    sentences: list[dict[str, Any]]


def unit_scores(parsed: Parsed, engine: SentenceEngine, options: DocumentOptions) -> list[UnitScore]:
    """Every unit with something translated, in document order."""
    text = parsed.decoded.text if parsed.decoded is not None else None
    cursor = 0
    out = []
    with reading(options.script):
        for number, block in enumerate(parsed.units.blocks, start=1):
            sentences = [s for s in split_sentences(block.text) if needs_translation(s)]
            if not sentences:
                continue
            line = None
            if text is not None:
                needle = block.text.strip().splitlines()[0][:16] if block.text.strip() else ""
                found = text.find(needle, cursor) if needle else -1
                if found >= 0:
                    line = text.count("\n", 0, found) + 1
                    cursor = found + len(needle)
            entries: list[dict[str, Any]] = []
            scored: list[float] = []
            flags: set[str] = set()
            for sentence in sentences:
                confidence = engine.confidence.get(sentence)
                if confidence is not None:
                    scored.append(round(confidence.score, 4))
                    flags.update(confidence.flags)
                entries.append(
                    {
                        "source": sentence,
                        "translation": engine.known.get(sentence),  # the model's, before any --convert
                        "score": None if confidence is None else round(confidence.score, 4),
                        "flags": [] if confidence is None else list(confidence.flags),
                    }
                )
            out.append(
                UnitScore(
                    unit=number,
                    line=line,
                    score=min(scored) if scored else None,
                    flags=tuple(f for f in FLAGS if f in flags),
                    sentences=entries,
                )
            )
    return out


def build_report(
    parsed: Parsed, engine: SentenceEngine, options: DocumentOptions, *, input: str, model: str
) -> dict[str, Any]:
    """The report's JSON object (see the module docstring)."""
    units = unit_scores(parsed, engine, options)
    scored = [u for u in units if u.score is not None]
    lowest = sorted(scored, key=lambda u: (u.score or 0.0, u.unit))[:LOWEST]
    unscored = sum(1 for u in units for s in u.sentences if s["score"] is None)
    return {
        "input": input,
        "format": options.format,
        "model": model,
        "units": len(units),
        "sentences": sum(len(u.sentences) for u in units),
        "unscored": unscored,
        "low_confidence_units": sum(1 for u in units if u.flags),
        "lowest": [
            {"unit": u.unit, "line": u.line, "score": u.score, "flags": list(u.flags), "sentences": u.sentences}
            for u in lowest
        ],
    }


__all__ = ["LOWEST", "UnitScore", "build_report", "unit_scores"]
