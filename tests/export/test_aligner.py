"""The optional alignment graph (aligner.onnx): numerics against PyTorch's output_attentions, no weights of its own,
the layer/head settings, the runtime's align(), directories without it, and precision variants that rewrite it."""

from __future__ import annotations

import filecmp
import json
import shutil

import numpy as np
import onnx
import pytest
import torch
from transformers import MarianMTModel

from enzh.export.graph import AlignerSettings
from enzh.export.pipeline import ExportError, ExportOptions, export
from enzh.export.validate import check_numerics
from enzh.quantize.pipeline import quantize
from enzh.runtime.errors import ModelDirError, OptionsError
from enzh.runtime.manifest import Manifest
from enzh.runtime.options import RuntimeOptions
from enzh.runtime.sessions import ModelSessions
from enzh.runtime.translator import Translator

SOURCES = [[5, 6, 7, 8, 0], [9, 10, 0], [11, 0]]
TARGETS = [[12, 13, 14, 0], [15, 0], [16, 17, 18, 19, 20, 0]]


@pytest.fixture(scope="module")
def without_aligner(tiny_source, tmp_path_factory):
    out = tmp_path_factory.mktemp("no-aligner")
    export(str(tiny_source("base")), out, ExportOptions(force=True, progress=False, aligner=None))
    return out


def _torch_attention(source_dir, sources, targets, start, layers, heads):
    model = MarianMTModel.from_pretrained(source_dir, attn_implementation="eager").eval()
    out = []
    for source, target in zip(sources, targets, strict=True):
        with torch.no_grad():
            result = model(
                input_ids=torch.tensor([source]),
                decoder_input_ids=torch.tensor([[start, *target[:-1]]]),
                output_attentions=True,
            )
        chosen = torch.stack([result.cross_attentions[i][0, heads] for i in layers])
        out.append(chosen.mean(dim=(0, 1)).numpy())
    return out


def test_the_default_aligner_is_every_layer_and_head(tiny_export):
    manifest = Manifest.load(tiny_export("base"))
    assert manifest.graphs["aligner"] == "aligner.onnx" and "aligner.onnx" in manifest.files
    assert manifest.alignment == {
        "output": "cross_attention",
        "shape": ["batch", "target_len", "source_len"],
        "layers": [0, 1],
        "heads": [0, 1, 2, 3],
        "reduction": "mean",
    }


@pytest.mark.parametrize("name", ["base", "gelu"])  # gelu: heads of 12 zero-padded to 16 in the self-attention
def test_align_equals_pytorch_output_attentions(name, tiny_source, tiny_export):
    translator = Translator.load(tiny_export(name))
    ours = translator.align(SOURCES, TARGETS)
    alignment = translator.manifest.alignment
    start = translator.adapter.decoder_start_token_id
    theirs = _torch_attention(tiny_source(name), SOURCES, TARGETS, start, alignment["layers"], alignment["heads"])
    for a, b, source, target in zip(ours, theirs, SOURCES, TARGETS, strict=True):
        assert a.shape == (len(target), len(source)) and a.dtype == np.float32
        np.testing.assert_allclose(a, b, atol=1e-5)
        np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-5)
    # batched with padding on both sides == one pair at a time
    for (source, target), batched in zip(zip(SOURCES, TARGETS, strict=True), ours, strict=True):
        np.testing.assert_allclose(translator.align([source], [target])[0], batched, atol=1e-6)


def test_chosen_layers_and_heads_are_validated_numerically(tiny_source, tmp_path):
    settings = AlignerSettings(layers=(1,), heads=(2, 0))
    export(str(tiny_source("base")), tmp_path, ExportOptions(force=True, progress=False, aligner=settings))
    manifest = Manifest.load(tmp_path)
    assert manifest.alignment["layers"] == [1] and manifest.alignment["heads"] == [0, 2]
    report = check_numerics(tmp_path, MarianMTModel.from_pretrained(tiny_source("base")).eval())
    assert report.ok and "cross_attention" in report.max_diff, report.format()
    assert report.max_diff["cross_attention"] < 1e-5
    translator = Translator.load(tmp_path)
    theirs = _torch_attention(
        tiny_source("base"), SOURCES, TARGETS, translator.adapter.decoder_start_token_id, [1], [0, 2]
    )
    for a, b in zip(translator.align(SOURCES, TARGETS), theirs, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_a_wrong_aligner_fails_the_numeric_check(tiny_source, tiny_export, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(tiny_export("base"), copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["alignment"]["layers"] = [0]  # the graph averages layers 0 and 1: PyTorch's layer 0 differs
    (copy / "manifest.json").write_text(json.dumps(manifest))
    report = check_numerics(copy, MarianMTModel.from_pretrained(tiny_source("base")).eval())
    assert not report.passed("cross_attention") and report.passed("logits")


def test_settings_are_checked():
    with pytest.raises(OptionsError, match="indices >= 0"):
        AlignerSettings(layers=(-1,))
    with pytest.raises(OptionsError, match="must not repeat"):
        AlignerSettings(heads=(1, 1))


def test_an_index_the_model_lacks_fails_the_export(tiny_source, tmp_path):
    options = ExportOptions(force=True, progress=False, aligner=AlignerSettings(heads=(4,)))
    with pytest.raises(ExportError, match=r"aligner heads \[4\]: the decoder has 4 \(indices 0..3\)"):
        export(str(tiny_source("base")), tmp_path, options)


def test_the_aligner_reads_only_stored_weights_and_adds_none(tiny_export, without_aligner):
    directory = tiny_export("base")
    # encoder, decoder and weights.bin are byte for byte those of an export without the aligner
    for name in ("weights.bin", "encoder.onnx", "decoder.onnx"):
        assert filecmp.cmp(directory / name, without_aligner / name, shallow=False), name
    stored = {}
    for graph in ("encoder.onnx", "decoder.onnx"):
        for tensor in onnx.load(str(directory / graph), load_external_data=False).graph.initializer:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                stored[tensor.name] = {e.key: e.value for e in tensor.external_data}
    aligner = onnx.load(str(directory / "aligner.onnx"), load_external_data=False)
    external = [t for t in aligner.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external and all({e.key: e.value for e in t.external_data} == stored[t.name] for t in external)
    assert all(t.name.startswith(("decoder.", "embed_tokens", "positions")) for t in external)
    assert [o.name for o in aligner.graph.output] == ["cross_attention"]


def test_a_directory_without_the_aligner_loads_and_says_so(without_aligner, tmp_path):
    manifest = Manifest.load(without_aligner)
    assert not manifest.has_aligner and manifest.alignment == {} and "aligner.onnx" not in manifest.files
    assert not (without_aligner / "aligner.onnx").exists()
    translator = Translator.load(without_aligner)
    assert not translator.has_aligner
    with pytest.raises(ModelDirError, match="has no alignment graph"):
        translator.align(SOURCES, TARGETS)
    # a manifest written before the aligner existed (no "alignment" key at all) loads too
    old = tmp_path / "old"
    shutil.copytree(without_aligner, old)
    data = json.loads((old / "manifest.json").read_text())
    del data["alignment"]
    (old / "manifest.json").write_text(json.dumps(data))
    assert Translator.load(old).translate(["The cat is big."], max_new_tokens=4)


def test_a_manifest_naming_an_aligner_it_does_not_list_is_refused(tiny_export, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(tiny_export("base"), copy)
    data = json.loads((copy / "manifest.json").read_text())
    del data["files"]["aligner.onnx"]  # its hash would go unchecked
    (copy / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ModelDirError, match="names the aligner 'aligner.onnx', which its files do not list"):
        Manifest.load(copy)


def test_the_aligner_is_hashed_and_loaded_lazily(tiny_export, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(tiny_export("base"), copy)
    sessions = ModelSessions(copy, Manifest.load(copy), RuntimeOptions())
    assert sessions._aligner is None  # translating never creates it
    ids = np.array([[5, 6, 0]])
    assert sessions.align(ids, np.ones_like(ids), np.array([[7, 8]])).shape == (1, 2, 3)
    assert sessions._aligner is not None
    data = bytearray((copy / "aligner.onnx").read_bytes())
    data[-1] ^= 0xFF
    (copy / "aligner.onnx").write_bytes(bytes(data))
    with pytest.raises(ModelDirError, match="aligner.onnx: sha256 does not match the manifest"):
        Translator.load(copy)
    (copy / "aligner.onnx").unlink()
    with pytest.raises(ModelDirError, match="aligner.onnx: missing"):
        Translator.load(copy)


def test_align_checks_its_input(tiny_export):
    translator = Translator.load(tiny_export("base"))
    with pytest.raises(ValueError, match="2 sources and 1 targets"):
        translator.align(SOURCES[:2], TARGETS[:1])
    with pytest.raises(ValueError, match="pair 0 has 3 source and 0 target tokens"):
        translator.align([[5, 6, 0]], [[]])
    assert translator.align([], []) == []


@pytest.mark.parametrize("precision", ["int8", "int4", "fp16"])
def test_variants_rewrite_the_aligner_over_their_own_weights(precision, tiny_export, without_aligner, tmp_path):
    with_it = quantize(tiny_export("base"), tmp_path / "a", precision=precision, force=True)
    without = quantize(without_aligner, tmp_path / "b", precision=precision, force=True)
    assert (
        with_it.graphs["aligner"] == "aligner.onnx"
        and with_it.alignment == Manifest.load(tiny_export("base")).alignment
    )
    assert with_it.quantization.pop("aligner") == "rewritten like the decoder, over the decoder's stored weights"
    assert with_it.quantization == without.quantization
    for name in ("weights.bin", "encoder.onnx", "decoder.onnx"):  # it adds no weight and changes no other graph
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name
    aligner = onnx.load(str(tmp_path / "a" / "aligner.onnx"), load_external_data=False)
    floats = {t.name for t in aligner.graph.initializer if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 2}
    if precision != "fp16":  # every weight matrix quantized (the attention MatMuls read activations only)
        assert not [
            n for n in aligner.graph.node if n.op_type in ("MatMul", "Gemm", "Gather") and set(n.input) & floats
        ]
    # the variant's own attention: near the fp32 one (measured on this random model: up to 0.016 int8, 0.11 int4)
    fp32 = Translator.load(tiny_export("base")).align(SOURCES, TARGETS)
    for a, b in zip(Translator.load(tmp_path / "a").align(SOURCES, TARGETS), fp32, strict=True):
        assert a.shape == b.shape and np.abs(a - b).max() < (0.25 if precision == "int4" else 0.05)
