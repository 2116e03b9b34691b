"""Every generation setting of tests/test_decoding.py through exported ONNX models, against ``generate()``.

test_decoding.py checks the search on a torch stand-in decoder. Here the same tiny models are exported and
decoded by :class:`enzh.Translator` (ONNX Runtime with I/O binding, top-k computed in the graph, the fast
path deciding steps from each row's best candidates): token ids must equal transformers ``generate()``,
batched and one by one. A few more cases add min_length at every beam size (the number of banned tokens, and
so the step's top-k, changes when min_length is reached).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_decoding import (  # noqa: E402
    CASES,
    EOS,
    MID,
    PLAIN,
    SMALL,
    WIDE,
    Case,
    ModelSpec,
    build_model,
    hf_generate,
    make_sources,
    settings_for,
)
from test_decoding import pad_batch as td_pad_batch  # noqa: E402
from transformers import MarianMTModel  # noqa: E402

from enzh import Translator  # noqa: E402
from enzh.export.pipeline import ExportOptions, export  # noqa: E402
from enzh.runtime import decoding  # noqa: E402
from enzh.runtime.batching import pad_batch  # noqa: E402
from enzh.runtime.options import DecodingSettings  # noqa: E402

from models import save_for_export  # noqa: E402

# min_length at every beam size, on models whose sentences stop at different steps.
EXTRA_CASES = {
    "greedy-minlen": Case(MID, 30, {"min_length": 5}),
    "greedy-minlen-renorm-forced": Case(
        WIDE, 20, {"min_length": 9, "renormalize_logits": True, "forced_eos_token_id": EOS}
    ),
    "greedy-minlen-beyond-max": Case(SMALL, 8, {"min_length": 20, "forced_eos_token_id": EOS}, count=8),
    "beam2-minlen": Case(MID, 30, {"num_beams": 2, "min_length": 5}),
    "beam3-minlen": Case(MID, 30, {"num_beams": 3, "min_length": 5}),
    "beam3-minlen-ngram": Case(SMALL, 20, {"num_beams": 3, "min_length": 6, "no_repeat_ngram_size": 2}),
    "beam4-minlen": Case(WIDE, 24, {"num_beams": 4, "min_length": 7, "renormalize_logits": True}),
    "beam5-minlen-early": Case(MID, 20, {"num_beams": 5, "min_length": 8, "early_stopping": True}),
}
MATRIX = {**CASES, **EXTRA_CASES}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def exportable_model(spec: ModelSpec) -> Any:
    """test_decoding's model for ``spec``, with an eos ramp that survives saving.

    build_model makes eos likelier with the step by adding a ramp to the decoder's position embeddings, but
    Marian's positions are fixed sinusoids (transformers recomputes them when loading, and the exporter refuses
    others). Here eos's output row points along the sinusoids' own steady drift instead: the dimensions that
    move monotonically over the first 60 positions. Sentences again finish at many different steps.
    """
    model = copy.deepcopy(build_model(spec))
    if spec.eos_ramp is None:
        return model
    _, weight = spec.eos_ramp
    with torch.no_grad():
        positions = model.model.decoder.embed_positions.weight
        positions.copy_(model.model.encoder.embed_positions.weight)  # undo build_model's ramp
        steps = positions[:61]
        change = steps[-1] - steps[0]
        monotone = ((steps[1:] - steps[:-1]) * change.sign() >= 0).all(dim=0)
        direction = change * monotone
        model.lm_head.weight[EOS] = weight * direction / direction.norm()
        # Shift eos's bias so that it wins around step 12, teacher-forced on random targets (as build_model).
        generator = torch.Generator().manual_seed(spec.seed)
        source = torch.randint(1, spec.pad, (16, 12), generator=generator)
        target = torch.randint(1, spec.pad, (16, 16), generator=generator)
        target[:, 0] = spec.pad
        logits = model(input_ids=source, decoder_input_ids=target).logits
        margin = logits[:, 12, 1 : spec.pad].max(dim=-1).values - logits[:, 12, EOS]
        model.final_logits_bias[0, EOS] += margin.median()
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Factory: model spec -> (Translator over its export, the saved HF model reloaded), each exported once."""
    cache: dict[ModelSpec, tuple[Translator, Any]] = {}

    def get(spec: ModelSpec) -> tuple[Translator, Any]:
        if spec not in cache:
            source = save_for_export(exportable_model(spec), tmp_path_factory.mktemp(f"hf-spec{spec.seed}"))
            out = tmp_path_factory.mktemp(f"onnx-spec{spec.seed}")
            export(str(source), out, ExportOptions(force=True, progress=False))
            cache[spec] = Translator.load(out), MarianMTModel.from_pretrained(source).eval()
        return cache[spec]

    return get


def assert_same(actual: list[Any], expected: list[Any], what: str) -> None:
    """Same token ids; scores to float32 rounding over a few dozen steps (ONNX Runtime and torch compute the
    logits in different orders, about 1e-6 apart per step)."""
    assert [h.token_ids for h in actual] == [h.token_ids for h in expected], what
    np.testing.assert_allclose([h.score for h in actual], [h.score for h in expected], rtol=1e-4, atol=1e-4)


def translator_settings(translator: Translator, case: Case) -> tuple[int, dict[str, Any]]:
    """(beam size, other overrides) that make the translator decode with exactly the case's settings."""
    options = dict(case.options)
    beams = int(options.pop("num_beams", 1))
    expected = settings_for(case.spec, case.max_new_tokens, **case.options)
    resolved = translator.settings(max_new_tokens=case.max_new_tokens, beam_size=beams, **options)
    assert resolved == expected  # the manifest defaults of these models are test_decoding's defaults
    return beams, options


def decode(translator: Translator, case: Case, sources: list[list[int]]) -> list[Any]:
    beams, options = translator_settings(translator, case)
    return translator.generate_ids(sources, beam_size=beams, max_new_tokens=case.max_new_tokens, **options)


@pytest.mark.filterwarnings("ignore:Unfeasible length constraints")
@pytest.mark.parametrize("name", list(MATRIX))
def test_exported_model_matches_transformers(name: str, exported: Any) -> None:
    case = MATRIX[name]
    translator, model = exported(case.spec)
    settings: DecodingSettings = settings_for(case.spec, case.max_new_tokens, **case.options)
    sources = make_sources(case.spec, case.count, seed=len(name))

    expected = hf_generate(case.spec, sources, settings, model)
    batched = decode(translator, case, sources)
    assert_same(batched, expected, f"{name}: ONNX batched vs transformers")

    one_by_one = [decode(translator, case, [source])[0] for source in sources]
    assert_same(one_by_one, batched, f"{name}: ONNX one-by-one vs batched")
    by_length = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    for index in [by_length[0], by_length[-1]][: case.hf_one_by_one]:
        alone = hf_generate(case.spec, [sources[index]], settings, model)
        assert_same([one_by_one[index]], alone, f"{name}: ONNX alone vs transformers")


def test_matrix_sentences_finish_at_many_steps(exported: Any) -> None:
    """The parity above means something only if sentences leave the running batch at different steps (rows
    dropped, the cache and cross keys/values reordered): most cases have three or more distinct lengths."""
    varied = 0
    for name, case in MATRIX.items():
        translator, _ = exported(case.spec)
        lengths = {len(h.token_ids) for h in decode(translator, case, make_sources(case.spec, case.count, len(name)))}
        varied += len(lengths) >= 3
    assert varied >= 0.6 * len(MATRIX), varied


def test_min_length_cases_stop_at_different_steps(exported: Any) -> None:
    """The min_length cases have teeth: without min_length some sentences would stop before it, and with it
    sentences still finish at several different steps."""
    for name, case in EXTRA_CASES.items():
        translator, _ = exported(case.spec)
        sources = make_sources(case.spec, case.count, seed=len(name))
        free = Case(case.spec, case.max_new_tokens, {k: v for k, v in case.options.items() if k != "min_length"})
        minimum = case.options["min_length"] - 1  # generated tokens (min_length counts the start token)
        without = [len(h.token_ids) for h in decode(translator, free, sources)]
        with_min = [len(h.token_ids) for h in decode(translator, case, sources)]
        assert min(without) < minimum, (name, without)
        assert min(with_min) >= min(minimum, case.max_new_tokens), (name, with_min)
        if case.options["min_length"] <= case.max_new_tokens:
            assert len(set(with_min)) >= 2, (name, with_min)


@pytest.mark.parametrize("num_beams", [1, 3, 4])
def test_min_length_with_generate_ids(num_beams: int, exported: Any) -> None:
    """The call from the issue: it failed in ONNX Runtime (TopK output bound for the previous step's k)."""
    spec = MID
    translator, model = exported(spec)
    sources = make_sources(spec, 6, seed=3)
    ours = translator.generate_ids(sources, beam_size=num_beams, max_new_tokens=16, min_length=5)
    settings = settings_for(spec, 16, num_beams=num_beams, min_length=5)
    assert_same(ours, hf_generate(spec, sources, settings, model), "min_length=5")


def test_top_k_changes_between_steps_of_one_decoder(exported: Any) -> None:
    """One OrtDecoder asked for a different top_k at every step returns exactly that many, equal to the
    largest log-probabilities of the step."""
    translator, _ = exported(PLAIN)
    sessions = translator.sessions
    sources = make_sources(PLAIN, 3, seed=5)
    ids, mask = pad_batch(sources, translator.adapter.pad_token_id)
    decoder = sessions.decoder_for(sessions.encode(ids, mask))
    tokens = np.full(len(sources), translator.adapter.decoder_start_token_id, dtype=np.int64)
    for step, k in enumerate([3, 3, 2, 7, 1, 1, 5, 2]):
        result = decoder.step(tokens, k, logits=step % 2 == 0)
        assert result.top_ids.shape == result.top_log_probs.shape == (len(sources), k)
        best = np.sort(result.log_probs, axis=1)[:, ::-1][:, :k]
        np.testing.assert_array_equal(result.top_log_probs, best)
        tokens = np.ascontiguousarray(result.top_ids[:, 0])


# ----------------------------------------------------------------------------------------------------------
# int8: the default variant (DynamicQuantizeMatMul) quantizes activations with one scale per call, so its
# outputs depend on which sentences share the batch; it is compared with its own all-scores search on the same
# batch. The 8-bit MatMulNBits variant with float compute is row-independent: batched equals one by one.
# ----------------------------------------------------------------------------------------------------------

INT8_CASES = {
    "defaults": Case(MID, 30),
    "defaults-beam4": Case(WIDE, 24, {"num_beams": 4}),
    "greedy-ngram-reppen": MATRIX["greedy-ngram-reppen"],
    "greedy-minlen-renorm-forced": MATRIX["greedy-minlen-renorm-forced"],
    "beam3-minlen": MATRIX["beam3-minlen"],
    "beam4-minlen-forced": Case(WIDE, 16, {"num_beams": 4, "min_length": 7, "forced_eos_token_id": EOS}),
    "beam5-ngram-reppen": MATRIX["beam5-ngram-reppen"],
}
INT8_VARIANTS = {
    "int8": {},  # the default int8 variant
    "int8-nbits-fp32": {"linear_op": "nbits", "embedding": "quantized", "accuracy_level": 1},
}


@pytest.fixture(scope="module")
def int8(exported: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Factory: (model spec, variant name) -> Translator over the int8 variant of its export."""
    from enzh.quantize.pipeline import quantize

    cache: dict[tuple[ModelSpec, str], Translator] = {}

    def get(spec: ModelSpec, variant: str) -> Translator:
        if (spec, variant) not in cache:
            out = tmp_path_factory.mktemp(f"{variant}-spec{spec.seed}")
            quantize(exported(spec)[0].directory, out, precision="int8", force=True, **INT8_VARIANTS[variant])
            cache[spec, variant] = Translator.load(out)
        return cache[spec, variant]

    return get


@pytest.mark.parametrize("name", list(INT8_CASES))
def test_int8_fast_path_equals_all_scores(name: str, int8: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default int8 variant: every setting decodes, and deciding steps from the graph's top-k (fast path)
    gives what deciding every step from all scores gives, on the same batches."""
    case = INT8_CASES[name]
    translator = int8(case.spec, "int8")
    sources = make_sources(case.spec, case.count, seed=len(name))
    fast = decode(translator, case, sources)
    with monkeypatch.context() as patch:
        patch.setattr(decoding, "fixed_bans", lambda length, settings: None)
        full = decode(translator, case, sources)
    assert_same(fast, full, f"{name}: int8 fast path vs all scores")


@pytest.mark.parametrize("name", list(INT8_CASES))
def test_int8_batched_equals_one_by_one(name: str, int8: Any) -> None:
    case = INT8_CASES[name]
    translator = int8(case.spec, "int8-nbits-fp32")
    sources = make_sources(case.spec, case.count, seed=len(name))
    batched = decode(translator, case, sources)
    one_by_one = [decode(translator, case, [source])[0] for source in sources]
    assert_same(one_by_one, batched, f"{name}: int8 one by one vs batched")
    assert len({len(h.token_ids) for h in batched}) >= 2


# ----------------------------------------------------------------------------------------------------------
# Settings that come from the model's generation_config.json (through manifest.json), with no overrides.
# ----------------------------------------------------------------------------------------------------------

GENERATION_CONFIG = {
    "num_beams": 3,
    "min_length": 6,
    "no_repeat_ngram_size": 3,
    "length_penalty": 0.7,
    "early_stopping": True,
    "max_length": 26,
    "renormalize_logits": True,
    "forced_eos_token_id": EOS,
}


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Translator, Any]:
    """MID with a generation_config that sets beams, min_length, n-gram ban, length penalty, max_length."""
    from transformers import GenerationConfig

    model = exportable_model(MID)
    pad = MID.pad
    model.generation_config = GenerationConfig(
        decoder_start_token_id=pad, eos_token_id=EOS, pad_token_id=pad, bad_words_ids=[[pad]], **GENERATION_CONFIG
    )
    source = save_for_export(model, tmp_path_factory.mktemp("hf-configured"))
    out = tmp_path_factory.mktemp("onnx-configured")
    export(str(source), out, ExportOptions(force=True, progress=False))
    return Translator.load(out), MarianMTModel.from_pretrained(source).eval()


def _hf_default_generate(model: Any, sources: list[list[int]], **kwargs: Any) -> tuple[list[tuple[int, ...]], Any]:
    """generate() with the model's own generation_config (plus ``kwargs``): token ids without the start token
    and padding, and the sequence scores (beam search only)."""
    ids, mask = td_pad_batch(MID, sources)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, return_dict_in_generate=True, output_scores=True, **kwargs)
    tokens = []
    for row in out.sequences[:, 1:].tolist():
        while row and row[-1] == MID.pad:
            row.pop()
        tokens.append(tuple(row))
    scores = out.sequences_scores.tolist() if getattr(out, "sequences_scores", None) is not None else None
    return tokens, scores


def test_generation_config_settings_reach_the_search(configured: tuple[Translator, Any]) -> None:
    translator, _ = configured
    settings = translator.settings(max_new_tokens=GENERATION_CONFIG["max_length"] - 1)
    for key, value in GENERATION_CONFIG.items():
        assert getattr(settings, key) == value, key


def test_generation_config_defaults_equal_generate_defaults(configured: tuple[Translator, Any]) -> None:
    """No overrides on either side: beam 3 with min_length, n-gram ban, length penalty, early stopping and
    max_length from generation_config.json, batched and one by one."""
    translator, model = configured
    sources = make_sources(MID, 14, seed=11)
    expected, scores = _hf_default_generate(model, sources)
    ours = translator.generate_ids(sources)
    assert [h.token_ids for h in ours] == expected
    # The settings have teeth: without min_length and the n-gram ban some sentences stop at once.
    free, _ = _hf_default_generate(model, sources, min_length=0, no_repeat_ngram_size=0)
    assert min(len(t) for t in free) < GENERATION_CONFIG["min_length"] - 1 <= min(len(t) for t in expected)
    np.testing.assert_allclose([h.score for h in ours], scores, rtol=1e-4, atol=1e-4)
    assert len({len(t) for t in expected}) >= 3  # sentences stop at different steps
    for source, tokens in zip(sources[:6], expected, strict=False):
        assert translator.generate_ids([source])[0].token_ids == tokens
    # Greedy with the other generation_config settings.
    expected_greedy, _ = _hf_default_generate(model, sources, num_beams=1)
    assert [h.token_ids for h in translator.generate_ids(sources, beam_size=1)] == expected_greedy
