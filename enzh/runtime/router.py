"""Several models behind one object, each text sent to the model of its direction.

``Translators.load()`` holds the embedded pair (English->Chinese and Chinese->English); ``Translators.load(dirs)``
any exported models. ``translate(texts, source="auto")`` tells each text's language by its script
(:func:`detect_script`: Han ideographs make it Chinese, Latin letters English), picks the model that translates
from that language (into ``target``, or its one target when none is asked for) and hands it the texts it owns,
in one call per model. Text already in the target language comes back unchanged, as it does from one model.

Code above the runtime uses the models through :class:`enzh.runtime.engine.Engine` only; this router is built on
that seam, so the stand-ins of the tests route like real models.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from enzh.runtime.confidence import UNCHANGED
from enzh.runtime.engine import Engine, Translation
from enzh.runtime.glossary import Glossary, as_glossary
from enzh.runtime.words import identity_alignment

AUTO = "auto"
# What a user may write for a language, mapped to its base code (the families' own codes are the engines' to read).
LANGUAGE_ALIASES = {
    "en": "en",
    "en-US": "en",
    "en-GB": "en",
    "zh": "zh",
    "zh-Hans": "zh",
    "zh-CN": "zh",
    "zh-SG": "zh",
    "zh-Hant": "zh",
    "zh-TW": "zh",
    "zh-HK": "zh",
    "zt": "zh",  # LibreTranslate's code for Traditional Chinese
}
# Variants that need the target's own token or code (the rest are the model's default for the language).
TARGET_VARIANTS = {"zt": "zh-Hant"}
# ISO 639-3 codes in the models' own codes (NLLB's eng_Latn, Marian's >>cmn_Hant<<) for their 639-1 ones.
_ISO_639_3 = {"eng": "en", "zho": "zh", "cmn": "zh"}


def base_language(code: str) -> str:
    """``zh`` for ``zh-Hant``, ``zt``, ``zho_Hant``, ``__zh__``, ``zh_CN`` or ``>>cmn_Hant<<``; ``en`` for ``en-GB``
    or ``eng_Latn``; any other code lower-cased up to its first ``-`` or ``_``."""
    if code in LANGUAGE_ALIASES:
        return LANGUAGE_ALIASES[code]
    head = code.strip("<>_").replace("-", "_").split("_")[0].lower()
    return _ISO_639_3.get(head, head)


def _engine_source(code: str) -> str:
    """The source code an engine is handed: a user's alias as ``en``, ``zh`` or ``zh-Hant`` (which every family
    reads), the family's own codes as given."""
    if code not in LANGUAGE_ALIASES:
        return code
    return "zh-Hant" if code in ("zh-Hant", "zh-TW", "zh-HK", "zt") else LANGUAGE_ALIASES[code]


def detect_script(text: str) -> str | None:
    """``zh`` when the text has at least as many Han characters as Latin words, ``en`` when it has Latin letters,
    None when it has neither (digits, punctuation, emoji: nothing to translate). After NFKC, as the models read it.
    A Chinese sentence with an English name in it stays Chinese; an English one quoting a Chinese word stays
    English."""
    text = unicodedata.normalize("NFKC", text)
    han = latin_words = 0
    in_word = False
    for char in text:
        if "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\U00020000" <= char <= "\U0003134f":
            han += 1
            in_word = False
        elif char.isalpha() and unicodedata.name(char, "").startswith("LATIN "):
            latin_words += not in_word
            in_word = True
        else:
            in_word = False
    if han == 0 and latin_words == 0:
        return None
    return "zh" if han >= latin_words else "en"


def unchanged(text: str, *, alignments: bool = False) -> Translation:
    """The translation of a text returned as it is (already in the target language, or nothing to translate):
    no tokens, certain, and with ``alignments`` each word aligned with itself."""
    return Translation(
        text=text,
        token_ids=(),
        scores=(),
        parts=0,
        confidence=UNCHANGED,
        alignment=identity_alignment(text) if alignments else None,
    )


@dataclass(frozen=True)
class Route:
    """Where a text goes: the engine, its resolved target token (None: the model's one target) and the direction."""

    engine: Engine
    target: str | None
    source: str | None  # the language code handed to the engine (None: the model's own source)
    target_language: str | None
    source_language: str | None = None  # the direction's source language (None: a lone model's)


class Translators:
    """Several loaded models; :meth:`translate` routes each text by its language (see the module docstring)."""

    def __init__(self, engines: Sequence[Engine], *, detect: Callable[[str], str | None] = detect_script) -> None:
        if not engines:
            raise ValueError("Translators needs at least one model")
        undirected = [e.info.name for e in engines if not e.info.directions]
        if undirected and len(engines) > 1:
            raise ValueError(
                f"cannot route to {', '.join(undirected)}: nothing in the model says which languages it translates "
                "(export it again with enzh export, which records them from tokenizer_config.json)"
            )
        self.engines = tuple(engines)
        self.detect = detect

    @classmethod
    def load(cls, model_dirs: Sequence[str | os.PathLike[str]] | None = None, **runtime_options: object) -> Translators:
        """Load each model directory (:meth:`enzh.runtime.translator.Translator.load`); none: the embedded pair."""
        from enzh.runtime.default_model import default_model_dirs
        from enzh.runtime.translator import Translator

        dirs = list(model_dirs) if model_dirs else list(default_model_dirs())
        return cls([Translator.load(d, **runtime_options) for d in dirs])

    @property
    def directions(self) -> tuple[tuple[str, str], ...]:
        """Every (source, target) pair some model translates, in the order the models were given."""
        seen: dict[tuple[str, str], None] = {}
        for engine in self.engines:
            seen.update(dict.fromkeys(engine.info.directions))
        return tuple(seen)

    @property
    def languages(self) -> dict[str, tuple[str, ...]]:
        """Each source language with the targets it can be translated into."""
        found: dict[str, tuple[str, ...]] = {}
        for source, target in self.directions:
            found[source] = (*found.get(source, ()), target)
        return found

    def route(self, source: str, target: str | None = None) -> Route:
        """The model for ``source`` (a language code, not ``auto``) into ``target`` (None: the first target the
        loaded models offer from that language); ``ValueError`` naming the directions there are otherwise."""
        if self._lone:
            engine = self.engines[0]  # a lone model that names no languages takes whatever it is given
            return Route(engine, engine.resolve_target(target), None, None)
        want_source = base_language(source)
        want_target = base_language(target) if target else None
        for engine in self.engines:
            for pair in engine.info.directions:
                if pair[0] == want_source and want_target in (None, pair[1]):
                    # The user's own code when given (zh-Hant, zho_Hant), else the direction's language.
                    asked = TARGET_VARIANTS.get(target, target) if target else pair[1]
                    return Route(engine, engine.resolve_target(asked), _engine_source(source), pair[1], pair[0])
        # A multilingual model also translates into its other codes (fr_XX, deu_Latn): its own error names them.
        readers = [e for e in self.engines if any(pair[0] == want_source for pair in e.info.directions)]
        errors = []
        other = target is not None and want_target not in {pair[1] for pair in self.directions}
        for engine in readers if other else ():
            try:
                token = engine.resolve_target(target)
            except ValueError as exc:
                errors.append(exc)
                continue
            return Route(engine, token, _engine_source(source), want_target, want_source)
        if len(errors) == 1:
            raise errors[0]
        offered = ", ".join(f"{a}->{b}" for a, b in self.directions)
        raise ValueError(
            f"no loaded model translates {source!r} into {target or 'any language'!r}; offered: {offered} "
            "(load a model of that direction with --model)"
        )

    def translate(
        self,
        texts: Sequence[str],
        *,
        source: str = AUTO,
        target: str | None = None,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        glossary: Glossary | Mapping[str, str] | None = None,
    ) -> list[str]:
        """One translation per text, in order (see :meth:`translate_detailed`)."""
        found = self.translate_detailed(
            texts, source=source, target=target, beam_size=beam_size, max_new_tokens=max_new_tokens, glossary=glossary
        )
        return [t.text for t in found]

    def translate_detailed(
        self,
        texts: Sequence[str],
        *,
        source: str = AUTO,
        target: str | None = None,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        alignments: bool = False,
        glossary: Glossary | Mapping[str, str] | None = None,
    ) -> list[Translation]:
        """Translate each text with the model of its direction: ``source="auto"`` detects each text's language
        (text with no letters, or already in ``target``, comes back unchanged); an explicit ``source`` sends every
        text to that direction's model. Every translation has its confidence; ``alignments=True`` adds each one's
        word alignment (:meth:`enzh.runtime.engine.Engine.translate_detailed`; a text returned unchanged scores
        0.0 and is aligned word for word with itself). ``glossary``: passed to every model (each finds the source
        terms of its own language)."""
        glossary = as_glossary(glossary)  # (read and checked once for every model)
        routes = [self._route_text(text, source, target) for text in texts]
        # Texts that stay as they are: one empty-token translation each, certain, each word its own.
        results = [unchanged(text, alignments=alignments) for text in texts]
        groups: dict[tuple[int, str | None, str | None], list[int]] = {}
        backs: dict[tuple[int, str | None, str | None], dict[str, Any]] = {}
        for i, route in enumerate(routes):
            if route is not None:
                key = (self.engines.index(route.engine), route.target, route.source)
                groups.setdefault(key, []).append(i)
                if alignments and key not in backs:
                    backs[key] = self._reverse(route)
        # Only what was asked for: stand-ins without the keywords keep working.
        extra: dict[str, Any] = {"alignments": True} if alignments else {}
        if glossary:
            extra["glossary"] = glossary
        # One call per model, direction and target: each model batches its own texts.
        for (index, token, code), members in groups.items():
            done = self.engines[index].translate_detailed(
                [texts[i] for i in members],
                beam_size=beam_size,
                max_new_tokens=max_new_tokens,
                target=token,
                source=code,
                **extra,
                **backs.get((index, token, code), {}),
            )
            for i, translation in zip(members, done, strict=True):
                results[i] = translation
        return results

    def detect_language(self, text: str) -> str | None:
        """The language :meth:`translate` takes ``text`` to be in (None: no letters to tell by)."""
        return self.detect(text)

    def _reverse(self, route: Route) -> dict[str, Any]:
        if route.source_language is None or route.target_language is None:
            return {}
        return self.reverse_keywords(route.engine, (route.source_language, route.target_language))

    def reverse_keywords(self, engine: Engine, direction: tuple[str, str] | None) -> dict[str, Any]:
        """The keywords of ``engine.translate_detailed`` that align its translations of ``direction`` (source,
        target languages) both ways: another loaded model with an aligner that translates the opposite direction as
        ``reverse``, the source language as ``reverse_target``; none when no such model is loaded (or for a
        lone model: no direction)."""
        if direction is None:
            return {}
        back = (base_language(direction[1]), base_language(direction[0]))
        for other in self.engines:
            if other is not engine and other.info.has_aligner and back in other.info.directions:
                return {"reverse": other, "reverse_target": direction[0]}
        return {}

    @property
    def _lone(self) -> bool:
        return len(self.engines) == 1 and not self.engines[0].info.directions

    def _route_text(self, text: str, source: str, target: str | None) -> Route | None:
        if source != AUTO or self._lone:
            return self.route(source, target)
        found = self.detect(text)
        if found is None or (target is not None and found == base_language(target)):
            return None  # nothing to translate, or already in the target language: returned as it is
        if target is None and found not in self.languages:
            return None  # in a language no model reads (Chinese for an en->zh model alone): as it is
        return self.route(found, target)
