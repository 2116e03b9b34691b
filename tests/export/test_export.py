"""Export: validation, layout, no duplicated weights, manifest, integrity checks, dynamic axes."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest
import torch
from transformers import MarianMTModel

from enzh.export.pipeline import ExportError, ExportOptions, export
from enzh.export.validate import check_numerics
from enzh.runtime.manifest import Manifest, ModelDirError
from enzh.runtime.options import RuntimeOptions
from enzh.runtime.sessions import ModelSessions
from enzh.runtime.translator import Translator

from conftest import TINY_VARIANTS


@pytest.mark.parametrize("name", sorted(TINY_VARIANTS))
def test_export_validates_numerically(name, tiny_source, tiny_export):
    model = MarianMTModel.from_pretrained(tiny_source(name)).eval()
    report = check_numerics(tiny_export(name), model, atol=1e-4)
    assert report.ok, report.format()
    assert set(report.max_diff) == {
        "cross_key",
        "cross_value",
        "logits",
        "log_probs",
        "top_log_probs",
        "present_key",
        "present_value",
        "cross_attention",
    }


@pytest.mark.parametrize("name", sorted(TINY_VARIANTS))
def test_weights_stored_once(name, tiny_source, tiny_export):
    """weights.bin holds each distinct parameter once: its size is the unique parameters plus alignment."""
    model = MarianMTModel.from_pretrained(tiny_source(name))
    unique = {p.data_ptr(): p.numel() for p in model.parameters()}
    expected = 4 * (
        sum(unique.values()) + model.final_logits_bias.numel() + model.model.encoder.embed_positions.weight.numel()
    )
    size = (tiny_export(name) / "weights.bin").stat().st_size
    n_tensors = len(Manifest.load(tiny_export(name)).files)  # a loose bound on alignment padding
    assert expected <= size <= expected + 4096 * (4 * len(list(model.parameters())) + n_tensors)
    manifest = Manifest.load(tiny_export(name))
    if model.config.share_encoder_decoder_embeddings:
        assert "embed_tokens" in manifest.shared_initializers
    else:
        assert "embed_tokens" not in manifest.shared_initializers


def test_manifest_contents(tiny_export):
    manifest = Manifest.load(tiny_export("base"))
    vocab = json.loads(gzip.decompress((tiny_export("base") / "vocab.json.gz").read_bytes()))
    pad = vocab["<pad>"]
    assert manifest.special_ids == {"decoder_start": pad, "eos": 0, "pad": pad, "unk": 1}
    assert manifest.languages == {
        "tokens": [">>cmn_Hans<<", ">>cmn_Hant<<"],
        "default": ">>cmn_Hans<<",
        "source": "en",  # tokenizer_config.json's source_lang and target_lang
        "target": "zh",
    }
    assert manifest.generation["num_beams"] == 4
    assert manifest.generation["bad_words_ids"] == [[pad]]
    assert manifest.generation["renormalize_logits"] is True
    assert manifest.max_positions == 256
    assert manifest.precision == "fp32"
    assert set(manifest.files) == {
        "encoder.onnx",
        "decoder.onnx",
        "aligner.onnx",
        "weights.bin",
        "source.spm",
        "target.spm",
        "vocab.json.gz",
    }
    assert all(len(info["sha256"]) == 64 for info in manifest.files.values())
    assert {"enzh", "torch", "transformers", "onnx"} <= set(manifest.exporter)


def test_refuses_non_empty_out_dir(tiny_source, tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(ExportError, match="is not empty; pass --force"):
        export(str(tiny_source("base")), tmp_path, ExportOptions(progress=False))
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_missing_source_is_a_clear_error(tmp_path):
    with pytest.raises(ExportError, match="could not fetch 'no-such-org/no-such-model' from the HuggingFace hub"):
        export("no-such-org/no-such-model", tmp_path / "out", ExportOptions(progress=False))


def test_validation_failure_reports_every_output(tiny_source, tmp_path, monkeypatch):
    """A wrong graph must fail the export with the max abs difference of each output."""
    from enzh.export.families.marian import MarianLoader

    real = MarianLoader.collect_weights

    def broken(self, model, arch, store):
        names = real(self, model, arch, store)
        store.arrays["decoder.0.fc2.b"][::2] += np.float32(0.5)  # a constant shift would vanish in LayerNorm
        return names

    monkeypatch.setattr(MarianLoader, "collect_weights", broken)
    with pytest.raises(ExportError) as info:
        export(str(tiny_source("base")), tmp_path, ExportOptions(progress=False, force=True))
    message = str(info.value)
    for output in ("cross_key", "cross_value", "logits", "log_probs", "top_log_probs", "present_key", "present_value"):
        assert output in message
    assert "FAIL" in message and "differ from PyTorch" in message


def test_integrity_check_on_load(tiny_export, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(tiny_export("base"), copy)
    Translator.load(copy)  # intact: loads
    data = bytearray((copy / "weights.bin").read_bytes())
    data[100] ^= 0xFF
    (copy / "weights.bin").write_bytes(bytes(data))
    with pytest.raises(ModelDirError, match="weights.bin: sha256 does not match the manifest"):
        Translator.load(copy)
    (copy / "target.spm").unlink()
    with pytest.raises(ModelDirError, match="target.spm: missing"):
        Translator.load(copy)
    with pytest.raises(ModelDirError, match="has no manifest.json"):
        Translator.load(tmp_path)


def test_dynamic_axes(tiny_source, tiny_export):
    """Batch 1..8, sources from 1 token to the position limit, decoding to the position limit."""
    directory = tiny_export("base")
    manifest = Manifest.load(directory)
    sessions = ModelSessions(directory, manifest, RuntimeOptions())
    model = MarianMTModel.from_pretrained(tiny_source("base")).eval()
    rng = np.random.default_rng(0)
    limit = manifest.max_positions
    for batch, length in ((1, 1), (2, 5), (5, 17), (8, 40), (3, limit)):
        ids = rng.integers(4, 50, size=(batch, length))
        ids[:, -1] = 0
        mask = np.ones_like(ids)
        encoded = sessions.encode(ids, mask)
        assert encoded.cross[0].shape == (batch, 4, length, 8)  # [B, H, S, dh]
        decoder = sessions.decoder_for(encoded)
        start = manifest.special_ids["decoder_start"]
        tokens = np.full(batch, start)
        steps = limit if batch == 3 else 4
        fed = [tokens]
        for _ in range(steps):
            logits = decoder.step(tokens).logits
            tokens = logits.argmax(-1)
            fed.append(tokens)
        assert decoder.past[0].shape == (batch, 4, steps, 8)
        # The last step's logits equal PyTorch's with the whole prefix teacher-forced.
        with torch.no_grad():
            ref = model(
                input_ids=torch.from_numpy(ids),
                attention_mask=torch.from_numpy(mask),
                decoder_input_ids=torch.from_numpy(np.stack(fed[:-1], axis=1)),
            ).logits[:, -1]
        np.testing.assert_allclose(logits, ref.numpy(), atol=2e-4, rtol=1e-4)


def test_step_without_logits_matches(tiny_export):
    """logits=False lets ONNX Runtime write the log-softmax over the logits in place: same log-probabilities and
    candidates as a step that keeps the logits, for the same tokens."""
    directory = tiny_export("base")
    manifest = Manifest.load(directory)
    sessions = ModelSessions(directory, manifest, RuntimeOptions())
    ids = np.array([[5, 6, 7, 0], [9, 8, 0, manifest.special_ids["pad"]]], dtype=np.int64)
    mask = (ids != manifest.special_ids["pad"]).astype(np.int64)
    kept, dropped = (sessions.decoder_for(sessions.encode(ids, mask)) for _ in range(2))
    tokens = np.full(2, manifest.special_ids["decoder_start"], dtype=np.int64)
    for _ in range(5):
        a, b = kept.step(tokens, top_k=3), dropped.step(tokens, top_k=3, logits=False)
        assert a.logits is not None and b.logits is None
        np.testing.assert_array_equal(a.log_probs, b.log_probs)
        np.testing.assert_array_equal(a.top_ids, b.top_ids)
        np.testing.assert_array_equal(a.top_log_probs, b.top_log_probs)
        tokens = a.top_ids[:, 0].copy()


def test_an_unsupported_family_is_refused_by_name(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "t5"}', encoding="utf-8")
    with pytest.raises(ExportError, match="holds a 't5' model; enzh exports these families .*: marian, m2m_100, mbart"):
        export(str(tmp_path), tmp_path / "out", ExportOptions(progress=False))
    (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ExportError, match="config.json is not valid JSON"):
        export(str(tmp_path), tmp_path / "out", ExportOptions(progress=False))
