"""Model quirks the runtime needs, in one place per family. Each rule has a one-line reason.

The exporter records these facts in manifest.json; the runtime reads them back through an adapter
(:func:`adapter_for`), so a different model (or a changed default) needs a different manifest, never different
code. :class:`MarianAdapter`: one target language per ``>>xx<<`` token written before the source text.
:class:`MultilingualAdapter` (M2M100, NLLB-200, mBART-50): a source-language code the tokenizer puts around the
text, and the target-language code forced as the first generated token.
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
    return adapter_for(manifest).resolve_target(target)


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
    source_code: str | None = None  # the languages the manifest names (tokenizer_config's source_lang/target_lang)
    target_code: str | None = None

    @classmethod
    def from_manifest(cls, manifest: Any) -> MarianAdapter:
        ids, languages = manifest.special_ids, manifest.languages
        return cls(
            decoder_start_token_id=ids["decoder_start"],
            eos_token_id=ids["eos"],
            pad_token_id=ids["pad"],
            unk_token_id=ids["unk"],
            language_tokens=tuple(languages.get("tokens", ())),
            default_language=languages.get("default"),
            max_positions=manifest.max_positions,
            generation=dict(manifest.generation),
            source_code=languages.get("source"),
            target_code=languages.get("target"),
        )

    @functools.cached_property  # asked once per translated text; the tokens never change
    def into_chinese(self) -> bool:
        """Whether the model translates into Chinese (the manifest says so, or its target tokens are Chinese ones,
        like opus-mt-en-zh's): then text without Latin letters is already Chinese and is returned unchanged."""
        if self.target_code is not None:
            return self.target_code == "zh"
        # Chinese ISO 639-3 codes of the Tatoeba eng-zho target side (cmn, yue, wuu, ...) and zho/zh itself.
        return any(re.match(r">>(cmn|yue|wuu|gan|hak|nan|lzh|zho|zh)(_|<<)", t) for t in self.language_tokens)

    @property
    def target_language(self) -> str | None:
        """The language the model translates into (ISO 639-1), when the manifest or its tokens tell."""
        return self.target_code or ("zh" if self.into_chinese else None)

    def resolve_target(self, target: str | None) -> str | None:
        """Map a user's target ('zh-Hant', 'cmn_Hant', '>>cmn_Hant<<' or None) to a language token.

        A model whose vocabulary has no ``>>xx<<`` tokens translates into its one target language: it accepts
        ``target=None`` or that language (any other value raises, rather than being silently ignored)."""
        if not self.language_tokens:
            known = self.target_code
            if target is not None and not (known and target.split("-")[0].lower() == known):
                raise ValueError(
                    f"this model has no target-language tokens (it translates into a single language"
                    f"{', ' + known if known else ''}), so target={target!r} cannot be honoured; accepted: None "
                    f"(leave target unset){', ' + repr(known) if known else ''}"
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

    def resolve_source(self, source: str | None) -> str | None:
        """Marian models have one source language, given by the model itself: only None (or the language the
        manifest names) is accepted."""
        known = self.source_language
        if source is None or source == known or (known and source.split("-")[0] == known):
            return None
        raise ValueError(
            f"this model translates from {known or 'its one source language'} only; source={source!r} cannot be "
            f"honoured; accepted: None{', ' + repr(known) if known else ''}"
        )

    @property
    def source_language(self) -> str | None:
        if self.source_code is not None:
            return self.source_code
        # Older OPUS-MT en->zh exports name no source: their target tokens say Chinese, and they read English.
        return "en" if self.into_chinese else None

    @property
    def directions(self) -> tuple[tuple[str, str], ...]:
        """The one (source, target) pair of the model, when both are known."""
        source, target = self.source_language, self.target_language
        return ((source, target),) if source and target else ()

    def source_script(self, source: str | None, target: str | None) -> str:
        """The script whose letters mark text to translate (:data:`enzh.runtime.segment.SCRIPTS`; text without
        one is already in the target language and passes through; "any": every text is translated)."""
        return script_between(self.source_language, self.target_language)

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
        target: Any = None,
        **overrides: Any,
    ) -> DecodingSettings:
        # (``target``: Marian's is a token written into the source text, see with_language_token)
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


# The user's codes for the multilingual families' own (BCP-47-style, mapped in one place): family -> alias -> code.
CODE_ALIASES: dict[str, dict[str, str]] = {
    "nllb": {
        "en": "eng_Latn",
        "zh": "zho_Hans",
        "zh-Hans": "zho_Hans",
        "zh-CN": "zho_Hans",
        "zh-SG": "zho_Hans",
        "zh-Hant": "zho_Hant",
        "zh-TW": "zho_Hant",
        "zh-HK": "zho_Hant",
    },
    # M2M100 has one Chinese (Simplified in its training data), mBART-50 zh_CN: no Traditional aliases for them.
    "m2m100": {"en": "__en__", "zh": "__zh__", "zh-Hans": "__zh__", "zh-CN": "__zh__"},
    "mbart50": {"en": "en_XX", "zh": "zh_CN", "zh-Hans": "zh_CN", "zh-CN": "zh_CN"},
}
CHINESE_CODES = ("zho_Hans", "zho_Hant", "__zh__", "zh_CN", "yue_Hant")
ENGLISH_CODES = ("eng_Latn", "__en__", "en_XX")


def script_between(source: str | None, target: str | None) -> str:
    """English into Chinese: text without a Latin letter is Chinese already (kept). Chinese into anything: text
    without a Han character is not Chinese (kept). Any other pair translates every text ("any")."""
    if source == "zh" and target != "zh":
        return "han"
    if source == "en" and target == "zh":
        return "latin"
    return "any"


@dataclass(frozen=True, kw_only=True)
class MultilingualAdapter:
    """M2M100, NLLB-200 and mBART-50: ``languages`` of the manifest lists the tokenizer's language codes (in id
    order, with their ids), the default source and target; the tokenizer kind names which aliases apply."""

    decoder_start_token_id: int
    eos_token_id: int
    pad_token_id: int
    unk_token_id: int
    kind: str  # the tokenizer: nllb, m2m100 or mbart50
    codes: dict[str, int]  # language code -> token id
    default_source: str
    default_target: str
    max_positions: int
    generation: dict[str, Any]

    @classmethod
    def from_manifest(cls, manifest: Any) -> MultilingualAdapter:
        ids, languages = manifest.special_ids, manifest.languages
        return cls(
            decoder_start_token_id=ids["decoder_start"],
            eos_token_id=ids["eos"],
            pad_token_id=ids["pad"],
            unk_token_id=ids["unk"],
            kind=manifest.tokenizer["kind"],
            codes={str(code): int(idx) for code, idx in languages["codes"].items()},
            default_source=languages["default_source"],
            default_target=languages["default_target"],
            max_positions=manifest.max_positions,
            generation=dict(manifest.generation),
        )

    @property
    def language_tokens(self) -> tuple[str, ...]:
        return tuple(self.codes)

    @property
    def default_language(self) -> str:
        return self.default_target

    @property
    def source_language(self) -> str:
        return self.default_source

    def _resolve(self, code: str | None, default: str, role: str) -> str:
        if code is None:
            return default
        found = CODE_ALIASES.get(self.kind, {}).get(code, code)
        if found in self.codes:
            return found
        aliases = sorted(a for a, c in CODE_ALIASES.get(self.kind, {}).items() if c in self.codes)
        some = ", ".join([*aliases, *list(self.codes)[:8]])
        raise ValueError(f"unknown {role} {code!r}; accepted: {some}, ... ({len(self.codes)} language codes)")

    def resolve_target(self, target: str | None) -> str:
        """The target-language code for ``target`` (an alias such as ``zh-Hant``, or a code such as ``zho_Hant``)."""
        return self._resolve(target, self.default_target, "target")

    def resolve_source(self, source: str | None) -> str:
        return self._resolve(source, self.default_source, "source")

    @functools.cached_property
    def into_chinese(self) -> bool:
        return self.default_target in CHINESE_CODES

    @property
    def directions(self) -> tuple[tuple[str, str], ...]:
        """Every pair between English and Chinese the tokenizer has codes for (en->zh first)."""
        known = {self.language_of(code) for code in self.codes} - {None}
        return tuple((a, b) for a, b in (("en", "zh"), ("zh", "en")) if a in known and b in known)

    def language_of(self, code: str) -> str | None:
        """``en`` or ``zh`` for the family's English and Chinese codes, None for the others."""
        if code in CHINESE_CODES:
            return "zh"
        return "en" if code in ENGLISH_CODES else None

    def source_script(self, source: str | None, target: str | None) -> str:
        """As :meth:`MarianAdapter.source_script`, for the resolved source and target codes."""
        return script_between(
            self.language_of(source or self.default_source), self.language_of(target or self.default_target)
        )

    def with_language_token(self, text: str, token: str | None) -> str:
        # The source-language code is the tokenizer's to add; the target's is forced at decoding.
        return text

    def decoding_settings(
        self,
        *,
        max_new_tokens: int,
        num_beams: int | None = None,
        target: Any = None,
        **overrides: Any,
    ) -> DecodingSettings:
        gen = self.generation
        values: dict[str, Any] = {
            # These families start decoding from eos (</s>), then force the target-language code.
            "decoder_start_token_id": self.decoder_start_token_id,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
            "max_length": min(max_new_tokens + 1, self.max_positions),
            "num_beams": num_beams if num_beams is not None else gen.get("num_beams", 1),
            "length_penalty": gen.get("length_penalty", 1.0),
            "early_stopping": gen.get("early_stopping", False),
            "bad_words_ids": tuple(tuple(seq) for seq in gen.get("bad_words_ids") or ()),
            "renormalize_logits": gen.get("renormalize_logits", False),
            "forced_eos_token_id": gen.get("forced_eos_token_id"),
            # The first generated token is the target-language code (transformers' forced_bos_token_id).
            "forced_bos_token_id": self.codes[self.resolve_target(target)],
            "no_repeat_ngram_size": gen.get("no_repeat_ngram_size", 0),
            "repetition_penalty": gen.get("repetition_penalty", 1.0),
            "min_length": gen.get("min_length", 0),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return DecodingSettings(**values)


Adapter = MarianAdapter | MultilingualAdapter


def adapter_for(manifest: Any) -> Adapter:
    """The adapter of a model directory's family (manifest.model_type)."""
    if manifest.model_type == "marian":
        return MarianAdapter.from_manifest(manifest)
    return MultilingualAdapter.from_manifest(manifest)
