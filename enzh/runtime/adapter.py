"""Marian model quirks, in one place. Each rule has a one-line reason.

The exporter records these facts in manifest.json; the runtime reads them back through this adapter, so a
different Marian model (or a changed default) needs a different manifest, never different code.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from enzh.runtime.options import DecodingSettings

# Marian source sentences may start with a target-language token such as ">>cmn_Hans<<".
LANGUAGE_TOKEN = re.compile(r">>[^<>\s]+<<")

# Friendly names for the target tokens of opus-mt-en-zh (and the demo model).
TARGET_ALIASES = {
    "zh": ">>cmn_Hans<<",
    "zh-Hans": ">>cmn_Hans<<",
    "zh-CN": ">>cmn_Hans<<",
    "zh-Hant": ">>cmn_Hant<<",
    "zh-TW": ">>cmn_Hant<<",
}

# Preferred default target when a model has several: Simplified Mandarin.
PREFERRED_DEFAULT_TARGETS = (">>cmn_Hans<<", ">>cmn<<", ">>zho_Hans<<")


def default_language_token(tokens: list[str]) -> str | None:
    for token in PREFERRED_DEFAULT_TARGETS:
        if token in tokens:
            return token
    return tokens[0] if tokens else None


def resolve_target(manifest: Any, target: str | None) -> str | None:
    """The language token a model directory's manifest gives ``target`` (``ValueError`` for one it lacks), without
    loading the model: for checks made before any work starts."""
    return MarianAdapter.from_manifest(manifest).resolve_target(target)


@dataclass(frozen=True, kw_only=True)
class MarianAdapter:
    decoder_start_token_id: int
    eos_token_id: int
    pad_token_id: int
    unk_token_id: int
    language_tokens: tuple[str, ...]
    default_language: str | None
    max_positions: int
    generation: dict[str, Any]

    @classmethod
    def from_manifest(cls, manifest: Any) -> MarianAdapter:
        ids = manifest.special_ids
        return cls(
            decoder_start_token_id=ids["decoder_start"],
            eos_token_id=ids["eos"],
            pad_token_id=ids["pad"],
            unk_token_id=ids["unk"],
            language_tokens=tuple(manifest.languages.get("tokens", ())),
            default_language=manifest.languages.get("default"),
            max_positions=manifest.max_positions,
            generation=dict(manifest.generation),
        )

    @functools.cached_property  # asked once per translated text; the tokens never change
    def into_chinese(self) -> bool:
        """Whether the model translates into Chinese (its target tokens are Chinese ones, like opus-mt-en-zh's):
        then text without Latin letters is already Chinese and is returned unchanged, not translated."""
        # Chinese ISO 639-3 codes of the Tatoeba eng-zho target side (cmn, yue, wuu, ...) and zho/zh itself.
        return any(re.match(r">>(cmn|yue|wuu|gan|hak|nan|lzh|zho|zh)(_|<<)", t) for t in self.language_tokens)

    def resolve_target(self, target: str | None) -> str | None:
        """Map a user's target ('zh-Hant', 'cmn_Hant', '>>cmn_Hant<<' or None) to a language token.

        A model whose vocabulary has no ``>>xx<<`` tokens translates into its one target language: it accepts
        only ``target=None`` (any other value raises, rather than being silently ignored)."""
        if not self.language_tokens:
            if target is not None:
                raise ValueError(
                    f"this model has no target-language tokens (it translates into a single language), so "
                    f"target={target!r} cannot be honoured; accepted: None (leave target unset)"
                )
            return None
        if target is None:
            return self.default_language
        candidates = (TARGET_ALIASES.get(target), target, f">>{target}<<")
        for token in candidates:
            if token is not None and token in self.language_tokens:
                return token
        accepted = sorted(
            {a for a, t in TARGET_ALIASES.items() if t in self.language_tokens} | set(self.language_tokens)
        )
        raise ValueError(f"unknown target {target!r}; accepted: {', '.join(accepted)}")

    def with_language_token(self, text: str, token: str | None) -> str:
        # opus-mt-en-zh needs a target-language token first, or it mixes scripts; never add a second one.
        # Marian only honours a token at position 0, so one after leading spaces is moved there.
        # Models without language tokens (one target language) get the text exactly as given.
        if not self.language_tokens:
            return text
        if LANGUAGE_TOKEN.match(text.lstrip()):
            return text.lstrip()
        return text if token is None else f"{token} {text}"

    def decoding_settings(
        self,
        *,
        max_new_tokens: int,
        num_beams: int | None = None,
        **overrides: Any,
    ) -> DecodingSettings:
        gen = self.generation
        values: dict[str, Any] = {
            # Marian decodes from the pad id, never from eos (0).
            "decoder_start_token_id": self.decoder_start_token_id,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
            # Positions beyond the sinusoidal table do not exist: the decoder may feed at most max_positions tokens.
            "max_length": min(max_new_tokens + 1, self.max_positions),
            "num_beams": num_beams if num_beams is not None else gen.get("num_beams", 1),
            "length_penalty": gen.get("length_penalty", 1.0),
            "early_stopping": gen.get("early_stopping", False),
            # The pad token must never be generated (generation_config bad_words_ids = [[pad]]).
            "bad_words_ids": tuple(tuple(seq) for seq in gen.get("bad_words_ids") or ((self.pad_token_id,),)),
            "renormalize_logits": gen.get("renormalize_logits", False),
            # Marian forces eos at the length limit so every output ends properly.
            "forced_eos_token_id": gen.get("forced_eos_token_id", self.eos_token_id),
            "no_repeat_ngram_size": gen.get("no_repeat_ngram_size", 0),
            "repetition_penalty": gen.get("repetition_penalty", 1.0),
            "min_length": gen.get("min_length", 0),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return DecodingSettings(**values)
