"""The trained demo model shipped exported in enzh/runtime/assets/demo: real translations through ONNX."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from transformers import MarianMTModel

from enzh import Translator
from enzh.demo import HF_MODEL_DIR
from enzh.demo.evaluate_torch import score, test_pairs
from enzh.export.pipeline import ExportOptions, export
from enzh.runtime.default_model import DEMO_DIR, DEMO_TEST_SET

from models import generate_reference

THREE = {
    "The weather is nice today.": "今天天气很好。",
    "I would like a cup of coffee.": "我想要一杯咖啡。",
    "The meeting has been postponed.": "会议已被推迟。",
}


@pytest.fixture(scope="module")
def demo(demo_dir):
    return Translator.load(demo_dir)


def test_shipped_model_is_small():
    total = sum(p.stat().st_size for p in DEMO_DIR.iterdir() if p.is_file())
    assert total <= 20 * 10**6, total


def test_shipped_directory_equals_a_fresh_export(tmp_path, demo):
    """Exporting the HF weights again gives the same weights and the same translations of the whole test set."""
    fresh_dir = tmp_path / "fresh"
    export(str(HF_MODEL_DIR), fresh_dir, ExportOptions(progress=False, source_id="enzh-demo"))
    fresh = Translator.load(fresh_dir)
    assert fresh.manifest.files["weights.bin"] == demo.manifest.files["weights.bin"]
    texts = [en for en, _ in test_pairs(DEMO_TEST_SET)]
    assert len(texts) == 1000
    assert fresh.translate(texts, beam_size=1) == demo.translate(texts, beam_size=1)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_the_three_sentences(demo, beam_size):
    assert demo.translate(list(THREE), beam_size=beam_size) == list(THREE.values())


def test_held_out_quality_through_onnx(demo):
    """The first 300 held-out pairs: exact match >= 90 % and chrF >= 95 (the full set is in the model card)."""
    pairs = test_pairs(DEMO_TEST_SET)[:300]
    hyps = demo.translate([en for en, _ in pairs], beam_size=1)
    scores = score(hyps, [zh for _, zh in pairs])
    assert scores["exact"] >= 90.0 and scores["chrf"] >= 95.0, scores


@pytest.mark.parametrize("num_beams", [1, 4])
def test_parity_with_transformers_on_mixed_lengths(demo, num_beams):
    """Sentences of very different lengths batched together finish at different steps; ids equal generate()."""
    pairs = test_pairs(DEMO_TEST_SET)
    texts = sorted({en for en, _ in pairs}, key=len)
    texts = texts[:6] + texts[len(texts) // 2 : len(texts) // 2 + 6] + texts[-6:]
    token = demo.adapter.resolve_target(None)
    sources = [demo.tokenizer.encode(demo.adapter.with_language_token(t, token)) for t in texts]
    assert max(map(len, sources)) > 2 * min(map(len, sources))
    ours = [h.token_ids for h in demo.generate_ids(sources, beam_size=num_beams, max_new_tokens=64)]
    assert len({len(o) for o in ours}) > 3  # really finished at different steps

    model = MarianMTModel.from_pretrained(HF_MODEL_DIR).eval()
    theirs, _ = generate_reference(model, sources, demo.adapter.pad_token_id, num_beams, 65)
    assert ours == theirs
    singles = [demo.generate_ids([s], beam_size=num_beams, max_new_tokens=64)[0].token_ids for s in sources]
    assert singles == ours


def test_default_model_from_the_cli(tmp_path):
    """No --model: the embedded demo model translates at once, with no export step and nothing cached."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "enzh", "translate", *THREE]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True)
    assert result.stdout.splitlines() == list(THREE.values())
    assert result.stderr == ""
    assert not (tmp_path / "cache" / "enzh").exists()
