"""The public entry point: ``Translator.load(model_dir).translate(texts)``.

Runtime only: onnxruntime, numpy and sentencepiece. Never imports torch or transformers.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from enzh.runtime.adapter import MultilingualAdapter, adapter_for
from enzh.runtime.batching import pad_batch, plan_batches
from enzh.runtime.confidence import FLAGS, Confidence, ConfidenceOptions, assess
from enzh.runtime.confidence import Part as ConfidencePart
from enzh.runtime.constrained import GREEDY_BEAMS, ConstrainedHypothesis, Constraint, constrained_nbest
from enzh.runtime.decoding import Hypothesis, check_num_return_sequences, generate_nbest
from enzh.runtime.engine import Alternative, Engine, ModelInfo, TextAlignment, Translation
from enzh.runtime.glossary import Glossary, GlossaryError, as_glossary
from enzh.runtime.manifest import Manifest, ModelDirError
from enzh.runtime.options import DecodingSettings, RuntimeOptions, TranslateOptions
from enzh.runtime.parallel import ShardRunner, shard_sentences
from enzh.runtime.pieces import Span
from enzh.runtime.running import RunningBatch
from enzh.runtime.segment import PreparedText, assemble_text, join_parts, prepare_text, split_sentences
from enzh.runtime.sessions import ModelSessions
from enzh.runtime.tokenizer import tokenizer_for
from enzh.runtime.words import SentencePair, WordAlignment, align_words

logger = logging.getLogger("enzh")

# A glossary's target term that starts with a character of a script written without spaces (Han, kana, hangul,
# CJK and full-width punctuation) is written inside a translation without the word-start marker.
_NO_SPACE_START = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]")
# A target term ending in a letter or digit of a script written with spaces ends a word: no piece may continue it.
_ENDS_WORD = re.compile(r"[^\W_](?<![\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f])$")

# Default output bound when the caller gives no max_new_tokens: twice the source length plus slack,
# rounded up to one of these buckets so sentences of similar length still share a batch.
_BOUND_BUCKETS = (32, 48, 64, 96, 128, 192, 256, 384, 512)


def default_max_new_tokens(source_len: int, limit: int) -> int:
    wanted = 2 * source_len + 16
    bucket = next((b for b in _BOUND_BUCKETS if b >= wanted), wanted)
    return max(1, min(bucket, limit))


class Translator:
    """Translate English to Chinese with an exported model directory (see ``enzh export``)."""

    def __init__(self, directory: Path, manifest: Manifest, options: RuntimeOptions) -> None:
        self.directory = directory
        self.manifest = manifest
        self.options = options
        self.adapter = adapter_for(manifest)
        self.tokenizer = tokenizer_for(directory, manifest)
        self.sessions = ModelSessions(directory, manifest, options)
        # Threads that decode a batch's sentences at once (enzh.runtime.parallel; 1: the calling thread alone).
        self._shards = ShardRunner(self.sessions.shards)

    @classmethod
    def load(cls, model_dir: str | os.PathLike[str] | None = None, **runtime_options: object) -> Translator:
        """Load a model directory; ``runtime_options`` are :class:`enzh.runtime.options.RuntimeOptions` fields.

        With no ``model_dir`` the embedded demo model is used (shipped exported in the package).
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
        source: str | None = None,
        glossary: Glossary | Mapping[str, str] | str | os.PathLike[str] | None = None,
    ) -> list[str]:
        """Translate each text; returns one string per input, in order.

        Every text is split into sentences (one model input each) and rejoined with its line breaks, blank
        lines and indentation as sent; blank text, and text that is already Chinese, comes back unchanged.
        ``target``/``source``: languages (``zh-Hant``, ``en``, or the model's own codes such as ``zho_Hant``);
        None: the model's defaults (a Marian model has one source language). ``glossary``: terms whose fixed
        target must appear once per occurrence (:mod:`enzh.runtime.glossary`: a :class:`Glossary`, a mapping
        ``{"source": "target"}`` or a TSV file's path; see :meth:`translate_detailed`)."""
        found = self.translate_detailed(
            texts, beam_size=beam_size, max_new_tokens=max_new_tokens, target=target, source=source, glossary=glossary
        )
        return [t.text for t in found]

    def translate_detailed(
        self,
        texts: Sequence[str],
        *,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        target: str | None = None,
        alternatives: int | None = None,
        source: str | None = None,
        alignments: bool = False,
        confidence: ConfidenceOptions | None = None,
        glossary: Glossary | Mapping[str, str] | str | os.PathLike[str] | None = None,
        reverse: Engine | None = None,
        reverse_target: str | None = None,
    ) -> list[Translation]:
        """Translate each text, with token ids and scores; ``alternatives=N`` also returns each text's N best
        translations (N <= the beam size: beam search's n-best, in ``generate(num_return_sequences=N)``'s
        order and with its ``sequences_scores``).

        Every translation has a ``confidence`` (:mod:`enzh.runtime.confidence`: the length-normalised
        log-probability of all its parts' tokens taken as one sequence, i.e. with length_penalty 1 the
        token-weighted mean token log-probability, and the warning flags; ``confidence``: where they fire).
        ``alignments=True`` adds each translation's word alignment (:mod:`enzh.runtime.words`; ``ModelDirError``
        when the model directory has no aligner). ``reverse``: a model of the other direction (with an aligner),
        which aligns each sentence again the other way (its translation as the source, ``reverse_target``, the
        language of ``texts`` as the user names it, None: that model's default, as the target) for pairs both
        directions agree on (:func:`enzh.runtime.words.align_words`); used only with ``alignments``.

        ``glossary``: every sentence holding one of its source terms is decoded by the lexically constrained
        search (:mod:`enzh.runtime.constrained`), which puts the term's target into the translation once per
        occurrence, where the model places it (greedy requests: with a beam of
        :data:`enzh.runtime.constrained.GREEDY_BEAMS`); every other sentence is decoded exactly as without a
        glossary. A translation whose terms could not all fit within ``max_new_tokens`` has the ``glossary``
        flag."""
        glossary = as_glossary(glossary)
        if not isinstance(alignments, bool):
            raise TypeError(f"alignments must be True or False, got {type(alignments).__name__}")
        if alignments and not self.has_aligner:
            raise ModelDirError(
                f"{self.directory} has no aligner.onnx: word alignments need one (enzh export writes it)"
            )
        back = self._reverse_token(reverse, reverse_target) if alignments and reverse is not None else None
        checks = ConfidenceOptions() if confidence is None else confidence
        options = TranslateOptions(beam_size=beam_size, max_new_tokens=max_new_tokens, target=target)
        texts = _check_texts(texts)
        token = self.adapter.resolve_target(options.target)
        source_code = self.adapter.resolve_source(source)
        count = 1 if alternatives is None else self._check_alternatives(alternatives, options.beam_size)
        beams = options.beam_size if options.beam_size is not None else int(self.adapter.generation.get("num_beams", 1))
        # Each text becomes sentences (one model input each, or several parts when a sentence is longer than the
        # model's positions: nothing is truncated) and the layout between them.
        prepared = [self.prepare_text(text, token, source_code) for text in texts]
        sources = [ids for text in prepared for piece in text.sources for ids in piece]
        constraints = (
            [c for text in prepared for c in self.glossary_constraints(text, glossary, token, source_code)]
            if glossary
            else None
        )
        nbest = self.generate_nbest_ids(
            sources,
            num_return_sequences=count,
            beam_size=options.beam_size,
            max_new_tokens=options.max_new_tokens,
            constraints=constraints,
            target=token,
        )
        decoded = iter(self.tokenizer.decode_batch([h.token_ids for hyps in nbest for h in hyps]))
        ranked = iter([[(next(decoded), h) for h in hyps] for hyps in nbest])
        translations = []
        for text in prepared:
            # per piece, per part: the count best (text, hypothesis)
            outputs = [[next(ranked) for _ in piece] for piece in text.sources]
            found = []
            for k in range(count if any(text.sources) else 1):
                parts = [[part[k] for part in piece] for piece in outputs]
                found.append(
                    Alternative(
                        text=self.assemble_text(text, [[t for t, _ in piece] for piece in parts]),
                        token_ids=tuple(h.token_ids for piece in parts for _, h in piece),
                        scores=tuple(h.score for piece in parts for _, h in piece),
                    )
                )
            best = found[0]
            sources_of = [ids for piece in text.sources for ids in piece]
            # Glossary terms that did not fit within the length bound (their best hypotheses say how many).
            unmet = sum(getattr(part[0][1], "unmet", 0) for piece in outputs for part in piece)
            translations.append(
                Translation(
                    text=best.text,
                    token_ids=best.token_ids,
                    scores=best.scores,
                    parts=len(best.token_ids),
                    alternatives=tuple(found) if alternatives is not None else (),
                    confidence=self._confidence(text, best.text, sources_of, best, beams, checks, unmet),
                )
            )
        if alignments:
            aligned = self._word_alignments(prepared, translations, token, reverse if back else None, back)
            translations = [replace(t, alignment=a) for t, a in zip(translations, aligned, strict=True)]
        return translations

    def assess(
        self,
        prepared: PreparedText,
        text: str,
        token_ids: Sequence[Sequence[int]],
        scores: Sequence[float],
        *,
        beam_size: int | None = None,
        confidence: ConfidenceOptions | None = None,
    ) -> Confidence:
        """The confidence of ``text``, assembled from ``prepared``'s model inputs' hypotheses (``token_ids`` and
        ``scores``, one per input in order, from :meth:`generate_ids` with ``beam_size``), exactly as
        :meth:`translate_detailed` scores it (what the HTTP service's batches use)."""
        sources = [ids for piece in prepared.sources for ids in piece]
        if len(token_ids) != len(sources) or len(scores) != len(sources):
            raise ValueError(
                f"assess() got {len(token_ids)} outputs and {len(scores)} scores for {len(sources)} model inputs"
            )
        beams = beam_size if beam_size is not None else int(self.adapter.generation.get("num_beams", 1))
        outputs = Alternative(text=text, token_ids=tuple(tuple(ids) for ids in token_ids), scores=tuple(scores))
        return self._confidence(prepared, text, sources, outputs, beams, confidence or ConfidenceOptions())

    def _confidence(
        self,
        text: PreparedText,
        output: str,
        sources: Sequence[Sequence[int]],
        best: Alternative,
        beams: int,
        options: ConfidenceOptions,
        unmet: int = 0,
    ) -> Confidence:
        special = self._special_ids
        parts = [
            ConfidencePart(source_tokens=sum(1 for t in ids if t not in special), token_ids=out, score=score)
            for ids, out, score in zip(sources, best.token_ids, best.scores, strict=True)
        ]
        source_text = "".join(p.text + p.separator for p in text.pieces)
        found = assess(
            source_text,
            output,
            parts,
            beams=beams,
            length_penalty=float(self.adapter.generation.get("length_penalty", 1.0)),
            special_ids=special,
            unk_id=self.tokenizer.unk_id,
            options=options,
        )
        if unmet:
            found = replace(found, flags=tuple(f for f in FLAGS if f in {*found.flags, "glossary"}))
        return found

    @functools.cached_property
    def _special_ids(self) -> frozenset[int]:
        """Ids that are not words of either side: eos, pad, the decoder start and the language tokens or codes."""
        tokenizer = self.tokenizer
        ids = {tokenizer.eos_id, tokenizer.pad_id, self.adapter.decoder_start_token_id}
        for token in self.adapter.language_tokens:
            found = tokenizer.token_to_id(token)
            if found is not None:
                ids.add(found)
        return frozenset(ids)

    @staticmethod
    def _reverse_token(reverse: Engine, target: str | None) -> tuple[str | None]:
        """The reverse model's resolved target token (in a tuple: the token itself may be None)."""
        if not callable(getattr(reverse, "align_texts", None)) or not hasattr(reverse, "info"):
            raise TypeError(f"reverse must be a translator (an Engine) or None, got {type(reverse).__name__}")
        if not reverse.info.has_aligner:
            raise ModelDirError(
                f"the reverse model {reverse.info.name} has no aligner.onnx: aligning both ways needs one "
                "(enzh export writes it)"
            )
        return (reverse.resolve_target(target),)

    def _word_alignments(
        self,
        prepared: Sequence[PreparedText],
        translations: Sequence[Translation],
        token: str | None,
        reverse: Engine | None = None,
        reverse_token: tuple[str | None] | None = None,
    ) -> list[WordAlignment]:
        """Each text's word alignment: every translated sentence aligned with its source by the aligner graph
        (and by ``reverse``'s, the other way, when given), the pairs placed in the whole texts (a sentence the
        aligner cannot take, e.g. longer than the model's positions, adds no pairs)."""
        jobs: list[tuple[int, int, int, str, str]] = []  # text, source offset, target offset, sentence, output
        for index, (text, translation) in enumerate(zip(prepared, translations, strict=True)):
            outputs = iter(self.decode(translation.token_ids))
            source_at, target_at = 0, 0
            for piece, sources in zip(text.pieces, text.sources, strict=True):
                if sources:
                    output = join_parts([next(outputs) for _ in sources])
                    # assemble_text only adds separators around each sentence's translation: found in order
                    found = translation.text.find(output, target_at) if output else -1
                    if found >= 0:
                        jobs.append((index, source_at, found, piece.text, output))
                        target_at = found + len(output)
                source_at += len(piece.text) + len(piece.separator)
        matrices = self.align_texts([(sentence, output) for _, _, _, sentence, output in jobs], token)
        backs: list[TextAlignment | None] = [None] * len(jobs)
        if reverse is not None and reverse_token is not None and jobs:
            # the other direction: the translation as its source, the sentence as its target
            backs = reverse.align_texts([(output, sentence) for _, _, _, sentence, output in jobs], reverse_token[0])
        sentences: list[list[SentencePair]] = [[] for _ in prepared]
        reverses: list[list[SentencePair | None]] = [[] for _ in prepared]
        for (index, source_at, target_at, _, _), matrix, back in zip(jobs, matrices, backs, strict=True):
            if matrix is not None:
                sentences[index].append(
                    SentencePair(matrix.source, matrix.target, matrix.weights, source_at, target_at)
                )
                reverses[index].append(
                    None if back is None else SentencePair(back.source, back.target, back.weights, target_at, source_at)
                )
        return [
            align_words(
                "".join(p.text + p.separator for p in text.pieces),
                translation.text,
                found,
                reverse=back_pairs if reverse is not None else None,
            )
            for text, translation, found, back_pairs in zip(prepared, translations, sentences, reverses, strict=True)
        ]

    def prepare_text(self, text: str, language_token: str | None, source: str | None = None) -> PreparedText:
        """``text``'s sentences and the source ids of each sentence the model translates (none for blank pieces,
        or for text already in the target language: no Latin letter into Chinese, no Han character from it); see
        :func:`enzh.runtime.segment.prepare_text`. ``language_token``: the resolved target
        (:meth:`resolve_target`), ``source``: the resolved source (:meth:`resolve_source`; None for Marian)."""
        # The caller's code ("zh", "zh-Hant") as the family's own (zho_Hans); Marian's one source is None.
        source = self.adapter.resolve_source(source) if source is not None else None
        script = self.adapter.source_script(source, language_token)
        return prepare_text(text, lambda piece: self._encode_parts(piece, language_token, source), script=script)

    def assemble_text(self, prepared: PreparedText, outputs: Sequence[Sequence[str]]) -> str:
        """The text from its pieces' translations (see :func:`enzh.runtime.segment.assemble_text`)."""
        return assemble_text(prepared, outputs)

    def _check_alternatives(self, count: object, beam_size: int | None) -> int:
        """``alternatives`` hypotheses per text need at least that many beams (HF's num_return_sequences rule)."""
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"alternatives must be an int or None, got {type(count).__name__}")
        beams = beam_size if beam_size is not None else int(self.adapter.generation.get("num_beams", 1))
        if count < 1:
            raise ValueError(f"alternatives must be between 1 and the beam size ({beams}), or None, got {count}")
        if count > beams:
            raise ValueError(
                f"alternatives={count} needs beam search with at least {count} beams, but the beam size is {beams}"
                f"{' (the model default)' if beam_size is None else ''}; pass alternatives between 1 and {beams}, "
                f"or beam_size >= {count}"
            )
        return count

    def _encode(self, text: str, language_token: str | None, source: str | None) -> list[int]:
        """One model input: Marian writes the target token before the text; the multilingual families' tokenizer
        puts the source-language code around it."""
        if isinstance(self.adapter, MultilingualAdapter):
            return self.tokenizer.encode(text, source or self.adapter.default_source)
        return self.tokenizer.encode(self.adapter.with_language_token(text, language_token))

    def _encode_parts(self, text: str, language_token: str | None, source: str | None = None) -> list[list[int]]:
        """Source ids of ``text`` split into parts of at most max_positions tokens; [] for blank text."""
        return [ids for _, ids in self._encode_part_texts(text, language_token, source)]

    def _encode_part_texts(
        self, text: str, language_token: str | None, source: str | None = None
    ) -> list[tuple[str, list[int]]]:
        """:meth:`_encode_parts` with the text of every part."""
        if not text.strip():
            return []
        limit = self.adapter.max_positions

        def encode(part: str) -> list[int]:
            return self._encode(part, language_token, source)

        ids = encode(text)
        if len(ids) <= limit:
            return [(text, ids)]
        # Too long: split into sentences, pack them greedily, and split a sentence that alone is too long
        # into windows of SentencePiece pieces.
        chunks: list[tuple[str, list[int]]] = []
        pending = ""
        for sentence in split_sentences(text, "any"):  # every line cut, whatever its script
            candidate = f"{pending} {sentence}".strip()
            if len(encode(candidate)) <= limit:
                pending = candidate
                continue
            if pending:
                chunks.append((pending, encode(pending)))
            single = encode(sentence)
            if len(single) <= limit:
                pending = sentence
            else:
                chunks.extend(self._windows(sentence, encode, limit))
                pending = ""
        if pending:
            chunks.append((pending, encode(pending)))
        return chunks

    def _windows(self, sentence: str, encode: Callable[[str], list[int]], limit: int) -> list[tuple[str, list[int]]]:
        pieces = [piece for piece, _ in self.tokenizer.source_spans(sentence) or []]
        size = limit - 2  # room for the language token and eos
        windows = []
        for start in range(0, len(pieces), size):
            chunk = "".join(pieces[start : start + size]).replace("\u2581", " ").strip()
            ids = encode(chunk)
            while len(ids) > limit:  # re-tokenising joined pieces can differ slightly; shrink until it fits
                chunk = chunk[: int(len(chunk) * 0.9)]
                ids = encode(chunk)
            windows.append((chunk, ids))
        return windows

    # -- glossaries (enzh.runtime.glossary, enzh.runtime.constrained) ---------------------------------------

    def glossary_constraints(
        self, prepared: PreparedText, glossary: Glossary | None, language_token: str | None, source: str | None = None
    ) -> list[tuple[Constraint, ...]]:
        """The constraints of each of ``prepared``'s model inputs, in order: the target terms of the glossary's
        source terms found in its text, each with its count (empty: decoded without constraints). A sentence
        split into parts has its terms found in each part's own text."""
        out: list[tuple[Constraint, ...]] = []
        for piece, parts in zip(prepared.pieces, prepared.sources, strict=True):
            if not parts:
                continue
            if not glossary:
                out += [()] * len(parts)
                continue
            texts = (
                [piece.text]
                if len(parts) == 1
                else [t for t, _ in self._encode_part_texts(piece.text, language_token, source)]
            )
            if len(texts) != len(parts):  # (the same text splits the same way; never expected)
                raise GlossaryError(f"cannot place glossary terms in the parts of {piece.text[:40]!r}")
            for text in texts:
                out.append(tuple(self._constraint(t.target, t.count, t.origin) for t in glossary.match(text)))
        return out

    def _constraint(self, term: str, count: int, origin: str) -> Constraint:
        ids = self.term_ids(term, origin)
        return Constraint(
            ids,
            count,
            closed=_ENDS_WORD.search(term) is not None,
            weak_start=self.tokenizer.id_to_token(ids[0]) == "\u2581",
        )

    def term_ids(self, term: str, origin: str = "glossary") -> tuple[int, ...]:
        """The target token ids a glossary's target ``term`` is written with inside a translation: the target
        SentencePiece model's pieces of it, written as they read after other text (a term of a script written
        without spaces, such as Chinese, without the word-start marker; one with spaces, such as English, as a
        word of its own). :class:`GlossaryError` naming ``origin`` when the vocabulary lacks a piece or a piece
        is a token the model never writes."""
        found = self._term_cache.get(term)
        if found is not None:
            return found
        spans = self.tokenizer.target_spans(term)
        pieces = [piece for piece, _ in spans or []]
        vocab = self._target_piece_ids
        if pieces and _NO_SPACE_START.match(term):
            if pieces[0] == "\u2581":
                pieces = pieces[1:]
            elif pieces[0].startswith("\u2581") and pieces[0][1:] in vocab:
                pieces[0] = pieces[0][1:]
        missing = [piece for piece in pieces if piece not in vocab]
        if not pieces or missing:
            raise GlossaryError(
                f"{origin}: the model's target vocabulary cannot write {term!r}"
                + (f" (no piece {missing[0]!r})" if missing else "")
                + "; use characters the model knows"
            )
        ids = tuple(vocab[piece] for piece in pieces)
        never = (
            self._special_ids
            | {self.tokenizer.unk_id}
            | {seq[0] for seq in self.adapter.generation.get("bad_words_ids") or () if len(seq) == 1}
        )
        if any(i in never for i in ids):
            raise GlossaryError(f"{origin}: target term {term!r} holds a special token the model never writes")
        self._term_cache[term] = ids
        return ids

    @functools.cached_property
    def _term_cache(self) -> dict[str, tuple[int, ...]]:
        return {}

    @functools.cached_property
    def _continues_word(self) -> np.ndarray:
        """Per target id: whether its piece continues the word before it (no word-start marker, a letter or digit
        first): what may not follow a glossary term that ends a word."""
        size = int(self.manifest.architecture["target_vocab_size"])
        flags = np.zeros(size, dtype=bool)
        for piece, idx in self._target_piece_ids.items():
            flags[idx] = piece[:1].isalnum() and not _NO_SPACE_START.match(piece)
        return flags

    # -- id API (used by the parity tests and validate) ----------------------------------------------------

    def settings(self, *, max_new_tokens: int, beam_size: int | None = None, **overrides: object) -> DecodingSettings:
        """The decoding settings of one call; ``target`` among the overrides: the resolved target, whose code the
        multilingual families force as the first token (Marian's is in the source text)."""
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
        if "num_return_sequences" in overrides:
            raise TypeError("generate_ids() returns one hypothesis per source; for n-best use generate_nbest_ids()")
        nbest = self.generate_nbest_ids(
            sources,
            num_return_sequences=1,
            beam_size=beam_size,
            max_new_tokens=max_new_tokens,
            **overrides,  # type: ignore[arg-type]  # (decoding settings' overrides, checked there)
        )
        return [hyps[0] for hyps in nbest]

    def generate_nbest_ids(
        self,
        sources: Sequence[Sequence[int]],
        *,
        num_return_sequences: int,
        beam_size: int | None = None,
        max_new_tokens: int | None = None,
        constraints: Sequence[Sequence[Constraint]] | None = None,
        **overrides: object,
    ) -> list[list[Hypothesis]]:
        """Like :meth:`generate_ids`, with the ``num_return_sequences`` best hypotheses of every source, best
        first: ``generate(num_return_sequences=N)``'s sequences, order and ``sequences_scores``. N must be
        between 1 and the beam size (greedy search: 1).

        ``constraints``: per source, the target terms its translation must hold (:mod:`enzh.runtime.constrained`);
        sources with none are decoded as without them, in batches of their own."""
        # The settings are checked before any work (the output bound does not change what they accept).
        beams = self.settings(max_new_tokens=1, beam_size=beam_size, **overrides).num_beams
        check_num_return_sequences(num_return_sequences, beams)
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

        if constraints is not None and len(constraints) != len(sources):
            raise ValueError(f"generate_nbest_ids() got {len(constraints)} constraint lists for {len(sources)} sources")
        held = [i for i, c in enumerate(constraints or ()) if c]
        # Sources without constraints, batched as if there were none (all of them when no source has any).
        plain = [i for i, c in enumerate(constraints or [()] * len(sources)) if not c]
        results: list[list[Hypothesis] | None] = [None] * len(sources)
        for group, constrained in ((plain, False), (held, True)):
            if not group:
                continue

            def bound_of(j: int, group: list[int] = group) -> int:
                return bound(group[j])

            batches = plan_batches(
                [len(sources[i]) for i in group],
                # a greedy request's constrained sentences take GREEDY_BEAMS rows each
                max_tokens=max(1, self.options.max_batch_tokens // (GREEDY_BEAMS if constrained and beams == 1 else 1)),
                max_batch=self.options.max_batch_size,
                group=bound_of,
            )
            for batch in ([group[j] for j in b] for b in batches):
                settings = self.settings(max_new_tokens=bound(batch[0]), beam_size=beam_size, **overrides)
                ids, mask = pad_batch([sources[i] for i in batch], self.adapter.pad_token_id)
                lengths = [len(sources[i]) for i in batch]
                terms = [tuple(constraints[i]) for i in batch] if constrained and constraints is not None else None
                hypotheses = self._decode_batch(ids, mask, lengths, settings, num_return_sequences, terms)
                for i, hyps in zip(batch, hypotheses, strict=True):
                    results[i] = hyps
        return [r for r in results if r is not None]

    @property
    def running_lanes(self) -> int:
        """How many running batches of this model step well at once, each on one thread (:meth:`running_batch`
        with ``one_thread``): the shards a batch is decoded in (small models), else 1; 0 when the model has no
        running batches (see :meth:`running_batch`)."""
        if not self._can_run():
            return 0
        return self._shards.threads if self._shards.threads > 1 else 1

    def _can_run(self) -> bool:
        """Whether sentences can join this model's decode between steps: its decoder takes a position per row, and
        no source shortlist chooses its projection's columns per whole batch."""
        return self.sessions.row_positions and self.sessions.source_shortlist is None

    def running_batch(
        self, *, beam_size: int | None = None, one_thread: bool = False, **overrides: object
    ) -> RunningBatch | None:
        """A :class:`~enzh.runtime.running.RunningBatch` of this model: sentences join and leave a decode between
        steps (continuous batching), each with the output bound and result :meth:`generate_ids` gives it. None
        when this model cannot: a decoder exported before per-row positions (``python -m enzh.export.upgrade
        DIR``), or a source-shortlist variant (its projection's columns are chosen per whole batch).
        ``one_thread``: its steps on one thread (it runs beside another running batch)."""
        if not self._can_run():
            return None
        beams = self.settings(max_new_tokens=1, beam_size=beam_size, **overrides).num_beams
        limit = self.adapter.max_positions - 1
        generation_limit = int(self.adapter.generation.get("max_length", limit + 1)) - 1

        @functools.lru_cache(maxsize=64)
        def settings_for(length: int) -> DecodingSettings:
            bound = default_max_new_tokens(length, min(limit, generation_limit))
            return self.settings(max_new_tokens=bound, beam_size=beam_size, **overrides)

        return RunningBatch(
            self.sessions,
            settings_for,
            beams=beams,
            pad_token_id=self.adapter.pad_token_id,
            max_positions=self.adapter.max_positions,
            runner=self._shards if self._shards.threads > 1 else None,
            one_thread=one_thread,
        )

    def _decode_batch(
        self,
        ids: np.ndarray,
        mask: np.ndarray,
        lengths: list[int],
        settings: DecodingSettings,
        count: int,
        constraints: Sequence[tuple[Constraint, ...]] | None = None,
    ) -> list[list[Hypothesis]]:
        """One padded batch's hypotheses. A small fp32 model's sentences are encoded and decoded in shards at once,
        each on its own thread and one-thread sessions (enzh.runtime.parallel); every other batch is one shard.
        ``constraints``: every sentence's glossary terms (the constrained search), None: the usual search."""
        shards = shard_sentences(lengths, self._shards.threads)
        sharded = len(shards) > 1
        # One sentence: its encoder run is too small for a second thread too (the one-thread session, when the
        # model has one: small fp32 models).
        one_thread_encoder = sharded or len(ids) == 1
        selection = self.sessions.select(ids, mask)  # a source shortlist's candidates are the whole batch's

        def decode(sentences: np.ndarray) -> list[list[Hypothesis]]:
            # A shard's rows keep the batch's width: the same attention as in the whole batch, bit for bit.
            rows = (ids[sentences], mask[sentences]) if sharded else (ids, mask)
            part = self.sessions.encode(*rows, select=False, one_thread=one_thread_encoder)
            part.selection = selection
            # The decoder hands its cache buffers to the next one when done (and may reuse part's arrays).
            with self.sessions.decoder_for(
                part, capacity=settings.max_length, consume=True, one_thread=sharded
            ) as decoder:
                if constraints is not None:
                    terms = [constraints[i] for i in sentences.tolist()]
                    found: list[list[ConstrainedHypothesis]] = constrained_nbest(
                        decoder, len(sentences), settings, terms, count, self._continues_word
                    )
                    return list(found)  # type: ignore[arg-type]
                return generate_nbest(decoder, len(sentences), settings, count)

        hypotheses: list[list[Hypothesis]] = [[] for _ in range(len(ids))]
        for sentences, found in zip(shards, self._shards.map(decode, shards), strict=True):
            for i, hyps in zip(sentences.tolist(), found, strict=True):
                hypotheses[i] = hyps
        return hypotheses

    # -- the engine seam (enzh.runtime.engine.Engine): what the layers above the runtime use -------------------

    @functools.cached_property
    def info(self) -> ModelInfo:
        from enzh.runtime.default_model import demo_name

        manifest = self.manifest
        source = str(manifest.source.get("id") or "")
        demo = demo_name(self.directory)
        embedded = demo is not None
        return ModelInfo(
            name=demo or source or self.directory.name,
            source_id=source,
            precision=manifest.precision,
            directory=self.directory,
            embedded=embedded,
            default_beam_size=int(self.adapter.generation.get("num_beams", 1)),
            max_positions=self.adapter.max_positions,
            targets=self.adapter.language_tokens,
            default_target=self.adapter.default_language,
            has_aligner=self.has_aligner,
            fingerprint=hashlib.sha256(manifest.to_json().encode()).hexdigest(),
            directions=self.adapter.directions,
            scored_tokens=self.sessions.scored,
        )

    @property
    def languages(self) -> tuple[str, ...]:
        """The model's target languages: its ``>>xx<<`` tokens (Marian) or every language code its tokenizer
        defines (the multilingual families, which translate from and into each of them)."""
        return self.info.targets

    def resolve_target(self, target: str | None) -> str | None:
        """The language token for ``target`` (see :meth:`MarianAdapter.resolve_target`)."""
        return self.adapter.resolve_target(target)

    def decode(self, token_ids: Sequence[Sequence[int]]) -> list[str]:
        """Target ids to text (special tokens dropped, as ``transformers``' decode with skip_special_tokens)."""
        return self.tokenizer.decode_batch(token_ids)

    def align_texts(self, pairs: Sequence[tuple[str, str]], language_token: str | None) -> list[TextAlignment | None]:
        """For each (sentence, translation) pair, the cross-attention between their pieces (see
        :class:`enzh.runtime.engine.TextAlignment`). Both sides are cut into pieces by their SentencePiece models
        again (not taken from a search), so a pair read back from a journal aligns exactly as a fresh one; None for
        a pair that cannot be aligned: no aligner, a side longer than the model's positions, or pieces that do not
        give the tokenizer's ids (special-token strings typed in the text)."""
        if not self.has_aligner or not pairs:
            return [None] * len(pairs)
        cut = [self._alignment_inputs(sentence, translation, language_token) for sentence, translation in pairs]
        todo = [c for c in cut if c is not None]
        matrices = iter(self.align([c.source_ids for c in todo], [c.target_ids for c in todo]) if todo else [])
        out: list[TextAlignment | None] = []
        for c in cut:
            if c is None:
                out.append(None)
                continue
            # rows: the translation's pieces (not eos); columns: the sentence's pieces (not the language token nor
            # eos), renormalized so that each row sums to 1 over them
            rows = slice(c.target_skip, c.target_skip + len(c.target))
            weights = next(matrices)[rows, c.skip : c.skip + len(c.source)].astype(np.float64)
            weights /= np.maximum(weights.sum(axis=1, keepdims=True), 1e-12)
            out.append(TextAlignment(c.source, c.target, weights))
        return out

    def _alignment_inputs(self, sentence: str, translation: str, language_token: str | None) -> _AlignmentInputs | None:
        tokenizer = self.tokenizer
        source = tokenizer.source_spans(sentence)
        target = tokenizer.target_spans(translation)
        if not source or not target:  # None: not valid UTF-8
            return None
        source_ids = self._encode(sentence, language_token, None)
        skip = len(source_ids) - 1 - len(source)  # the language token before the sentence's pieces
        expected = [tokenizer.token_to_id(piece) for piece, _ in source]
        unk = tokenizer.unk_id
        if skip < 0 or source_ids[skip:-1] != [unk if i is None else i for i in expected]:
            return None
        vocab = self._target_piece_ids
        # The multilingual families' translations start with the forced target-language code.
        adapter = self.adapter
        prefix = (
            [adapter.codes[adapter.resolve_target(language_token)]] if isinstance(adapter, MultilingualAdapter) else []
        )
        target_ids = [*prefix, *(vocab.get(piece, unk) for piece, _ in target), tokenizer.eos_id]
        limit = self.adapter.max_positions
        if len(source_ids) > limit or len(target_ids) > limit:
            return None
        spans = tuple(span for _, span in source), tuple(span for _, span in target)
        return _AlignmentInputs(source_ids, target_ids, spans[0], spans[1], skip, len(prefix))

    @functools.cached_property
    def _target_piece_ids(self) -> dict[str, int]:
        """Target piece -> id over the model's target vocabulary (the lowest id of a piece listed twice)."""
        size = int(self.manifest.architecture["target_vocab_size"])
        vocab: dict[str, int] = {}
        for idx in range(size):
            token = self.tokenizer.id_to_token(idx)
            if token is not None:
                vocab.setdefault(token, idx)
        return vocab

    # -- alignment (the optional aligner graph) ------------------------------------------------------------

    @property
    def has_aligner(self) -> bool:
        """Whether :meth:`align` is available (the model directory has ``aligner.onnx``)."""
        return self.manifest.has_aligner

    def align(self, source_ids: Sequence[Sequence[int]], target_ids: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """The cross-attention of every target token on the source tokens, one float32 matrix per pair:
        ``[len(target_ids[i]), len(source_ids[i])]``, row t while the model predicts ``target_ids[i][t]`` given
        ``target_ids[i][:t]`` (teacher forced), each row summing to 1. ``source_ids`` as for
        :meth:`generate_ids` (with eos); ``target_ids`` a translation's ids (eos included or not). The layers and
        heads averaged are ``manifest.alignment``'s. ``ModelDirError`` when the directory has no aligner."""
        if len(source_ids) != len(target_ids):
            raise ValueError(f"align() got {len(source_ids)} sources and {len(target_ids)} targets")
        limit = self.adapter.max_positions
        for i, (source, target) in enumerate(zip(source_ids, target_ids, strict=True)):
            if not 0 < len(source) <= limit or not 0 < len(target) <= limit:
                raise ValueError(
                    f"pair {i} has {len(source)} source and {len(target)} target tokens; the model accepts 1..{limit}"
                )
        start = self.adapter.decoder_start_token_id
        pad = self.adapter.pad_token_id
        batches = plan_batches(
            [max(len(s), len(t)) for s, t in zip(source_ids, target_ids, strict=True)],
            max_tokens=self.options.max_batch_tokens,
            max_batch=self.options.max_batch_size,
        )
        results: list[np.ndarray | None] = [None] * len(source_ids)
        for batch in batches:
            ids, mask = pad_batch([source_ids[i] for i in batch], pad)
            # decoder input: the start token, then every target token but the last
            decoder_ids, _ = pad_batch([[start, *list(target_ids[i])[:-1]] for i in batch], pad)
            attention = self.sessions.align(ids, mask, decoder_ids)
            for row, i in enumerate(batch):
                results[i] = attention[row, : len(target_ids[i]), : len(source_ids[i])].copy()
        return [r for r in results if r is not None]


@dataclass(frozen=True)
class _AlignmentInputs:
    """A (sentence, translation) pair as the aligner reads it, with the pieces' character ranges."""

    source_ids: list[int]
    target_ids: list[int]  # eos included
    source: tuple[Span, ...]
    target: tuple[Span, ...]
    skip: int  # source ids before the sentence's first piece (the language token)
    target_skip: int = 0  # target ids before the translation's first piece (a forced language code)


def _check_texts(texts: object) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, got a single str; wrap it: translate([text])")
    if not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be str, got {type(text).__name__}")
    return list(texts)


__all__ = ["Alternative", "ModelDirError", "PreparedText", "Translation", "Translator"]
