"""The encoder runs its token-wise layers on the real tokens only: its outputs at real positions are those of the
graph that runs every padded position through every layer, bit for bit, and padding costs no projection rows."""

from __future__ import annotations

import collections
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from enzh.export.families.marian import MarianLoader
from enzh.export.graph import WeightStore, build_encoder, pad_self_attention
from enzh.export.samples import random_source_batches

from conftest import TINY_VARIANTS


def _sessions(source, tmp_path):
    loader = MarianLoader()
    model = loader.load_model(source)
    arch = loader.architecture(model.config)
    store = WeightStore()
    embed, _, _ = loader.collect_weights(model, arch, store)
    pad_self_attention(arch, store)
    store.write(tmp_path / "weights.bin")
    graphs = {}
    for packed in (True, False):
        graph = build_encoder(arch, store, embed, packed=packed)
        onnx.save(graph, tmp_path / f"encoder-{packed}.onnx")
        graphs[packed] = ort.InferenceSession(str(tmp_path / f"encoder-{packed}.onnx"))
    return model.config, graphs


@pytest.mark.parametrize("name", sorted(TINY_VARIANTS))
def test_packed_encoder_equals_padded_computation(name, tiny_source, tmp_path):
    config, graphs = _sessions(tiny_source(name), tmp_path)
    rng = np.random.default_rng(5)
    shapes = [(1, 1, 1), (5, 1, 9), (8, 2, 17), (3, 3, 3), (16, 1, 30)]
    batches = random_source_batches(
        rng,
        shapes,
        pad=config.pad_token_id,
        eos=config.eos_token_id,
        high=min(config.vocab_size, config.pad_token_id) - 1,
    )
    padded_rows = 0
    for ids in batches:
        mask = (ids != config.pad_token_id).astype(np.int64)
        padded_rows += int((mask == 0).sum())
        feeds = {"input_ids": ids, "attention_mask": mask}
        packed, whole = graphs[True].run(None, feeds), graphs[False].run(None, feeds)
        assert np.array_equal(packed[0], whole[0])  # cross_bias
        real = mask.astype(bool)
        for ours, reference in zip(packed[1:], whole[1:], strict=True):  # cross keys/values [B, H, S, dh]
            assert ours.shape == reference.shape
            assert np.array_equal(ours.transpose(0, 2, 1, 3)[real], reference.transpose(0, 2, 1, 3)[real])
    assert padded_rows > 0  # the batches did have padding to skip


def test_projections_run_on_real_tokens_only(tiny_source, tmp_path):
    """Every MatMul of the packed graph reads [1, T, .] rows: with ONNX Runtime's profiler, a batch of 2 x 12
    positions of which 13 are real gives MatMul inputs of 13 rows, none of 24."""
    config, _ = _sessions(tiny_source("base"), tmp_path)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "profile")
    session = ort.InferenceSession(str(tmp_path / "encoder-True.onnx"), options)
    ids = np.full((2, 12), config.pad_token_id, dtype=np.int64)
    ids[0, :12] = 7
    ids[1, :1] = config.eos_token_id
    ids[0, 11] = config.eos_token_id
    mask = (ids != config.pad_token_id).astype(np.int64)
    session.run(None, {"input_ids": ids, "attention_mask": mask})
    with open(session.end_profiling(), encoding="utf-8") as f:
        events = json.load(f)
    rows = collections.Counter()
    for event in events:
        args = event.get("args", {})
        if event.get("cat") == "Node" and args.get("op_name") in ("MatMul", "FusedMatMul", "Gemm"):
            shape = args["input_type_shape"][0]
            rows[next(iter(shape.values()))[-2]] += 1
    assert rows and set(rows) == {13}
