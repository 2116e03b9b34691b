"""Precision variants (int8, int4, fp16): graphs really quantized, one copy of the table, sizes, quality, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from enzh import Translator
from enzh.cli.main import main as cli_main
from enzh.quantize.pipeline import (
    QuantizeError,
    compare_logits,
    dequantize_blocks,
    pack_codes,
    quantize,
    quantize_blocks,
    quantized_report,
)
from enzh.runtime.manifest import Manifest
from enzh.runtime.options import RuntimeOptions
from enzh.runtime.sessions import ModelSessions

from models import REFERENCE_CONFIG, WORDS

VARIANTS = ("int8", "int4", "fp16")
TEXTS = ["The cat is big.", "Where is the red book?", "", "we walk to the station tomorrow"]


@pytest.fixture(scope="module")
def variants(tiny_export, tmp_path_factory):
    """Factory: (tiny model name, precision) -> quantized directory (built once per module)."""
    cache: dict[tuple[str, str], Path] = {}

    def get(name: str, precision: str) -> Path:
        if (name, precision) not in cache:
            out = tmp_path_factory.mktemp(f"{precision}-{name}")
            quantize(tiny_export(name), out, precision=precision, force=True)
            cache[name, precision] = out
        return cache[name, precision]

    return get


def _payload(directory: Path) -> int:
    """Bytes of distinct tensors in weights.bin (the tiny models' tensors are smaller than the page alignment)."""
    regions = set()
    for graph in ("encoder.onnx", "decoder.onnx"):
        model = onnx.load(str(directory / graph), load_external_data=False)
        for tensor in model.graph.initializer:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                info = {entry.key: entry.value for entry in tensor.external_data}
                regions.add((int(info["offset"]), int(info["length"])))
    return sum(length for _, length in regions)


def _ops(directory: Path, graph: str) -> list[onnx.NodeProto]:
    return list(onnx.load(str(directory / f"{graph}.onnx"), load_external_data=False).graph.node)


@pytest.mark.parametrize("precision", VARIANTS)
def test_variant_loads_and_translates(precision, tiny_export, variants):
    fp32 = Translator.load(tiny_export("base"))
    translator = Translator.load(variants("base", precision))
    assert translator.manifest.precision == precision
    out = translator.translate(TEXTS, max_new_tokens=8)
    assert len(out) == len(TEXTS) and out[2] == "" and all(isinstance(t, str) for t in out)
    ids = [h.token_ids for h in translator.generate_ids([[5, 6, 7, 0], [9, 0]], beam_size=4, max_new_tokens=6)]
    assert all(0 < len(t) <= 6 for t in ids)
    if precision == "fp16":  # fp32 arithmetic on fp16-rounded weights: the same tokens
        assert out == fp32.translate(TEXTS, max_new_tokens=8)


@pytest.mark.parametrize("name", ["base", "untied", "deep", "gelu"])
@pytest.mark.parametrize("precision", ["int8", "int4"])
def test_every_matmul_weight_is_quantized(name, precision, variants):
    """No float weight above 64 KB feeds a MatMul/Gemm or the token Gather, and no MatMul keeps a weight at all."""
    directory = variants(name, precision)
    assert quantized_report(directory) == {"encoder": [], "decoder": []}
    # d_model 24 ("gelu"): no block of 16..256 divides it, so its (tiny) embedding table stays fp32 at int4
    # (int8 quantizes the table per token, no blocks).
    table_kept = name == "gelu" and precision == "int4"
    for graph in ("encoder", "decoder"):
        model = onnx.load(str(directory / f"{graph}.onnx"), load_external_data=False)
        weights = {t.name for t in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "MatMul":  # only activation x activation products remain
                assert not set(node.input) & weights, (graph, node.name, node.input)
            if node.op_type == "Gemm":
                assert table_kept and node.input[1] == "embed_tokens", (graph, node.name, node.input)
    quantization = Manifest.load(directory).quantization
    counts = quantization["rewritten"]
    encoder_layers, decoder_layers = {"base": (2, 2), "untied": (2, 2), "deep": (3, 1), "gelu": (1, 3)}[name]
    # encoder: qkv, out, fc1, fc2; decoder: qkv, out, cross q, cross out, fc1, fc2, + cross k/v (encoder graph)
    assert counts["linear"] == 4 * encoder_layers + 7 * decoder_layers
    if table_kept:
        assert "embedding lookup" not in counts and quantization["float_matrices_kept"] == ["embed_tokens"]
    else:
        assert counts["embedding lookup"] == 2 and counts["output projection"] == 1
        assert quantization["float_matrices_kept"] == []


def test_quantized_report_flags_a_float_model(tiny_export):
    """The guard itself works: the fp32 export is reported (with a threshold below its tiny weights)."""
    report = quantized_report(tiny_export("base"), min_bytes=1024)
    assert any(name.startswith("MatMul:") for name in report["encoder"])
    assert any(name.startswith("Gemm:") for name in report["decoder"])


@pytest.mark.parametrize("precision", ["int8", "int4"])
def test_table_stored_once_and_mapped_once(precision, variants):
    directory = variants("base", precision)
    manifest = Manifest.load(directory)
    decoder = onnx.load(str(directory / "decoder.onnx"), load_external_data=False)
    where = {
        t.name: {e.key: e.value for e in t.external_data}["offset"]
        for t in decoder.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL
    }
    ops = {n.op_type: n for n in decoder.graph.node}
    shared = manifest.shared_initializers
    if precision == "int8":
        # One [d, V] int8 table: the lookup gathers its columns, DynamicQuantizeMatMul projects onto it.
        gathers = [n for n in decoder.graph.node if n.op_type == "Gather" and n.input[1] == "input_ids"]
        assert {n.input[0] for n in gathers} == {"embed_tokens.q_columns", "embed_tokens.scales"}
        projection = [n for n in decoder.graph.node if n.op_type == "DynamicQuantizeMatMul" and n.output[0] == "logits"]
        assert projection[0].input[1] == "embed_tokens.q_columns"
        assert shared["embed_tokens.q_columns"]["dtype"] == "int8" and "embed_tokens.scales" in shared
        table = "embed_tokens.q_columns"
    else:
        # GatherBlockQuantized and MatMulNBits read the same bytes of weights.bin under two shapes.
        assert where["embed_tokens.q"] == where["embed_tokens.q_blocks"]
        assert ops["GatherBlockQuantized"].input[0] == "embed_tokens.q"
        assert "embed_tokens.q_blocks" in [n.input[1] for n in decoder.graph.node if n.op_type == "MatMulNBits"]
        assert shared["embed_tokens.q"]["dtype"] == "uint8" and "embed_tokens.scales" in shared
        table = "embed_tokens.q"
    sessions = ModelSessions(directory, manifest, RuntimeOptions(verify_hashes=False))
    assert isinstance(sessions._shared[table], np.memmap)


def test_sizes_shrink(tiny_export, variants):
    fp32 = _payload(tiny_export("base"))
    ratios = {p: _payload(variants("base", p)) / fp32 for p in VARIANTS}
    # Tiny models carry relatively more scales, biases and norms than real ones (opus-mt: see the slow test).
    assert ratios["fp16"] <= 0.60, ratios
    assert ratios["int8"] <= 0.42, ratios
    assert ratios["int4"] <= 0.32, ratios
    assert ratios["int4"] < ratios["int8"] < ratios["fp16"] < 1


def test_teacher_forced_agreement(tiny_export, variants):
    """int8 keeps the fp32 top-1 token almost everywhere; ordering fp16 > int8 > int4 holds."""
    ref = tiny_export("base")
    results = {p: compare_logits(ref, variants("base", p), sequences=60, threads=1) for p in VARIANTS}
    assert results["int8"].positions == 60 * 12
    assert results["int8"].top1_agreement >= 0.88, results["int8"]
    assert results["fp16"].top1_agreement >= 0.99 and results["fp16"].max_abs_diff < 0.5, results["fp16"]
    assert results["fp16"].mean_abs_diff < results["int8"].mean_abs_diff < results["int4"].mean_abs_diff
    deep = compare_logits(tiny_export("deep"), variants("deep", "int8"), sequences=60, threads=1)
    assert deep.top1_agreement >= 0.97, deep


def test_manifest_records_precision_and_settings(tiny_export, variants):
    src = Manifest.load(tiny_export("base"))
    for precision in VARIANTS:
        directory = variants("base", precision)
        manifest = Manifest.load(directory)
        assert manifest == Manifest.load(directory)  # round trip
        manifest.verify_files(directory)  # fresh sizes and sha256s
        assert manifest.precision == precision
        assert manifest.special_ids == src.special_ids and manifest.generation == src.generation
        q = manifest.quantization
        assert q["source"] == {"precision": "fp32", "weights_sha256": src.files["weights.bin"]["sha256"]}
        assert set(manifest.files) == set(src.files)
    int8 = Manifest.load(variants("base", "int8")).quantization
    assert (int8["precision"], int8["accuracy_level"], int8["linear_op"], int8["embedding"]) == (
        "int8",
        4,
        "dynamic",
        "channels",
    )
    assert "DynamicQuantizeMatMul" in int8["linear"] and "one scale per token" in int8["embedding_table"]
    int4 = Manifest.load(variants("base", "int4")).quantization
    assert (int4["block_size"], int4["accuracy_level"], int4["linear_op"]) == (64, 4, "nbits")


def test_settings_are_applied(tiny_export, tmp_path):
    manifest = quantize(tiny_export("deep"), tmp_path / "q", precision="int4", block_size=16, accuracy_level=0)
    assert manifest.quantization["block_size"] == 16 and manifest.quantization["accuracy_level"] == 0
    nbits = [n for n in _ops(tmp_path / "q", "decoder") if n.op_type == "MatMulNBits"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in nbits[0].attribute}
    assert attrs["block_size"] == 16 and attrs["accuracy_level"] == 0 and attrs["bits"] == 4
    assert Translator.load(tmp_path / "q").translate(["the cat"], max_new_tokens=4)


def test_fp16_on_cpu(variants):
    """fp16 weights on disk, cast to fp32 in the graph: loads and runs on the CPU provider."""
    directory = variants("base", "fp16")
    manifest = Manifest.load(directory)
    assert manifest.shared_initializers["embed_tokens.fp16"]["dtype"] == "float16"
    decoder = onnx.load(str(directory / "decoder.onnx"), load_external_data=False)
    dtypes = {t.name: t.data_type for t in decoder.graph.initializer}
    for node in decoder.graph.node:
        if node.op_type in ("MatMul", "Gemm") and len(node.input) > 1 and node.input[1] in dtypes:
            pytest.fail(f"{node.name} reads a weight directly; fp16 weights must go through Cast")
    assert sum(1 for t in dtypes.values() if t == onnx.TensorProto.FLOAT16) >= 10
    translator = Translator.load(directory, providers=("CPUExecutionProvider",))
    assert translator.sessions.decoder.get_providers() == ["CPUExecutionProvider"]


def test_float16_cache(tiny_source, tiny_export, variants, tmp_path, capsys):
    """--cache float16: the decoder's cache inputs/outputs are float16, the runtime allocates float16 buffers,
    and only the keys/values are rounded: fp16 weights with either cache give the same scores."""
    out = tmp_path / "fp16-half"
    assert cli_main(["quantize", str(tiny_export("base")), str(out), "--precision", "fp16", "--cache", "float16"]) == 0
    assert Manifest.load(out).quantization["cache"] == "float16"
    assert Manifest.load(variants("base", "fp16")).quantization["cache"] == "float32"
    decoder = onnx.load(str(out / "decoder.onnx"), load_external_data=False)
    types = {v.name: v.type.tensor_type.elem_type for v in (*decoder.graph.input, *decoder.graph.output)}
    caches = [name for name in types if name.startswith(("past_", "present_"))]
    assert caches and all(types[name] == onnx.TensorProto.FLOAT16 for name in caches)
    assert types["logits"] == types["cross_key_0"] == onnx.TensorProto.FLOAT
    translator = Translator.load(out)
    assert translator.sessions.cache_dtype == np.float16
    source = np.array([[5, 6, 0]])
    step_decoder = translator.sessions.decoder_for(translator.sessions.encode(source, np.ones_like(source)))
    step_decoder.step(np.array([translator.manifest.special_ids["decoder_start"]]))
    assert step_decoder.past[0].dtype == np.float16
    same = compare_logits(variants("base", "fp16"), out, sequences=60, threads=1)
    assert same.top1_agreement == 1.0 and same.mean_abs_diff < 0.01 and same.max_abs_diff < 0.2, same
    assert translator.translate(TEXTS, max_new_tokens=8) == Translator.load(variants("base", "fp16")).translate(
        TEXTS, max_new_tokens=8
    )
    # int8 with a float16 cache keeps int8's agreement with fp32.
    quantize(tiny_export("base"), tmp_path / "int8-half", precision="int8", cache="float16")
    int8 = compare_logits(tiny_export("base"), tmp_path / "int8-half", sequences=60, threads=1)
    assert int8.top1_agreement >= 0.88, int8
    with pytest.raises(QuantizeError, match="cache must be one of float32, float16"):
        quantize(tiny_export("base"), tmp_path / "x", precision="int8", cache="bfloat16")
    assert cli_main(["export", str(tiny_source("base")), str(tmp_path / "y"), "--cache", "float16"]) == 2
    assert "the fp32 export keeps a float32 cache" in capsys.readouterr().err


def test_shortlist(tiny_source, tiny_export, variants, tmp_path, capsys):
    """--shortlist N: the projection scores the N pieces most frequent in the corpus (+ eos, unk) with exactly
    the full variant's logits, every other token gets -inf, and greedy search picks what the full variant
    picks when every other token is banned."""
    from enzh.quantize.pipeline import corpus_shortlist
    from enzh.runtime.tokenizer import MarianTokenizer

    from models import corpus

    src, full = tiny_export("base"), variants("base", "int8")
    lines = corpus(7)[1]
    (tmp_path / "zh.tsv").write_text("".join(f"source {i}\t{line}\n" for i, line in enumerate(lines)), "utf-8")
    out = tmp_path / "int8-shortlist"
    args = ["quantize", str(src), str(out), "--precision", "int8", "--shortlist", "20"]
    assert cli_main([*args, "--shortlist-corpus", str(tmp_path / "zh.tsv")]) == 0
    expected = MarianTokenizer.from_dir(src, vocab="vocab.json.gz").frequent_target_ids(lines, 20)
    assert corpus_shortlist(src, lines, 20) == expected
    info = Manifest.load(out).quantization["shortlist"]
    assert info["ids"] == expected and info["size"] == len(expected) == 22 and expected[:2] == [0, 1]
    decoder = onnx.load(str(out / "decoder.onnx"), load_external_data=False)
    dims = {o.name: [d.dim_value or d.dim_param for d in o.type.tensor_type.shape.dim] for o in decoder.graph.output}
    assert dims["logits"] == dims["log_probs"] == ["rows", 22]

    shortlisted = ModelSessions(out, Manifest.load(out), RuntimeOptions(verify_hashes=False))
    whole = ModelSessions(full, Manifest.load(full), RuntimeOptions(verify_hashes=False))
    ids = np.array(expected)
    others = np.setdiff1d(np.arange(whole.vocab), ids)
    source = np.array([[5, 6, 7, 0], [9, 10, 0, 58]])
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]])
    decoders = [s.decoder_for(s.encode(source, mask)) for s in (shortlisted, whole)]
    tokens = np.array([whole.manifest.special_ids["decoder_start"]] * 2)
    for _ in range(4):
        a, b = (d.step(tokens, top_k=3, logits=True) for d in decoders)
        assert a.logits is not None and b.logits is not None
        np.testing.assert_allclose(a.logits[:, ids], b.logits[:, ids], atol=1e-5)
        assert np.all(a.logits[:, others] == -np.inf) and np.all(a.log_probs[:, others] == -np.inf)
        assert np.isin(a.top_ids, ids).all()
        tokens = a.top_ids[:, 0]

    texts = [[5, 6, 7, 0], [9, 10, 0], [12, 0]]
    banned = [(int(t),) for t in others]
    picked = Translator.load(out).generate_ids(texts, beam_size=1, max_new_tokens=8)
    reference = Translator.load(full).generate_ids(texts, beam_size=1, max_new_tokens=8, bad_words_ids=banned)
    assert [h.token_ids for h in picked] == [h.token_ids for h in reference]
    beams = Translator.load(out).generate_ids(texts, beam_size=4, max_new_tokens=8)
    assert all(set(h.token_ids) <= set(expected) for h in beams)

    given = quantize(src, tmp_path / "given", precision="int4", shortlist_ids=[7, 30, 31])
    assert given.quantization["shortlist"]["ids"] == [0, 1, 7, 30, 31]
    int4 = [tmp_path / "given", variants("base", "int4")]
    steps = []
    for directory in int4:
        sessions = ModelSessions(directory, Manifest.load(directory), RuntimeOptions(verify_hashes=False))
        steps.append(sessions.decoder_for(sessions.encode(source, mask)).step(tokens, logits=True).logits)
    np.testing.assert_allclose(steps[0][:, [0, 1, 7, 30, 31]], steps[1][:, [0, 1, 7, 30, 31]], atol=1e-5)
    # Fewer scored tokens than a beam step asks for (2 x 4 + 1 + bans): the search falls back to all scores.
    tiny = Translator.load(tmp_path / "given").generate_ids(texts, beam_size=4, max_new_tokens=6)
    assert all(h.token_ids and set(h.token_ids) <= {0, 1, 7, 30, 31} for h in tiny)
    with pytest.raises(QuantizeError, match="shortlist needs a quantized output projection"):
        quantize(src, tmp_path / "fp16", precision="fp16", shortlist_ids=expected)
    pad = Manifest.load(src).special_ids["pad"]
    with pytest.raises(QuantizeError, match=f"pad {pad} excluded"):
        quantize(src, tmp_path / "pad", precision="int8", shortlist_ids=[5, pad])
    assert cli_main(["quantize", str(src), str(tmp_path / "z"), "--precision", "int8", "--shortlist", "5"]) == 2
    assert "--shortlist N and --shortlist-corpus FILE go together" in capsys.readouterr().err


def test_quantize_refusals(tiny_export, variants, tmp_path):
    src = tiny_export("base")
    with pytest.raises(QuantizeError, match="derived from the fp32 export"):
        quantize(variants("base", "int8"), tmp_path / "a", precision="int4")
    with pytest.raises(QuantizeError, match="block_size must be one of 16, 32, 64, 128, 256"):
        quantize(src, tmp_path / "b", precision="int8", block_size=48)
    with pytest.raises(QuantizeError, match="not a variant"):
        quantize(src, tmp_path / "c", precision="fp32")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("keep")
    with pytest.raises(QuantizeError, match="not empty; pass --force"):
        quantize(src, tmp_path / "d", precision="int8")
    with pytest.raises(QuantizeError, match="is the source directory"):
        quantize(src, src, precision="int8", force=True)


def test_quantize_blocks_math():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(7, 40)).astype(np.float32)
    weight[3, :] = 0.0  # an all-zero row must not divide by zero
    for bits in (8, 4):
        codes, scales = quantize_blocks(weight, bits, 16, search=False)
        assert codes.shape == (7, 48) and scales.shape == (7, 3) and codes.max() < 2**bits
        restored = dequantize_blocks(codes, scales, bits, 40)
        step = np.repeat(scales, 16, axis=1)[:, :40]
        assert np.all(np.abs(restored - weight) <= step * 0.5 + 1e-6)  # abs-max scales: nothing clipped
        assert np.all(restored[3] == 0)
        # The clipping search never does worse than abs-max scales (ratio 1.0 is one of its candidates).
        searched = dequantize_blocks(*quantize_blocks(weight, bits, 16, search=True), bits, 40)
        assert np.square(searched - weight).sum() <= np.square(restored - weight).sum() + 1e-9
    packed = pack_codes(np.array([[1, 2, 15, 0]], dtype=np.uint8), 4)
    assert packed.tolist() == [[0x21, 0x0F]]  # low nibble first


def test_cli_export_and_quantize(tiny_source, tiny_export, tmp_path, capsys):
    out = tmp_path / "int4"
    assert cli_main(["export", str(tiny_source("deep")), str(out), "--precision", "int4", "--block-size", "32"]) == 0
    manifest = Manifest.load(out)
    assert manifest.precision == "int4" and manifest.quantization["block_size"] == 32
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".enzh-fp32-")]  # temporary fp32 removed
    assert "int4" in capsys.readouterr().out
    assert cli_main(["quantize", str(tiny_export("base")), str(tmp_path / "q8"), "--precision", "int8"]) == 0
    assert json.loads((tmp_path / "q8" / "manifest.json").read_text())["precision"] == "int8"
    assert cli_main(["quantize", str(tiny_export("base")), str(tmp_path / "q8"), "--precision", "int8"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert cli_main(["translate", "--model", str(tmp_path / "q8"), "--max-new-tokens", "4", WORDS[2]]) == 0


@pytest.mark.slow
@pytest.mark.skipif(not REFERENCE_CONFIG.is_dir(), reason=f"reference config not found at {REFERENCE_CONFIG}")
def test_shaped_model_size_gates(tmp_path_factory):
    """opus-mt-en-zh's exact shape: int8 <= 80 MB and int4 <= 50 MB (decimal) for the whole directory."""
    from enzh.export.pipeline import ExportOptions, export

    from models import build_reference_shaped

    source = build_reference_shaped(tmp_path_factory.mktemp("shaped-hf"))
    fp32 = tmp_path_factory.mktemp("shaped-fp32")
    export(str(source), fp32, ExportOptions(force=True, progress=False, validate=False))
    gates = {"int8": 80_000_000, "int4": 50_000_000}
    for precision, limit in gates.items():
        out = tmp_path_factory.mktemp(f"shaped-{precision}")
        manifest = quantize(fp32, out, precision=precision, force=True)
        total = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
        assert total <= limit, (precision, total / 1e6)
        assert quantized_report(out) == {"encoder": [], "decoder": []}
        assert manifest.quantization["rewritten"] == {
            "embedding lookup": 2,
            "linear": 66,
            "output projection": 1,
            "positions computed": 1,
        }


def test_demo_model_quality_and_size_gates(tmp_path_factory, demo_dir):
    """The trained demo model on 200 held-out pairs, beam 4: int8 within 1 chrF and 2 points exact match of
    fp32, int4 within 3 chrF; int8 weights at most 30 % and int4 at most 20 % of fp32 (docs/precision.md)."""
    from enzh.demo.evaluate_torch import score, test_pairs

    fp32 = demo_dir
    pairs = test_pairs(demo_dir / "test.tsv")[:200]
    sources, refs = [en for en, _ in pairs], [zh for _, zh in pairs]
    scores, sizes = {}, {}
    for precision in ("fp32", "int8", "int4"):
        directory = fp32
        if precision != "fp32":
            directory = tmp_path_factory.mktemp(f"demo-{precision}")
            quantize(fp32, directory, precision=precision, force=True)
        scores[precision] = score(Translator.load(directory).translate(sources, beam_size=4), refs)
        sizes[precision] = (directory / "weights.bin").stat().st_size
    assert scores["fp32"]["chrf"] > 80, scores  # a trained model, or the gates below mean nothing
    assert scores["fp32"]["chrf"] - scores["int8"]["chrf"] <= 1.0, scores
    assert scores["fp32"]["exact"] - scores["int8"]["exact"] <= 2.0, scores
    assert scores["fp32"]["chrf"] - scores["int4"]["chrf"] <= 3.0, scores
    assert sizes["int8"] <= 0.30 * sizes["fp32"] and sizes["int4"] <= 0.20 * sizes["fp32"], sizes
