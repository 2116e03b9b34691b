"""The full-size model: exactly opus-mt-en-zh's config (../shared/reference) with seeded random weights."""

from __future__ import annotations

import subprocess
import sys

import pytest

from enzh.export.pipeline import ExportOptions, export
from enzh.export.validate import SENTENCES, check_tokens
from enzh.runtime.manifest import Manifest

from models import REFERENCE_CONFIG, build_reference_shaped

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not REFERENCE_CONFIG.is_dir(), reason=f"reference config not found at {REFERENCE_CONFIG}"),
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    source = build_reference_shaped(tmp_path_factory.mktemp("opus-shaped-hf"))
    out = tmp_path_factory.mktemp("opus-shaped-onnx")
    manifest = export(str(source), out, ExportOptions(force=True, progress=False))  # validates numerically
    return source, out, manifest


def test_export_size_within_5_percent_of_safetensors(reference):
    source, out, manifest = reference
    safetensors = (source / "model.safetensors").stat().st_size
    total = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    assert total <= 1.05 * safetensors, (total, safetensors)
    assert manifest.architecture["parameters"] == 77_943_296  # 77.9 M, as the model card says
    assert manifest.special_ids == {"decoder_start": 65000, "eos": 0, "pad": 65000, "unk": 1}
    assert manifest.generation["num_beams"] == 4 and manifest.generation["max_length"] == 512
    assert set(manifest.shared_initializers) == {"embed_tokens", "positions"}


def test_loaded_translator_holds_one_copy_of_the_weights(reference):
    """Memory added by loading stays below weights + half the embedding, and below weights + one embedding
    after translating with beam 4: a second copy of the shared 133 MB embedding fails both."""
    _, out, manifest = reference
    code = (
        "import enzh, enzh.runtime.translator, onnxruntime\n"
        "def rss(): return int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) * 1024\n"
        "base = rss()\n"
        f"t = enzh.Translator.load({str(out)!r})\n"
        "loaded = rss() - base\n"
        "t.translate(['hello world', 'the weather is nice today'], beam_size=4, max_new_tokens=8)\n"
        "print(loaded, rss() - base)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    loaded, translated = map(int, result.stdout.split())
    weights = (out / "weights.bin").stat().st_size
    embedding = 4 * 65001 * 512
    assert manifest.shared_initializers["embed_tokens"]["shape"] == [65001, 512]
    assert loaded < weights + embedding // 2, (loaded / 2**20, weights / 2**20)
    assert translated < weights + embedding, (translated / 2**20, weights / 2**20)


def test_token_parity_with_transformers(reference):
    from transformers import MarianMTModel

    source, out, _ = reference
    model = MarianMTModel.from_pretrained(source).eval()
    parity, mismatches = check_tokens(out, model, SENTENCES, max_new_tokens=16)
    assert set(parity) == {"greedy, batched", "greedy, one by one", "beam 4, batched", "beam 4, one by one"}
    assert all(same == total == len(SENTENCES) for same, total in parity.values()), (parity, mismatches)


def test_manifest_round_trip(reference):
    _, out, manifest = reference
    assert Manifest.load(out) == manifest
