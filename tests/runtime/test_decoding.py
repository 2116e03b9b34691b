"""enzh.runtime.decoding must give exactly the tokens of transformers ``generate()``.

Tiny random MarianMTModels (built here, no downloads) drive both HF ``generate()`` and our numpy search
through ``TorchDecoder``, a test-only :class:`~enzh.runtime.decoding.IncrementalDecoder` over the same torch model.
Token ids must be identical; scores must agree to float32 rounding.
"""

from __future__ import annotations

import copy
import itertools
import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers import GenerationConfig, MarianConfig, MarianMTModel  # noqa: E402
from transformers.cache_utils import DynamicCache, EncoderDecoderCache  # noqa: E402
from transformers.generation import logits_process as hf_processors  # noqa: E402

from enzh.runtime import decoding, processors, topk  # noqa: E402
from enzh.runtime.decoding import Hypothesis, Step, beam_search, generate, greedy_search  # noqa: E402
from enzh.runtime.options import DecodingSettings  # noqa: E402

EOS = 0
_IMPOSSIBLE = np.float32(-1.0e9)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----------------------------------------------------------------------------------------------------------
# Tiny random models
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    seed: int
    vocab: int
    d_model: int
    layers: int
    heads: int
    shared_embeddings: bool  # share_encoder_decoder_embeddings
    tied_lm_head: bool  # tie_word_embeddings
    init_std: float
    random_bias: bool  # random non-zero final_logits_bias
    eos_ramp: tuple[float, float] | None  # (slope, weight), see build_model

    @property
    def pad(self) -> int:
        return self.vocab - 1


SMALL = ModelSpec(1, 50, 16, 1, 2, True, True, 0.5, False, (0.3, 20.0))
WIDE = ModelSpec(2, 300, 64, 2, 4, False, True, 0.1, True, (1.0, 50.0))
MID = ModelSpec(3, 120, 32, 2, 4, True, False, 0.2, True, (0.3, 50.0))
PLAIN = ModelSpec(4, 80, 48, 1, 3, False, True, 0.3, False, None)  # a random model as built: eos is rare


@cache
def build_model(spec: ModelSpec) -> MarianMTModel:
    config = MarianConfig(
        vocab_size=spec.vocab,
        decoder_vocab_size=spec.vocab,
        d_model=spec.d_model,
        encoder_layers=spec.layers,
        decoder_layers=spec.layers,
        encoder_attention_heads=spec.heads,
        decoder_attention_heads=spec.heads,
        encoder_ffn_dim=2 * spec.d_model,
        decoder_ffn_dim=2 * spec.d_model,
        max_position_embeddings=256,
        pad_token_id=spec.pad,
        decoder_start_token_id=spec.pad,
        eos_token_id=EOS,
        share_encoder_decoder_embeddings=spec.shared_embeddings,
        tie_word_embeddings=spec.tied_lm_head,
        init_std=spec.init_std,
    )
    torch.manual_seed(spec.seed)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        if spec.random_bias:
            model.final_logits_bias.normal_(0.0, 1.0)
        if spec.eos_ramp is not None:
            # Random models stop at once or never. Make eos grow likelier with the step instead: decoder
            # position t gets t * slope along a random direction u, eos's output row becomes weight * u, and
            # the eos bias is shifted so that eos wins around step 12 (teacher-forced on random targets).
            slope, weight = spec.eos_ramp
            direction = torch.randn(spec.d_model)
            direction /= direction.norm()
            positions = model.model.decoder.embed_positions.weight
            positions += slope * torch.arange(positions.shape[0], dtype=torch.float32)[:, None] * direction
            model.lm_head.weight[EOS] = weight * direction
            source = torch.randint(1, spec.pad, (16, 12))
            target = torch.randint(1, spec.pad, (16, 16))
            target[:, 0] = spec.pad
            logits = model(input_ids=source, decoder_input_ids=target).logits
            margin = logits[:, 12, 1 : spec.pad].max(dim=-1).values - logits[:, 12, EOS]
            model.final_logits_bias[0, EOS] += margin.median()
    # A clean generation config: nothing (e.g. Marian's default forced_eos_token_id) leaks into generate().
    model.generation_config = GenerationConfig(decoder_start_token_id=spec.pad, eos_token_id=EOS, pad_token_id=spec.pad)
    return model


class TorchDecoder:
    """IncrementalDecoder over a torch MarianMTModel: encoder once, then one decoder step per call."""

    def __init__(self, model: MarianMTModel, input_ids: Any, attention_mask: Any) -> None:
        self.model = model
        with torch.no_grad():
            encoded = model.model.encoder(input_ids=input_ids, attention_mask=attention_mask)
        self.encoder_states = encoded.last_hidden_state
        self.encoder_mask = attention_mask
        self.cache = EncoderDecoderCache(DynamicCache(config=model.config), DynamicCache(config=model.config))

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        assert tokens.dtype == np.int64 and tokens.ndim == 1
        assert len(tokens) == self.encoder_states.shape[0]
        with torch.no_grad():
            out = self.model.model.decoder(
                input_ids=torch.from_numpy(tokens)[:, None],
                encoder_hidden_states=self.encoder_states,
                encoder_attention_mask=self.encoder_mask,
                past_key_values=self.cache,
                use_cache=True,
            )
            raw = self.model.lm_head(out.last_hidden_state) + self.model.final_logits_bias
        return Step.from_logits(raw[:, -1].float().numpy(), top_k, keep_logits=logits)

    def reorder(self, rows: np.ndarray) -> None:
        assert rows.dtype == np.int64 and rows.ndim == 1
        index = torch.from_numpy(rows)
        self.cache.reorder_cache(index)  # index_select on every self- and cross-attention key/value tensor
        self.encoder_states = self.encoder_states.index_select(0, index)
        self.encoder_mask = self.encoder_mask.index_select(0, index)


class CountingDecoder:
    """Wraps a decoder and records how many rows every step ran."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.rows_per_step: list[int] = []

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        self.rows_per_step.append(len(tokens))
        return self.inner.step(tokens, top_k, logits)

    def reorder(self, rows: np.ndarray) -> None:
        self.inner.reorder(rows)


# ----------------------------------------------------------------------------------------------------------
# Running both implementations
# ----------------------------------------------------------------------------------------------------------


def make_sources(spec: ModelSpec, count: int, seed: int) -> list[list[int]]:
    """Sources of very different lengths (1..40 tokens + eos), never containing eos or pad inside."""
    rng = np.random.default_rng(seed)
    lengths = rng.permutation(np.linspace(1, 40, count).astype(int))
    return [[*rng.integers(1, spec.pad, size=int(length)).tolist(), EOS] for length in lengths]


def pad_batch(spec: ModelSpec, sources: list[list[int]]) -> tuple[Any, Any]:
    width = max(len(s) for s in sources)
    ids = torch.full((len(sources), width), spec.pad, dtype=torch.long)
    mask = torch.zeros((len(sources), width), dtype=torch.long)
    for row, source in enumerate(sources):
        ids[row, : len(source)] = torch.tensor(source)
        mask[row, : len(source)] = 1
    return ids, mask


def hf_generate(
    spec: ModelSpec, sources: list[list[int]], settings: DecodingSettings, model: Any = None
) -> list[Hypothesis]:
    """Reference: transformers generate() with the same settings (max_new_tokens = max_length - 1), on
    ``build_model(spec)`` or on ``model`` (a model of the same spec)."""
    kwargs: dict[str, Any] = {
        "num_beams": settings.num_beams,
        "do_sample": False,
        "max_new_tokens": settings.max_length - 1,
        "renormalize_logits": settings.renormalize_logits,
        "return_dict_in_generate": True,
        "output_scores": True,
    }
    if settings.num_beams > 1:
        kwargs.update(length_penalty=settings.length_penalty, early_stopping=settings.early_stopping)
    if settings.bad_words_ids:
        kwargs["bad_words_ids"] = [list(sequence) for sequence in settings.bad_words_ids]
    if settings.forced_eos_token_id is not None:
        kwargs["forced_eos_token_id"] = settings.forced_eos_token_id
    if settings.no_repeat_ngram_size:
        kwargs["no_repeat_ngram_size"] = settings.no_repeat_ngram_size
    if settings.repetition_penalty != 1.0:
        kwargs["repetition_penalty"] = float(settings.repetition_penalty)
    if settings.min_length:
        kwargs["min_length"] = settings.min_length
    if settings.forced_bos_token_id is not None:
        kwargs["forced_bos_token_id"] = settings.forced_bos_token_id
    ids, mask = pad_batch(spec, sources)
    with torch.no_grad():
        model = build_model(spec) if model is None else model
        out = model.generate(ids, attention_mask=mask, **kwargs)
    sequences = out.sequences[:, 1:].tolist()  # strip the decoder start token
    if settings.num_beams > 1:
        scores = out.sequences_scores.tolist()
    else:
        # Greedy: sum of the log-softmax of the processed scores HF reports, over the real tokens.
        steps = torch.stack(out.scores, dim=1)
        log_probs = steps if settings.renormalize_logits else torch.log_softmax(steps, dim=-1)
        picked = log_probs.gather(2, out.sequences[:, 1:, None])[..., 0]
        scores = torch.where(out.sequences[:, 1:] != spec.pad, picked, 0.0).sum(dim=1).tolist()
    results = []
    for tokens, score in zip(sequences, scores, strict=True):
        while tokens and tokens[-1] == spec.pad:  # strip batch padding
            tokens.pop()
        assert spec.pad not in tokens
        results.append(Hypothesis(tuple(tokens), score))
    return results


def ours(spec: ModelSpec, sources: list[list[int]], settings: DecodingSettings) -> list[Hypothesis]:
    ids, mask = pad_batch(spec, sources)
    return generate(TorchDecoder(build_model(spec), ids, mask), len(sources), settings)


def assert_same(actual: list[Hypothesis], expected: list[Hypothesis], what: str) -> None:
    assert [h.token_ids for h in actual] == [h.token_ids for h in expected], what
    np.testing.assert_allclose([h.score for h in actual], [h.score for h in expected], rtol=1e-5, atol=1e-5)


def settings_for(spec: ModelSpec, max_new_tokens: int, **overrides: Any) -> DecodingSettings:
    """Marian-style settings: decoding starts from pad, which must never be generated."""
    options: dict[str, Any] = {"bad_words_ids": ((spec.pad,),), **overrides}
    return DecodingSettings(
        decoder_start_token_id=spec.pad,
        eos_token_id=EOS,
        pad_token_id=spec.pad,
        max_length=max_new_tokens + 1,
        **options,
    )


@dataclass(frozen=True)
class Case:
    spec: ModelSpec
    max_new_tokens: int
    options: dict[str, Any] = field(default_factory=dict)
    count: int = 14
    hf_one_by_one: int = 2  # how many sentences are also decoded alone by HF (slow, so only a few)


CASES = {
    # greedy
    "greedy-small": Case(SMALL, 20),
    "greedy-wide-renorm": Case(WIDE, 40, {"renormalize_logits": True}),
    "greedy-ngram-reppen": Case(MID, 30, {"no_repeat_ngram_size": 3, "repetition_penalty": 1.3}),
    "greedy-forced-eos-minlen": Case(MID, 12, {"forced_eos_token_id": EOS, "min_length": 5}),
    "greedy-plain-short": Case(PLAIN, 3, count=12),
    "greedy-one-token": Case(WIDE, 1, count=8),
    # beam 4, Marian-like defaults
    "beam4-marian": Case(WIDE, 40, {"num_beams": 4, "renormalize_logits": True, "forced_eos_token_id": EOS}),
    "beam4-lp0.6-early": Case(SMALL, 30, {"num_beams": 4, "length_penalty": 0.6, "early_stopping": True}),
    "beam4-lp2-never": Case(MID, 25, {"num_beams": 4, "length_penalty": 2.0, "early_stopping": "never"}),
    "beam4-lp1-false-norenorm": Case(MID, 30, {"num_beams": 4, "renormalize_logits": False}),
    "beam4-lp0.6-never-renorm": Case(
        WIDE,
        20,
        {"num_beams": 4, "length_penalty": 0.6, "early_stopping": "never", "renormalize_logits": True},
    ),
    "beam4-minlen-forced": Case(
        SMALL, 10, {"num_beams": 4, "min_length": 7, "forced_eos_token_id": EOS, "renormalize_logits": True}
    ),
    "beam4-plain-short": Case(PLAIN, 2, {"num_beams": 4}, count=10),
    "beam4-plain-long": Case(PLAIN, 60, {"num_beams": 4, "renormalize_logits": True}, count=8),
    "beam4-mid-long": Case(MID, 60, {"num_beams": 4, "length_penalty": 1.0, "early_stopping": False}),
    # other beam sizes
    "beam2-never": Case(MID, 30, {"num_beams": 2, "early_stopping": "never"}),
    "beam2-early-lp2": Case(WIDE, 30, {"num_beams": 2, "early_stopping": True, "length_penalty": 2.0}),
    "beam5-ngram-reppen": Case(
        MID,
        30,
        {"num_beams": 5, "length_penalty": 0.6, "no_repeat_ngram_size": 3, "repetition_penalty": 1.3},
    ),
    "beam5-one-token": Case(SMALL, 1, {"num_beams": 5}, count=8),
    # a forced first token (the target language of the multilingual families)
    "greedy-forced-bos-minlen": Case(WIDE, 20, {"forced_bos_token_id": 9, "min_length": 4}),
    "beam4-forced-bos": Case(MID, 20, {"num_beams": 4, "forced_bos_token_id": 7, "renormalize_logits": True}),
    "beam2-forced-bos-eos": Case(SMALL, 6, {"num_beams": 2, "forced_bos_token_id": 3, "forced_eos_token_id": EOS}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_transformers_generate(name: str) -> None:
    case = CASES[name]
    settings = settings_for(case.spec, case.max_new_tokens, **case.options)
    sources = make_sources(case.spec, case.count, seed=len(name))

    expected = hf_generate(case.spec, sources, settings)
    batched = ours(case.spec, sources, settings)
    assert_same(batched, expected, f"{name}: batched vs transformers")

    one_by_one = [ours(case.spec, [source], settings)[0] for source in sources]
    assert_same(one_by_one, batched, f"{name}: one-by-one vs batched")
    # HF alone on the shortest and the longest source too (a few only: HF is the slow part).
    by_length = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    for index in [by_length[0], by_length[-1]][: case.hf_one_by_one]:
        alone = hf_generate(case.spec, [sources[index]], settings)
        assert_same([one_by_one[index]], alone, f"{name}: alone vs transformers")


def test_cases_cover_enough_sentences_and_lengths() -> None:
    """The table decodes 200+ sentences, and they finish at many different steps (random models tend to stop
    at once or never)."""
    lengths: set[int] = set()
    stopped_early = varied_cases = total = 0
    for name, case in CASES.items():
        sources = make_sources(case.spec, case.count, seed=len(name))
        results = ours(case.spec, sources, settings_for(case.spec, case.max_new_tokens, **case.options))
        case_lengths = [len(h.token_ids) for h in results]
        lengths.update(case_lengths)
        stopped_early += sum(n < case.max_new_tokens for n in case_lengths)
        varied_cases += len(set(case_lengths)) >= 3
        total += len(results)
    assert total >= 200
    assert len(lengths) >= 20
    assert stopped_early >= total // 2
    assert varied_cases >= 12


# Exact float32 ties between candidates, which torch.topk orders its own way (its CPU kernel, TopKImpl.h, runs
# std::partial_sort / std::nth_element on every ATen kernel path: see enzh.runtime.topk.torch_top_k and
# test_torch_topk_order_is_the_same_on_every_kernel_path). Whether a random model produces such ties depends on
# float rounding, which differs between CPUs (the two cases below, found by a long randomized comparison on an
# AVX-512 machine, tie there but not on an AVX2-only one), so they only check parity; the twin-token model
# below makes ties by construction, on every CPU.
FOUND_TIE_CASES: dict[str, tuple[ModelSpec, dict[str, Any], int]] = {
    "tie-within-one-beam": (
        ModelSpec(12, 200, 48, 2, 2, True, True, 0.15, False, (1.0, 50.0)),
        {"no_repeat_ngram_size": 2, "repetition_penalty": 2.0, "min_length": 6},
        4292,
    ),
    "tie-across-beams": (
        ModelSpec(11, 64, 32, 1, 4, False, False, 0.3, True, (0.5, 30.0)),
        {"repetition_penalty": 1.3, "bad_words_ids": ((63,), (60, 7), (25,), (63, 45))},
        353463,
    ),
}


@pytest.mark.parametrize("name", list(FOUND_TIE_CASES))
def test_found_tie_cases_match_generate(name: str) -> None:
    spec, options, seed = FOUND_TIE_CASES[name]
    settings = settings_for(spec, 40, num_beams=3, length_penalty=2.0, early_stopping="never", **options)
    sources = make_sources(spec, 3, seed)
    assert_same(ours(spec, sources, settings), hf_generate(spec, sources, settings), name)


# Twin tokens: token t + 150 gets token t's embedding, output row and bias (t = 1..59) in WIDE's model, so the
# two score exactly alike in every row, and two beams that differ only by twins have identical states and tie at
# every later step: exact ties whatever the CPU's rounding. One sentence at a time: in a padded batch, rows that
# should be equal can differ in the last bit depending on their place in a GEMM (transformers' batched output then
# differs from its own one-by-one output under such ties).
TWIN_OFFSET = 150


@cache
def twin_model() -> MarianMTModel:
    model = copy.deepcopy(build_model(WIDE))
    with torch.no_grad():
        for token in range(1, WIDE.vocab - 1 - TWIN_OFFSET):
            twin = token + TWIN_OFFSET
            model.model.decoder.embed_tokens.weight[twin] = model.model.decoder.embed_tokens.weight[token]
            model.lm_head.weight[twin] = model.lm_head.weight[token]
            model.final_logits_bias[0, twin] = model.final_logits_bias[0, token]
    return model


@pytest.mark.parametrize(
    ("num_beams", "options"),
    [(2, {}), (3, {}), (4, {"length_penalty": 2.0, "early_stopping": "never"}), (5, {"repetition_penalty": 1.3})],
)
def test_exact_ties_are_ordered_like_torch_topk(
    num_beams: int, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = twin_model()
    settings = settings_for(WIDE, 30, num_beams=num_beams, **options)
    sources = make_sources(WIDE, 6, seed=11)

    def decode() -> list[Hypothesis]:
        return [generate(TorchDecoder(model, *pad_batch(WIDE, [source])), 1, settings)[0] for source in sources]

    expected = [hf_generate(WIDE, [source], settings, model)[0] for source in sources]
    assert_same(decode(), expected, f"twins, beam {num_beams}")

    # The case has teeth: breaking ties by lower index instead gives other translations.
    def lowest_index_first(row: np.ndarray, k: int) -> list[int]:
        return [int(i) for i in np.argsort(-row, kind="stable")[:k]]

    monkeypatch.setattr(topk, "_torch_topk_row", lowest_index_first)
    assert [h.token_ids for h in decode()] != [h.token_ids for h in expected]


@pytest.mark.parametrize("num_beams", [1, 4])
def test_multi_token_bad_words(num_beams: int) -> None:
    """Ban a bigram the model really produces, a sequence starting at the decoder start token, and [eos]
    (which HF silently ignores)."""
    spec = MID
    sources = make_sources(spec, 12, seed=7)
    free = ours(spec, sources, settings_for(spec, 25, num_beams=num_beams))
    produced = [h.token_ids for h in free if len(h.token_ids) >= 3]
    bigram = produced[0][1:3]
    first = produced[1][0]
    banned = ((spec.pad,), bigram, (spec.pad, first), (EOS,), (spec.pad,))
    settings = settings_for(spec, 25, num_beams=num_beams)
    settings = replace(settings, bad_words_ids=banned)
    expected = hf_generate(spec, sources, settings)
    assert [h.token_ids for h in expected] != [h.token_ids for h in free]  # the ban really changed something
    assert_same(ours(spec, sources, settings), expected, "multi-token bad words")


def test_finished_rows_are_dropped_with_torch_model() -> None:
    spec = MID
    sources = make_sources(spec, 12, seed=1)
    ids, mask = pad_batch(spec, sources)
    for settings in (settings_for(spec, 30), settings_for(spec, 30, num_beams=3, early_stopping=True)):
        decoder = CountingDecoder(TorchDecoder(build_model(spec), ids, mask))
        results = generate(decoder, len(sources), settings)
        assert_same(results, hf_generate(spec, sources, settings), "counting wrapper")
        beams = settings.num_beams
        rows = decoder.rows_per_step
        assert rows[0] == beams * len(sources)
        assert all(r % beams == 0 for r in rows)
        assert all(a >= b for a, b in itertools.pairwise(rows))
        assert len(set(rows)) >= 5  # sentences left the batch at several different steps
        if beams == 1:
            # Greedy: step t runs exactly the sentences that generated at least t tokens.
            assert rows == [sum(len(h.token_ids) >= t for h in results) for t in range(1, len(rows) + 1)]


# ----------------------------------------------------------------------------------------------------------
# A scripted numpy decoder: eos is overwhelming from a chosen step on, so the finishing step is known
# ----------------------------------------------------------------------------------------------------------


class ScriptedDecoder:
    """Logits depend only on (sentence, last token, step); eos gets +50 from step ``finish[sentence]`` on,
    -50 before."""

    def __init__(self, finish: list[int], sentences: list[int] | None = None, vocab: int = 40) -> None:
        self.finish = np.array(finish)
        self.vocab = vocab
        self.sentence = np.arange(len(finish)) if sentences is None else np.array(sentences)
        self.step_number = 0
        self.rows_per_step: list[int] = []

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        self.step_number += 1
        self.rows_per_step.append(len(tokens))
        assert len(tokens) == len(self.sentence)
        raw = np.stack(
            [
                np.random.default_rng([int(s), int(t), self.step_number]).normal(size=self.vocab)
                for s, t in zip(self.sentence, tokens, strict=True)
            ]
        ).astype(np.float32)
        raw[:, EOS] = np.where(self.finish[self.sentence] <= self.step_number, 50.0, -50.0)
        return Step.from_logits(raw, top_k, keep_logits=logits)

    def reorder(self, rows: np.ndarray) -> None:
        assert rows.dtype == np.int64
        self.sentence = self.sentence[rows]


def scripted_settings(num_beams: int, **overrides: Any) -> DecodingSettings:
    return DecodingSettings(
        decoder_start_token_id=39,
        eos_token_id=EOS,
        pad_token_id=39,
        max_length=30,
        num_beams=num_beams,
        bad_words_ids=((39,),),
        **overrides,
    )


def test_greedy_drops_each_sentence_when_it_finishes() -> None:
    finish = [5, 2, 9, 3, 2]
    decoder = ScriptedDecoder(finish)
    results = greedy_search(decoder, len(finish), scripted_settings(1))
    assert [len(h.token_ids) for h in results] == finish
    assert all(h.token_ids[-1] == EOS and EOS not in h.token_ids[:-1] for h in results)
    assert decoder.rows_per_step == [sum(f >= t for f in finish) for t in range(1, max(finish) + 1)]


def test_beam_drops_each_sentence_when_it_is_done() -> None:
    # early_stopping=True: a sentence is done on the step all its beams take eos (from step 2 on: the first
    # step only expands one beam), and from then on it costs nothing.
    finish = [6, 2, 4, 9]
    beams = 3
    decoder = ScriptedDecoder(finish)
    results = beam_search(decoder, len(finish), scripted_settings(beams, early_stopping=True))
    assert [len(h.token_ids) for h in results] == finish
    assert decoder.rows_per_step == [beams * sum(f >= t for f in finish) for t in range(1, max(finish) + 1)]


@pytest.mark.parametrize("num_beams", [1, 2, 4])
@pytest.mark.parametrize("early_stopping", [True, False, "never"])
def test_dropping_rows_does_not_change_results(num_beams: int, early_stopping: bool | str) -> None:
    finish = [7, 3, 12, 4, 4, 25]
    settings = scripted_settings(num_beams, early_stopping=early_stopping, length_penalty=0.8)
    batched = generate(ScriptedDecoder(finish), len(finish), settings)
    for index, hypothesis in enumerate(batched):
        alone = ScriptedDecoder(finish, sentences=[index])  # same logits as in the batch
        assert generate(alone, 1, settings) == [hypothesis]


def test_max_length_without_eos() -> None:
    """Nobody finishes: every sentence stops at max_length - 1 generated tokens (beam: forced stop)."""
    finish = [100, 100]
    for beams in (1, 3):
        results = generate(ScriptedDecoder(finish), 2, scripted_settings(beams))
        assert [len(h.token_ids) for h in results] == [29, 29]
        assert all(EOS not in h.token_ids for h in results)


# ----------------------------------------------------------------------------------------------------------
# Processors against HF's own LogitsProcessor classes, on random scores
# ----------------------------------------------------------------------------------------------------------


def _random_history_and_scores(seed: int, rows: int = 6, length: int = 12, vocab: int = 20) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    history = rng.integers(0, 6, size=(rows, length)).astype(np.int64)  # few ids: many repeats and n-grams
    scores = (rng.normal(size=(rows, vocab)) * 3).astype(np.float32)
    return history, scores


@pytest.mark.parametrize("seed", range(5))
def test_processors_match_hf(seed: int) -> None:
    history, scores = _random_history_and_scores(seed)
    ids, values = torch.from_numpy(history), torch.from_numpy(scores)
    bad = ((3,), (1, 2), (4, 5, 1), (0,), (7,))
    pairs: list[tuple[Any, Any]] = [
        (lambda x: processors.repetition_penalty(history, x, 1.3), hf_processors.RepetitionPenaltyLogitsProcessor(1.3)),
        (lambda x: processors.repetition_penalty(history, x, 0.7), hf_processors.RepetitionPenaltyLogitsProcessor(0.7)),
        (lambda x: processors.no_repeat_ngram(history, x, 1), hf_processors.NoRepeatNGramLogitsProcessor(1)),
        (lambda x: processors.no_repeat_ngram(history, x, 2), hf_processors.NoRepeatNGramLogitsProcessor(2)),
        (lambda x: processors.no_repeat_ngram(history, x, 3), hf_processors.NoRepeatNGramLogitsProcessor(3)),
        (lambda x: processors.no_repeat_ngram(history, x, 13), hf_processors.NoRepeatNGramLogitsProcessor(13)),
        (
            lambda x: processors.bad_words(history, x, bad, eos=0),
            hf_processors.NoBadWordsLogitsProcessor([list(b) for b in bad], eos_token_id=0),
        ),
        (lambda x: processors.min_length(history, x, 13, eos=2), hf_processors.MinLengthLogitsProcessor(13, 2)),
        (lambda x: processors.min_length(history, x, 12, eos=2), hf_processors.MinLengthLogitsProcessor(12, 2)),
        (lambda x: processors.forced_eos(history, x, 13, eos=4), hf_processors.ForcedEOSTokenLogitsProcessor(13, 4)),
        (lambda x: processors.forced_eos(history, x, 14, eos=4), hf_processors.ForcedEOSTokenLogitsProcessor(14, 4)),
        (lambda x: processors.forced_bos(history, x, 9), hf_processors.ForcedBOSTokenLogitsProcessor(9)),
        (lambda x: processors.forced_bos(history[:, :1], x, 9), hf_processors.ForcedBOSTokenLogitsProcessor(9)),
    ]
    first = torch.from_numpy(history[:, :1].copy())  # the forced first token is decided on a start token alone
    for ours_fn, processor in pairs:
        if (
            isinstance(processor, hf_processors.ForcedBOSTokenLogitsProcessor)
            and ours_fn(scores.copy())[0, 0] == -np.inf
        ):
            np.testing.assert_array_equal(ours_fn(scores.copy()), processor(first, values.clone()).numpy())
            continue
        expected = processor(ids, values.clone()).numpy()
        np.testing.assert_array_equal(ours_fn(scores.copy()), expected, err_msg=type(processor).__name__)
    normalized = hf_processors.LogitNormalization()(ids, values.clone()).numpy()
    np.testing.assert_allclose(processors.log_softmax(scores), normalized, rtol=0, atol=2e-6)


@pytest.mark.parametrize("width", [*range(1, 20), 24, 63, 64, 65, 200, 640, 4000, 4 * 65001])
def test_top_k_matches_torch_topk_even_with_ties(width: int) -> None:
    """Same indices in the same order as torch.topk, also for equal values (torch's CPU order depends on
    std::partial_sort / std::nth_element, which _top_k replays)."""
    rng = np.random.default_rng(width)
    for trial in range(12):
        k = min(width, int(rng.choice([1, 2, 3, 4, 5, 8, 10, 17, 20])))
        rows = int(rng.integers(1, 4))
        kind = trial % 4
        if kind == 0:  # a few distinct values: ties everywhere
            values = rng.integers(0, int(rng.choice([2, 3, 5, 50])), size=(rows, width)).astype(np.float32)
        elif kind == 1:  # no ties
            values = (rng.normal(size=(rows, width)) * 3).astype(np.float32)
        elif kind == 2:  # beam bookkeeping: -1e9 placeholders that round to equal float32 values
            values = rng.normal(size=(rows, width)).astype(np.float32) + _IMPOSSIBLE
            values[:, : width // 4] = rng.normal(size=(rows, width // 4))
        else:  # forced eos: almost everything -inf
            values = np.full((rows, width), -np.inf, dtype=np.float32)
            values[:, rng.integers(0, width, size=3)] = -1.0
        expected = torch.topk(torch.from_numpy(values), k).indices.numpy()
        np.testing.assert_array_equal(topk.torch_top_k(values, k), expected, err_msg=f"{kind=} {k=}")


_TOPK_CHILD = r"""
import sys
import numpy as np
import torch
rng = np.random.default_rng(5)
rows = []
for width, k in [(9, 4), (64, 8), (640, 10), (4000, 20), (4 * 65001, 8)]:
    rows.append((rng.integers(0, 3, size=(3, width)).astype(np.float32), k))  # ties everywhere
    placeholders = np.full((3, width), np.float32(-1.0e9))  # beam bookkeeping's equal placeholders
    placeholders[:, : width // 3] = rng.integers(-4, 0, size=(3, width // 3))
    rows.append((placeholders, k))
indices = [torch.topk(torch.from_numpy(values), k).indices.numpy() for values, k in rows]
np.savez(sys.argv[1], capability=torch.backends.cpu.get_cpu_capability(), *[v for v, _ in rows], *indices)
"""


def _kernel_paths() -> list[str]:
    """ATen's CPU kernel paths this machine can run (ATEN_CPU_CAPABILITY values)."""
    flags = set()
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    paths = ["default"]
    if "avx2" in flags:
        paths.append("avx2")
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        paths.append("avx512")
    return paths


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="reads the CPU flags from /proc/cpuinfo")
def test_torch_topk_order_is_the_same_on_every_kernel_path(tmp_path: Any) -> None:
    """torch.topk orders exact ties alike on ATen's scalar, AVX2 and AVX-512 kernel paths (each path this CPU
    can run, chosen with ATEN_CPU_CAPABILITY in a fresh process), and that order is what torch_top_k replays:
    the replay needs no CPU detection. (CPUs differ in whether float arithmetic produces a tie, not in how
    torch.topk breaks one.)"""
    for path in _kernel_paths():
        out = tmp_path / f"{path}.npz"
        env = {**os.environ, "ATEN_CPU_CAPABILITY": path}
        subprocess.run([sys.executable, "-c", _TOPK_CHILD, str(out)], env=env, check=True, timeout=300)
        saved = np.load(out)
        assert str(saved["capability"]).lower() == {"default": "default", "avx2": "avx2", "avx512": "avx512"}[path]
        arrays = [saved[f"arr_{i}"] for i in range(len(saved.files) - 1)]
        values, indices = arrays[: len(arrays) // 2], arrays[len(arrays) // 2 :]
        for row_values, expected in zip(values, indices, strict=True):
            got = topk.torch_top_k(row_values, expected.shape[1])
            np.testing.assert_array_equal(got, expected, err_msg=f"{path}: width {row_values.shape[1]}")


def test_decoding_module_imports_only_numpy() -> None:
    code = "import sys, enzh.runtime.decoding; sys.exit(any(m in sys.modules for m in ('torch', 'transformers')))"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_generate_dispatches_on_num_beams() -> None:
    finish = [4, 6]
    greedy = generate(ScriptedDecoder(finish), 2, scripted_settings(1))
    assert greedy == greedy_search(ScriptedDecoder(finish), 2, scripted_settings(1))
    beam = generate(ScriptedDecoder(finish), 2, scripted_settings(3))
    assert beam == beam_search(ScriptedDecoder(finish), 2, scripted_settings(3))


def test_empty_batch() -> None:
    for beams in (1, 3):
        decoder = ScriptedDecoder([])
        assert generate(decoder, 0, scripted_settings(beams)) == []
        assert decoder.rows_per_step == []


# ----------------------------------------------------------------------------------------------------------
# The fast path: fixed bans read only each row's best few scores; ties and other processors read all scores.
# ----------------------------------------------------------------------------------------------------------


def _count_full_score_steps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the history length of every step decided from all scores (greedy or beam)."""
    lengths: list[int] = []
    for name in ("_beam_candidates", "_greedy_from_scores"):
        original = getattr(decoding, name)

        def counted(history: np.ndarray, *args: Any, _original: Any = original) -> Any:
            lengths.append(history.shape[1])
            return _original(history, *args)

        monkeypatch.setattr(decoding, name, counted)
    return lengths


@pytest.mark.parametrize(
    "name", ["greedy-small", "greedy-forced-eos-minlen", "beam4-marian", "beam4-minlen-forced", "beam2-never"]
)
def test_fixed_bans_read_only_the_best_scores(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pad banned, eos banned before min_length, eos forced last: no step reads all scores, and the forced last
    step runs no decoder step (its outcome does not depend on the model)."""
    case = CASES[name]
    settings = settings_for(case.spec, case.max_new_tokens, **case.options)
    sources = make_sources(case.spec, case.count, seed=len(name))
    lengths = _count_full_score_steps(monkeypatch)
    ids, mask = pad_batch(case.spec, sources)
    decoder = CountingDecoder(TorchDecoder(build_model(case.spec), ids, mask))
    generate(decoder, len(sources), settings)
    assert lengths == []
    if settings.forced_eos_token_id is not None:
        # The decode ran to the forced step (max_length - 1 tokens) without a decoder step for it.
        assert len(decoder.rows_per_step) == settings.max_length - 2


class TiedScriptedDecoder(ScriptedDecoder):
    """Logits rounded to multiples of 1/16: exact ties among the best tokens of many rows."""

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        raw = super().step(tokens, top_k).logits
        assert raw is not None
        return Step.from_logits(np.round(raw * 16) / 16, top_k)


@pytest.mark.parametrize("num_beams", [1, 3, 4])
def test_ties_are_decided_from_all_scores(num_beams: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the best candidates tie (torch.topk orders equal values its own way) the step is decided from all
    scores, so the result equals deciding every step from all scores."""
    finish = [7, 12, 4, 9, 15]
    settings = scripted_settings(num_beams, renormalize_logits=True, forced_eos_token_id=EOS)
    everywhere = _count_full_score_steps(monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(decoding, "fixed_bans", lambda length, settings: None)
        reference = generate(TiedScriptedDecoder(finish), len(finish), settings)
    full = len(everywhere)
    assert full > 10
    lengths = _count_full_score_steps(monkeypatch)
    fast = generate(TiedScriptedDecoder(finish), len(finish), settings)
    assert [h.token_ids for h in fast] == [h.token_ids for h in reference]
    np.testing.assert_allclose([h.score for h in fast], [h.score for h in reference], rtol=1e-6)
    if num_beams > 1:
        assert 0 < len(lengths) < full  # some steps tied, most did not
