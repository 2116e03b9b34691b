"""Language identification for LibreTranslate's ``/detect`` and ``source=auto``: script rules, then py3langid.

Text written only in Chinese, Japanese or Korean script is told by its characters, before any model (one or two
ideographs are too short for n-grams): Hangul makes it Korean, kana Japanese, ideographs alone Chinese.
Text without any letter (digits, emoji, punctuation, URLs' symbols alone) is unknown, answered as
LibreTranslate answers it: English with confidence 0. Everything else goes to py3langid's naive Bayes model
(bundled in its wheel; loaded once, on first use, about 2 s), restricted to :data:`LANGUAGES` so that it tells
English from the languages most often confused with it, and answers "unknown" when it sees no feature at all
(its probabilities are then uniform).

Confidences are LibreTranslate's: a float from 0 to 100, rounded to a whole number.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from enzh.runtime.optional import import_optional

# The model chooses among these; a language outside the set is never answered.
LANGUAGES = ("en", "zh", "ja", "ko", "fr", "de", "es", "ru")
TOP = 3  # candidates per answer, as LibreTranslate gives
MODEL_CHARS = 4096  # a text's language is told from its first characters, this many at most
_FLAT = 1e-6  # a top probability this close to 1/len(LANGUAGES): no feature seen, the text is unknown


@dataclass(frozen=True)
class Guess:
    """One candidate: an ISO 639-1 code and LibreTranslate's confidence (0-100)."""

    language: str
    confidence: float

    def as_json(self) -> dict[str, Any]:
        return {"confidence": self.confidence, "language": self.language}


UNKNOWN = (Guess("en", 0.0),)


def _script(ch: str) -> str:
    """``han``, ``kana``, ``hangul``, ``letter`` (any other letter) or ``other``."""
    code = ord(ch)
    if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x3134F:
        return "han"
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF or 0xFF66 <= code <= 0xFF9D:
        return "kana"
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return "hangul"
    return "letter" if ch.isalpha() else "other"


def by_script(text: str) -> tuple[Guess, ...] | None:
    """The answer the characters alone give (unknown, or Chinese, Japanese, Korean), or None: ask the model."""
    scripts = {_script(ch) for ch in text}
    scripts.discard("other")
    if not scripts:
        return UNKNOWN
    if "letter" in scripts:
        return None
    if "hangul" in scripts:
        return (Guess("ko", 100.0),)
    if "kana" in scripts:
        return (Guess("ja", 100.0),)
    return (Guess("zh", 100.0),)


class Detector:
    """Detects the language of texts; the model is loaded on first need (thread-safe), then kept."""

    def __init__(self, languages: Sequence[str] = LANGUAGES) -> None:
        self.languages = tuple(languages)
        self._identifier: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._identifier is not None

    def load(self) -> Any:
        """The restricted py3langid identifier (loaded once)."""
        with self._lock:
            if self._identifier is None:
                langid = import_optional("py3langid.langid", "language detection (/detect, source=auto)")
                identifier = langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE, norm_probs=True)
                identifier.set_languages(list(self.languages))
                self._identifier = identifier
        return self._identifier

    def needs_model(self, texts: Sequence[str]) -> bool:
        """Whether detecting ``texts`` would load the model (callers load it off the event loop first)."""
        return not self.loaded and any(by_script(text[:MODEL_CHARS]) is None for text in texts)

    def detect(self, text: str) -> tuple[Guess, ...]:
        """Up to :data:`TOP` candidates for ``text``, best first (unknown: English at 0)."""
        text = text[:MODEL_CHARS]
        found = by_script(text)
        if found is not None:
            return found
        ranked = self.load().rank(text)
        if ranked[0][1] - 1 / len(ranked) < _FLAT:
            return UNKNOWN
        guesses = [Guess(str(code), float(round(p * 100))) for code, p in ranked[:TOP]]
        return tuple(g for g in guesses if g.confidence > 0) or (guesses[0],)

    def detect_all(self, texts: Sequence[str]) -> tuple[Guess, ...]:
        """One answer for several texts (LibreTranslate's /detect of a list): each language's confidence averaged
        over the texts, weighted by their lengths; up to :data:`TOP`, best first."""
        if len(texts) == 1:
            return self.detect(texts[0])
        weights: dict[str, float] = {}
        total = 0
        for text in texts:
            size = len(text.strip())
            total += size
            for guess in self.detect(text):
                if guess.confidence > 0:
                    weights[guess.language] = weights.get(guess.language, 0.0) + guess.confidence * size
        if not weights or total == 0:
            return UNKNOWN
        ranked = sorted(weights.items(), key=lambda item: -item[1])[:TOP]
        return tuple(Guess(code, float(round(weight / total))) for code, weight in ranked)
