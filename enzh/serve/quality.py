"""The confidence and word alignment of a translation as the APIs answer them (/v1's ``scores`` and
``alignments``, the LibreTranslate extension field ``scores``)."""

from __future__ import annotations

from typing import Any

from enzh.runtime.engine import Translation


def score_payload(translation: Translation) -> dict[str, Any] | None:
    """/v1's ``scores`` entry of one translation (schemas.Score); None where nothing scored it (HTML, a stand-in)."""
    confidence = translation.confidence
    if confidence is None:
        return None
    return {"score": round(confidence.score, 6), "flags": list(confidence.flags), "low_confidence": confidence.low}


def alignment_payload(text: str, translation: Translation) -> dict[str, Any] | None:
    """/v1's ``alignments`` entry of one translation (schemas.WordPairs); None where it has none (HTML, a model
    without an aligner)."""
    found = translation.alignment
    if found is None:
        return None
    return {
        "pharaoh": found.pharaoh(),
        "pairs": [list(pair) for pair in found.pairs],
        "source_words": [text[slice(*span)] for span in found.source_words],
        "target_words": [translation.text[slice(*span)] for span in found.target_words],
    }


def scores_of(value: Any) -> bool:
    """The LibreTranslate extension field ``scores``: JSON true/false, or a form's ``true``/``1``/``false``/``0``
    (absent: false); ``ValueError`` naming the accepted values otherwise."""
    if value is None or value == "" or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "false", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError("scores must be true or false (a form: true, 1, false or 0)")
