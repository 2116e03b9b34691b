"""The NLLB-200-shaped stand-in of ``enzh bench --groups nllb``: nllb-200-distilled-600M's config, and a small
model through the same builder that every bench engine (enzh, PyTorch, CTranslate2) runs for exactly N tokens,
the target code first. The full-size model (2.5 GB) is never built here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from enzh.tools.bench.cases import fixed_sources, forced_target, hf_vocab, make_cases
from enzh.tools.bench.engines import job_calls, make_runner
from enzh.tools.bench.settings import NLLB_TARGET, BenchSettings
from enzh.tools.models import NLLB_200_DISTILLED_600M_CONFIG, build_nllb_shaped, nllb_shaped_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HAS_CT2 = importlib.util.find_spec("ctranslate2") is not None
# facebook/nllb-200-distilled-600M (issue 23 item 6).
NLLB_600M = {
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "vocab_size": 256206,
    "activation_function": "relu",
    "scale_embedding": True,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": True,
}
SMALL = {
    "d_model": 16,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 32,
    "decoder_ffn_dim": 32,
}


def test_the_stand_in_has_nllb_600m_config():
    config = nllb_shaped_config()  # a config only: no weights
    assert {k: getattr(config, k) for k in NLLB_600M} == NLLB_600M
    assert config.model_type == "m2m_100" and config.tokenizer_class == "NllbTokenizer"
    assert {k: NLLB_200_DISTILLED_600M_CONFIG[k] for k in NLLB_600M} == NLLB_600M


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The builder's model with the layers shrunk (the vocabulary is the real 256,206)."""
    return build_nllb_shaped(tmp_path_factory.mktemp("nllb") / "hf", **SMALL)


def test_the_builder_saves_that_config_with_an_nllb_tokenizer(small):
    config = json.loads((small / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == ["M2M100ForConditionalGeneration"]
    assert {k: config[k] for k in NLLB_600M} == {**NLLB_600M, **SMALL}
    vocab, special = hf_vocab(small)
    assert len(vocab) < config["vocab_size"] and {0, 1, 2, 3, vocab["eng_Latn"], vocab["<mask>"]} <= special
    code, code_id = forced_target(small)
    assert code == NLLB_TARGET and code_id == vocab["zho_Hans"]
    sources = fixed_sources(small, 3, 12, seed=0)
    assert {len(s) for s in sources} == {12}
    assert all(s[0] == vocab["eng_Latn"] and s[-1] == 2 and not special & set(s[1:-1]) for s in sources)


def _engine_dirs(small: Path, root: Path) -> dict[str, Path]:
    from enzh.export.pipeline import ExportOptions, export
    from enzh.quantize.pipeline import quantize

    export(str(small), root / "fp32", ExportOptions(force=True, validate=False, progress=False))
    quantize(root / "fp32", root / "int8", precision="int8", force=True)
    dirs = {"enzh-fp32": root / "fp32", "enzh-int8": root / "int8", "torch-fp32": small}
    if HAS_CT2:
        from ctranslate2.converters import TransformersConverter

        from enzh.tools.bench.prepare import _check_ct2_vocabulary

        for precision in ("float32", "int8"):
            TransformersConverter(str(small)).convert(
                str(root / f"ct2-{precision}"), quantization=precision, force=True
            )
            _check_ct2_vocabulary(small, root / f"ct2-{precision}")
            dirs[f"ct2-{precision}"] = root / f"ct2-{precision}"
    return dirs


def test_every_engine_generates_exactly_n_tokens_with_the_target_code_first(small, tmp_path):
    settings = BenchSettings(batch_sizes=(1, 3), beams=(1, 4), new_tokens=6)
    cases = make_cases("nllb", fixed_sources(small, 3, 10, seed=0), settings, forced_target(small))
    assert [c.id for c in cases] == ["nllb-b1-greedy", "nllb-b1-beam4", "nllb-b3-greedy", "nllb-b3-beam4"]
    assert all(c.fixed and c.target == forced_target(small) for c in cases)
    outputs: dict[str, dict[str, list[list[int]]]] = {}
    for engine, directory in _engine_dirs(small, tmp_path).items():
        runner = make_runner(engine, str(directory), 1, cases[0].target)
        for case in cases:
            (call,) = job_calls(engine, case, directory)
            hyps = runner.to_ids(runner.generate(call, case.beams, case.new_tokens, case.fixed))
            assert [len(h) for h in hyps] == [6] * case.batch, (engine, case.id)
            assert {h[0] for h in hyps} == {forced_target(small)[1]}, (engine, case.id)
            outputs.setdefault(case.id, {})[engine] = hyps
    for case in cases:  # the fp32 export decodes as generate() does
        assert outputs[case.id]["enzh-fp32"] == outputs[case.id]["torch-fp32"], case.id


def _cell(case: str, engine: str, ms: float) -> dict[str, object]:
    return {"case": case, "engine": engine, "status": "ok", "median_ms": ms, "min_ms": ms, "max_ms": ms}


def test_nllb_targets_are_judged_on_the_stand_in_only():
    from enzh.tools.bench.settings import NLLB_SHAPED_NAME
    from enzh.tools.bench.targets import evaluate_targets, targets_table

    cases = [{"id": f"nllb-{cell}", "group": "nllb", "label": cell} for cell in ("b1-greedy", "b16-beam4")]
    results = [
        _cell("nllb-b1-greedy", "enzh-int8", 50.0),
        _cell("nllb-b1-greedy", "ct2-int8", 100.0),
        _cell("nllb-b16-beam4", "enzh-int8", 90.0),
        _cell("nllb-b16-beam4", "ct2-int8", 100.0),
        _cell("nllb-b16-beam4", "enzh-fp32", 100.0),
        _cell("nllb-b16-beam4", "ct2-float32", 125.0),
    ]
    sizes = {"enzh-fp32": 1020, "enzh-int8": 310, "torch-fp32": 1000}
    engines = [{"id": e, "groups": {"nllb": {"model_bytes": b}}} for e, b in sizes.items()]
    report = {"models": {"nllb": {"name": NLLB_SHAPED_NAME}}, "cases": cases, "results": results, "engines": engines}
    got = {(t["target"], t["cell"]): (round(t["value"], 2), t["met"]) for t in evaluate_targets(report)}
    assert got == {
        ("NLLB int8 ≤ 0.6× CTranslate2 int8", "b1-greedy"): (0.5, True),
        ("NLLB int8 ≤ 0.8× CTranslate2 int8", "b16-beam4"): (0.9, False),
        ("NLLB fp32 ≤ 1.0× CTranslate2 float32", "b16-beam4"): (0.8, True),
        ("NLLB fp32 directory ≤ 1.05× the safetensors", "size on disk"): (1.02, True),
        ("NLLB int8 directory ≤ 0.3× the safetensors", "size on disk"): (0.31, False),
    }
    assert targets_table(report)[0] == "## Speed targets in this run (issue 23)"
    report["models"]["nllb"]["name"] = "another"
    assert evaluate_targets(report) == []
