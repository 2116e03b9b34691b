"""Validation judges the export, not float noise: errors against a float64 reference, PyTorch float32's own
error as the yardstick, token parity with generate() as the decisive check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import MarianMTModel

from enzh.export.pipeline import ExportError, ExportOptions, export
from enzh.export.validate import SENTENCES, check_numerics, check_tokens

from models import build_tiny_marian


@pytest.fixture(scope="module")
def large_weights_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Marian model whose weights have std 0.5 (d_model 48, 2+3 layers): activations large enough that
    PyTorch float32 itself differs from float64 by far more than 1e-4."""
    directory = build_tiny_marian(
        tmp_path_factory.mktemp("hf-large"),
        d_model=48,
        encoder_layers=2,
        decoder_layers=3,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        eos_bias=12.0,
    )
    model = MarianMTModel.from_pretrained(directory)
    torch.manual_seed(5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" not in name and "embed_positions" not in name:
                p.normal_(0, 0.5)
    model.save_pretrained(directory)
    return directory


def test_large_weights_export_with_default_options_and_match_generate(large_weights_source, tmp_path):
    out = tmp_path / "onnx"
    export(str(large_weights_source), out, ExportOptions(progress=False))  # raises if validation fails
    model = MarianMTModel.from_pretrained(large_weights_source).eval()
    report = check_numerics(out, model)
    assert report.ok, report.format()
    # The float32 noise is real: PyTorch float32 alone is far off float64 on the logits.
    assert report.torch_error["logits"] > 1e-3, report.format()
    assert "torch fp32" in report.format() and "onnxruntime" in report.format()
    parity, mismatches = check_tokens(out, model, SENTENCES, max_new_tokens=24, beams=(1, 4))
    assert all(same == total for same, total in parity.values()), mismatches
    assert len(parity) == 4  # greedy and beam 4, batched and one by one


def _break_query_scale(store):
    # A wrong attention scale in the first decoder layer's self-attention (query part of the fused projection).
    d = store.arrays["decoder.0.qkv.w"].shape[0]
    store.arrays["decoder.0.qkv.w"][:, :d] *= np.float32(1.5)


def _drop_final_logits_bias(store):
    # (a new array: the stored one may share memory with the PyTorch model that validation compares against)
    store.arrays["final_logits_bias"] = np.zeros_like(store.arrays["final_logits_bias"])


@pytest.mark.parametrize("breakage", [_break_query_scale, _drop_final_logits_bias])
@pytest.mark.parametrize("variant", ["base", "large"])
def test_a_broken_export_fails_validation(breakage, variant, tiny_source, large_weights_source, tmp_path, monkeypatch):
    from enzh.export.families.marian import MarianLoader

    real = MarianLoader.collect_weights

    def broken(self, model, arch, store):
        names = real(self, model, arch, store)
        breakage(store)
        return names

    monkeypatch.setattr(MarianLoader, "collect_weights", broken)
    source = tiny_source("base") if variant == "base" else large_weights_source
    with pytest.raises(ExportError, match="differ from PyTorch beyond float32 noise") as info:
        export(str(source), tmp_path / "out", ExportOptions(progress=False))
    assert "logits" in str(info.value) and "FAIL" in str(info.value)
