"""A stand-in for :class:`enzh.runtime.translator.Translator` in the tests of the HTTP layer: no model, instant
(or as slow as asked), deterministic.

It implements the engine seam (:class:`enzh.runtime.engine.Engine`), the only thing the service uses: the real
segmentation stage (:func:`enzh.runtime.segment.prepare_text` / ``assemble_text``) over a fake encoding. A
sentence's ids are the code points of the sentence behind its target token, and its "translation" is the
sentence in upper case, marked ``(Hant)`` for Traditional: see :func:`fake_translation`. FakeZhEnTranslator is its
Chinese->English counterpart (:func:`fake_english`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from enzh.runtime.adapter import LANGUAGE_TOKEN
from enzh.runtime.confidence import UNCHANGED, Confidence
from enzh.runtime.engine import Alternative, ModelInfo, TextAlignment, Translation
from enzh.runtime.segment import PreparedText, assemble_text, prepare_text

HANS, HANT = ">>cmn_Hans<<", ">>cmn_Hant<<"
ALIASES = {"zh": HANS, "zh-Hans": HANS, "zh-CN": HANS, "zh-Hant": HANT, "zh-TW": HANT}


def fake_translation(sentence: str, target: str | None = None) -> str:
    """What FakeTranslator answers for one sentence (``target``: None, zh-Hans or zh-Hant)."""
    return sentence.strip().upper() + (" (Hant)" if target == "zh-Hant" else "")


class FakeTranslator:
    """``delay_s``: how long every batch takes (queue, deadline and disconnect tests).

    ``batches`` records (sentences, beam size) of every batch run.
    """

    def __init__(self, delay_s: float = 0.0, num_beams: int = 4) -> None:
        self.info = ModelInfo(
            name="fake",
            source_id="fake",
            precision="fp32",
            directory=Path("fake"),
            embedded=False,
            default_beam_size=num_beams,
            max_positions=512,
            targets=(HANS, HANT),
            default_target=HANS,
            has_aligner=False,
            fingerprint="fake",
            directions=(("en", "zh"),),
        )
        self.delay_s = delay_s
        self.batches: list[tuple[int, int | None]] = []
        self._lock = threading.Lock()

    def resolve_target(self, target: str | None) -> str | None:
        if target is None:
            return HANS
        token = ALIASES.get(target, target)
        if token not in (HANS, HANT):
            raise ValueError(f"unknown target {target!r}; accepted: {', '.join(sorted(ALIASES))}, {HANS}, {HANT}")
        return token

    def encode(self, text: str, language_token: str | None) -> list[list[int]]:
        """The fake model inputs of one sentence: its code points behind the target token."""
        if not text.strip():
            return []
        return [[ord(c) for c in f"{language_token} {text}"]]

    def prepare_text(self, text: str, language_token: str | None, source: str | None = None) -> PreparedText:
        return prepare_text(text, lambda piece: self.encode(piece, language_token), script="latin")

    def assemble_text(self, prepared: PreparedText, outputs: Sequence[Sequence[str]]) -> str:
        return assemble_text(prepared, outputs)

    def generate_ids(
        self,
        sources: Sequence[Sequence[int]],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        **overrides: object,
    ) -> list[Any]:
        with self._lock:
            self.batches.append((len(sources), beam_size))
        if self.delay_s:
            time.sleep(self.delay_s)
        return [SimpleNamespace(token_ids=tuple(ids)) for ids in sources]

    def decode(self, token_ids: Sequence[Sequence[int]]) -> list[str]:
        outputs = []
        for ids in token_ids:
            text = "".join(map(chr, ids))
            token = LANGUAGE_TOKEN.match(text)
            rest = text[token.end() :] if token else text
            target = "zh-Hant" if token and token.group() == HANT else None
            outputs.append(fake_translation(rest, target))
        return outputs

    def translate(self, texts: Sequence[str], **options: Any) -> list[str]:
        raise NotImplementedError("the HTTP tests' stand-in translates through generate_ids only")

    def translate_detailed(self, texts: Sequence[str], **options: Any) -> list[Any]:
        """One Translation per text, its only alternative itself, without scores or alignments (what a stand-in
        may leave out)."""
        if options.get("alignments"):
            raise NotImplementedError("the HTTP tests' stand-in has no aligner")
        token = self.resolve_target(options.get("target"))
        out = []
        for text in texts:
            prepared = self.prepare_text(text, token)
            outputs = [[self.decode([ids])[0] for ids in piece] for piece in prepared.sources]
            done = self.assemble_text(prepared, outputs)
            others = (Alternative(text=done, token_ids=(), scores=()),) if options.get("alternatives") else ()
            out.append(Translation(text=done, token_ids=(), scores=(), parts=0, alternatives=others))
        return out

    def assess(self, prepared: PreparedText, text: str, token_ids: Any, scores: Any, **options: Any) -> Confidence:
        """The stand-in is sure of its upper case (its hypotheses carry no score, so the service never asks)."""
        return UNCHANGED

    def align_texts(self, pairs: Sequence[tuple[str, str]], language_token: str | None) -> list[TextAlignment | None]:
        return [None] * len(pairs)


def fake_english(sentence: str) -> str:
    """What FakeZhEnTranslator answers for one Chinese sentence."""
    return f"EN[{sentence.strip()}]"


class FakeZhEnTranslator(FakeTranslator):
    """A Chinese->English stand-in (``directions=(("zh", "en"),)``, no target tokens): a sentence's ids are its
    code points, its "translation" :func:`fake_english`."""

    def __init__(self, delay_s: float = 0.0, num_beams: int = 4) -> None:
        super().__init__(delay_s, num_beams)
        self.info = ModelInfo(
            name="fake-zh-en",
            source_id="fake-zh-en",
            precision="fp32",
            directory=Path("fake-zh-en"),
            embedded=False,
            default_beam_size=num_beams,
            max_positions=512,
            targets=(),
            default_target=None,
            has_aligner=False,
            fingerprint="fake-zh-en",
            directions=(("zh", "en"),),
        )

    def resolve_target(self, target: str | None) -> str | None:
        if target not in (None, "en"):
            raise ValueError(f"this model translates into English only, not {target!r}; accepted: None, 'en'")
        return None

    def encode(self, text: str, language_token: str | None) -> list[list[int]]:
        return [[ord(c) for c in text]] if text.strip() else []

    def prepare_text(self, text: str, language_token: str | None, source: str | None = None) -> PreparedText:
        return prepare_text(text, lambda piece: self.encode(piece, language_token), script="han")

    def decode(self, token_ids: Sequence[Sequence[int]]) -> list[str]:
        return [fake_english("".join(map(chr, ids))) for ids in token_ids]
