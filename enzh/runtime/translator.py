"""The public entry point: ``Translator.load(model_dir).translate(texts)``.

Runtime only: onnxruntime, numpy and sentencepiece. Never imports torch or transformers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from enzh.runtime.adapter import MarianAdapter
from enzh.runtime.batching import pad_batch, plan_batches
from enzh.runtime.decoding import Hypothesis, generate
from enzh.runtime.manifest import Manifest, ModelDirError
from enzh.runtime.options import DecodingSettings, RuntimeOptions, TranslateOptions
from enzh.runtime.segment import clean_text, split_sentences
from enzh.runtime.sessions import ModelSessions
from enzh.runtime.tokenizer import MarianTokenizer

logger = logging.getLogger("enzh")

# Default output bound when the caller gives no max_new_tokens: twice the source length plus slack,
# rounded up to one of these buckets so sentences of similar length still share a batch.
_BOUND_BUCKETS = (32, 48, 64, 96, 128, 192, 256, 384, 512)


def default_max_new_tokens(source_len: int, limit: int) -> int:
    wanted = 2 * source_len + 16
    bucket = next((b for b in _BOUND_BUCKETS if b >= wanted), wanted)
    return max(1, min(bucket, limit))


@dataclass(frozen=True)
class Translation:
    """One input's translation with the token ids and score of every part it was split into."""

    text: str
    token_ids: tuple[tuple[int, ...], ...]
    scores: tuple[float, ...]
    parts: int


class Translator:
    """Translate English to Chinese with an exported model directory (see ``enzh export``)."""

    def __init__(self, directory: Path, manifest: Manifest, options: RuntimeOptions) -> None:
        self.directory = directory
        self.manifest = manifest
        self.options = options
        self.adapter = MarianAdapter.from_manifest(manifest)
        tok = manifest.tokenizer
        self.tokenizer = MarianTokenizer.from_dir(
            directory, source_spm=tok["source_spm"], target_spm=tok["target_spm"], vocab=tok["vocab"]
        )
        self.sessions = ModelSessions(directory, manifest, options)

    @classmethod
    def load(cls, model_dir: str | os.PathLike[str] | None = None, **runtime_options: object) -> Translator:
        """Load a model directory; ``runtime_options`` are :class:`enzh.runtime.options.RuntimeOptions` fields.

        With no ``model_dir`` the embedded demo model is used (exported into the cache on first use).
        """
        options = RuntimeOptions(**runtime_options)  # type: ignore[arg-type]
        if model_dir is None:
            from enzh.runtime.default_model import default_model_dir

            model_dir = default_model_dir()
        directory = Path(model_dir)
        manifest = Manifest.load(directory)
        manifest.verify_files(directory, check_hashes=options.verify_hashes)
        logger.info("loaded %s (%s) from %s", manifest.source.get("id"), manifest.precision, directory)
        return cls(directory, manifest, options)

    # -- text API ---------------------------------------------------------------------------------------

    def translate(
        self,
        texts: Sequence[str],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        target: str | None = None,
    ) -> list[str]:
        """Translate each text; returns one string per input, in order. Empty or blank input gives ''."""
        return [
            t.text
            for t in self.translate_detailed(texts, beam_size=beam_size, max_new_tokens=max_new_tokens, target=target)
        ]

    def translate_detailed(
        self,
        texts: Sequence[str],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        target: str | None = None,
    ) -> list[Translation]:
        options = TranslateOptions(beam_size=beam_size, max_new_tokens=max_new_tokens, target=target)
        texts = _check_texts(texts)
        token = self.adapter.resolve_target(options.target)
        # Each input becomes one or more parts that fit the model's positions (nothing is truncated).
        parts: list[list[int]] = []
        owner: list[int] = []
        for index, text in enumerate(texts):
            for ids in self._encode_parts(clean_text(text), token):
                parts.append(ids)
                owner.append(index)
        hyps = self.generate_ids(parts, beam_size=options.beam_size, max_new_tokens=options.max_new_tokens)
        decoded = self.tokenizer.decode_batch([h.token_ids for h in hyps])
        results: list[list[tuple[str, Hypothesis]]] = [[] for _ in texts]
        for index, text, hyp in zip(owner, decoded, hyps, strict=True):
            results[index].append((text, hyp))
        return [
            Translation(
                # Chinese needs no space between translated parts.
                text="".join(text for text, _ in items),
                token_ids=tuple(h.token_ids for _, h in items),
                scores=tuple(h.score for _, h in items),
                parts=len(items),
            )
            for items in results
        ]

    def _encode_parts(self, text: str, language_token: str | None) -> list[list[int]]:
        """Source ids of ``text`` split into parts of at most max_positions tokens; [] for blank text."""
        if not text.strip():
            return []
        limit = self.adapter.max_positions
        ids = self.tokenizer.encode(self.adapter.with_language_token(text, language_token))
        if len(ids) <= limit:
            return [ids]
        # Too long: split into sentences, pack them greedily, and split a sentence that alone is too long
        # into windows of SentencePiece pieces.
        chunks: list[list[int]] = []
        pending = ""
        for sentence in split_sentences(text):
            candidate = f"{pending} {sentence}".strip()
            if len(self.tokenizer.encode(self.adapter.with_language_token(candidate, language_token))) <= limit:
                pending = candidate
                continue
            if pending:
                chunks.append(self.tokenizer.encode(self.adapter.with_language_token(pending, language_token)))
            single = self.tokenizer.encode(self.adapter.with_language_token(sentence, language_token))
            if len(single) <= limit:
                pending = sentence
            else:
                chunks.extend(self._windows(sentence, language_token, limit))
                pending = ""
        if pending:
            chunks.append(self.tokenizer.encode(self.adapter.with_language_token(pending, language_token)))
        return chunks

    def _windows(self, sentence: str, language_token: str | None, limit: int) -> list[list[int]]:
        pieces = self.tokenizer.source_pieces(sentence)
        size = limit - 2  # room for the language token and eos
        windows = []
        for start in range(0, len(pieces), size):
            chunk = "".join(pieces[start : start + size]).replace("\u2581", " ").strip()
            ids = self.tokenizer.encode(self.adapter.with_language_token(chunk, language_token))
            while len(ids) > limit:  # re-tokenising joined pieces can differ slightly; shrink until it fits
                chunk = chunk[: int(len(chunk) * 0.9)]
                ids = self.tokenizer.encode(self.adapter.with_language_token(chunk, language_token))
            windows.append(ids)
        return windows

    # -- id API (used by the parity tests and validate) ----------------------------------------------------

    def settings(self, *, max_new_tokens: int, beam_size: int | None = None, **overrides: object) -> DecodingSettings:
        return self.adapter.decoding_settings(max_new_tokens=max_new_tokens, num_beams=beam_size, **overrides)

    def generate_ids(
        self,
        sources: Sequence[Sequence[int]],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        **overrides: object,
    ) -> list[Hypothesis]:
        """Decode source id lists (each ending in eos) into hypotheses, batched by length, in input order."""
        limit = self.adapter.max_positions - 1
        generation_limit = int(self.adapter.generation.get("max_length", limit + 1)) - 1
        for i, source in enumerate(sources):
            if not 0 < len(source) <= self.adapter.max_positions:
                raise ValueError(
                    f"source {i} has {len(source)} tokens; the model accepts 1..{self.adapter.max_positions} "
                    "(use translate(), which splits long text)"
                )

        def bound(i: int) -> int:
            if max_new_tokens is not None:
                return min(max_new_tokens, limit)
            return default_max_new_tokens(len(sources[i]), min(limit, generation_limit))

        batches = plan_batches(
            [len(s) for s in sources],
            max_tokens=self.options.max_batch_tokens,
            max_batch=self.options.max_batch_size,
            group=bound,
        )
        results: list[Hypothesis | None] = [None] * len(sources)
        for batch in batches:
            settings = self.settings(max_new_tokens=bound(batch[0]), beam_size=beam_size, **overrides)
            ids, mask = pad_batch([sources[i] for i in batch], self.adapter.pad_token_id)
            decoder = self.sessions.decoder_for(self.sessions.encode(ids, mask), capacity=settings.max_length)
            hypotheses = generate(decoder, len(batch), settings)
            del decoder  # its cache is freed before the next batch is encoded (lower peak memory)
            for i, hyp in zip(batch, hypotheses, strict=True):
                results[i] = hyp
        return [r for r in results if r is not None]


def _check_texts(texts: object) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, got a single str; wrap it: translate([text])")
    if not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be str, got {type(text).__name__}")
    return list(texts)


__all__ = ["ModelDirError", "Translation", "Translator"]
