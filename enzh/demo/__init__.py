"""The demo models' recipe: a synthetic English<->Chinese corpus, its tokenizers and the training loop.

Needs the ``[demo]`` extra (torch, transformers). The trained HF weights live in the source tree
(``assets/demo-hf`` for English->Chinese, ``assets/demo-zh-en-hf`` for Chinese->English), not in the package;
the package ships them exported (``enzh/runtime/assets/demo``, ``enzh/runtime/assets/demo-zh-en``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_ASSETS = Path(__file__).resolve().parents[2] / "assets"


@dataclass(frozen=True, kw_only=True)
class Direction:
    """One demo model: which side of the corpus it reads, which it writes, and where its files live."""

    name: str  # "en-zh": what --direction takes
    source: str  # ISO 639-1 code of the source side
    target: str
    language_tokens: tuple[str, ...]  # the >>xx<< tokens of the vocabulary (opus-mt-en-zh has two; zh-en none)
    hf_dir: Path  # the trained HF model directory in a source checkout

    def orient(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The corpus' (English, Chinese) pairs as (source, target) pairs of this direction."""
        return [(en, zh) if self.source == "en" else (zh, en) for en, zh in pairs]

    @property
    def language_token(self) -> str | None:
        """The token every training source starts with (the first language token), or None."""
        return self.language_tokens[0] if self.language_tokens else None


DIRECTIONS = {
    "en-zh": Direction(
        name="en-zh",
        source="en",
        target="zh",
        language_tokens=(">>cmn_Hans<<", ">>cmn_Hant<<"),
        hf_dir=_ASSETS / "demo-hf",
    ),
    # As Helsinki-NLP/opus-mt-zh-en: one target language, so no language token in the vocabulary.
    "zh-en": Direction(name="zh-en", source="zh", target="en", language_tokens=(), hf_dir=_ASSETS / "demo-zh-en-hf"),
}
DEFAULT_DIRECTION = DIRECTIONS["en-zh"]

# The trained English->Chinese demo model as a HuggingFace directory, present in a source checkout (not the wheel).
HF_MODEL_DIR = DEFAULT_DIRECTION.hf_dir


def direction(name: str) -> Direction:
    """The demo direction called ``name`` (ValueError naming the accepted ones otherwise)."""
    try:
        return DIRECTIONS[name]
    except KeyError:
        raise ValueError(f"unknown demo direction {name!r}; accepted: {', '.join(DIRECTIONS)}") from None


def direction_of(model_dir: str | Path) -> Direction:
    """The demo direction of an HF model directory, from its tokenizer_config.json's ``source_lang`` (en->zh when
    it names none)."""
    import json

    path = Path(model_dir) / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    source = config.get("source_lang") if isinstance(config, dict) else None
    return next((d for d in DIRECTIONS.values() if d.source == source), DEFAULT_DIRECTION)
