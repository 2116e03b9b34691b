"""The trained demo model shipped in enzh/demo/model: real translations through the whole ONNX path."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from transformers import MarianMTModel

from enzh import Translator
from enzh.default_model import DEMO_SOURCE
from enzh.demo.evaluate_torch import score, test_pairs

THREE = {
    "The weather is nice today.": "今天天气很好。",
    "I would like a cup of coffee.": "我想要一杯咖啡。",
    "The meeting has been postponed.": "会议已被推迟。",
}


@pytest.fixture(scope="module")
def demo(demo_export):
    return Translator.load(demo_export)


def test_shipped_model_is_small():
    total = sum(p.stat().st_size for p in DEMO_SOURCE.iterdir() if p.is_file())
    assert total <= 20 * 10**6, total


@pytest.mark.parametrize("beam_size", [1, 4])
def test_the_three_sentences(demo, beam_size):
    assert demo.translate(list(THREE), beam_size=beam_size) == list(THREE.values())


def test_held_out_quality_through_onnx(demo):
    """The first 300 held-out pairs: exact match >= 90 % and chrF >= 95 (the full set is in the model card)."""
    pairs = test_pairs(DEMO_SOURCE / "test.tsv")[:300]
    hyps = demo.translate([en for en, _ in pairs], beam_size=1)
    scores = score(hyps, [zh for _, zh in pairs])
    assert scores["exact"] >= 90.0 and scores["chrf"] >= 95.0, scores


@pytest.mark.parametrize("num_beams", [1, 4])
def test_parity_with_transformers_on_mixed_lengths(demo, num_beams):
    """Sentences of very different lengths batched together finish at different steps; ids equal generate()."""
    pairs = test_pairs(DEMO_SOURCE / "test.tsv")
    texts = sorted({en for en, _ in pairs}, key=len)
    texts = texts[:6] + texts[len(texts) // 2 : len(texts) // 2 + 6] + texts[-6:]
    token = demo.adapter.resolve_target(None)
    sources = [demo.tokenizer.encode(demo.adapter.with_language_token(t, token)) for t in texts]
    assert max(map(len, sources)) > 2 * min(map(len, sources))
    ours = [h.token_ids for h in demo.generate_ids(sources, beam_size=num_beams, max_new_tokens=64)]
    assert len({len(o) for o in ours}) > 3  # really finished at different steps

    model = MarianMTModel.from_pretrained(DEMO_SOURCE).eval()
    from enzh.batching import pad_batch

    ids, mask = pad_batch(sources, demo.adapter.pad_token_id)
    with torch.no_grad():
        out = model.generate(
            input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), num_beams=num_beams, max_length=65
        )
    theirs = []
    for row in out.tolist():
        row = row[1:]
        theirs.append(tuple(row[: row.index(0) + 1] if 0 in row else row))
    assert ours == theirs
    singles = [demo.generate_ids([s], beam_size=num_beams, max_new_tokens=64)[0].token_ids for s in sources]
    assert singles == ours


def test_default_model_from_the_cli(tmp_path):
    """No --model: the embedded demo model is exported into the cache on first use, then reused."""
    env = {**os.environ, "ENZH_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "enzh", "translate", *THREE]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True)
    assert first.stdout.splitlines() == list(THREE.values())
    assert "exporting the embedded demo model" in first.stderr
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True)
    assert second.stdout.splitlines() == list(THREE.values())
    assert "exporting" not in second.stderr
    assert len(list((tmp_path / "cache").iterdir())) == 1
