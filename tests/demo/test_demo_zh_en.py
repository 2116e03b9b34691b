"""The trained Chinese->English demo model shipped exported in enzh/runtime/assets/demo-zh-en: its files, its
quality through ONNX, token parity with transformers, and the CLI's default pair."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from transformers import MarianMTModel, MarianTokenizer

from enzh import Translator
from enzh.demo import DIRECTIONS, direction_of
from enzh.demo.evaluate_torch import score
from enzh.demo.evaluate_torch import test_pairs as held_out
from enzh.export.pipeline import ExportOptions, export
from enzh.runtime.default_model import DEMO_ZH_EN_DIR

from models import generate_reference

HF_DIR = DIRECTIONS["zh-en"].hf_dir
TEST_SET = DEMO_ZH_EN_DIR / "test.tsv"


@pytest.fixture(scope="module")
def zh_en() -> Translator:
    return Translator.load(DEMO_ZH_EN_DIR)


def test_layout_as_opus_mt_zh_en():
    """No language tokens, Chinese source, English target, pad last; the manifest names the direction."""
    vocab = json.loads((HF_DIR / "vocab.json").read_text(encoding="utf-8"))
    assert (vocab["</s>"], vocab["<unk>"], vocab["<pad>"]) == (0, 1, len(vocab) - 1)
    assert not [t for t in vocab if t.startswith(">>")]
    config = json.loads((HF_DIR / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert (config["source_lang"], config["target_lang"]) == ("zh", "en")
    assert direction_of(HF_DIR).name == "zh-en"
    manifest = json.loads((DEMO_ZH_EN_DIR / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["languages"] == {"tokens": [], "default": None, "source": "zh", "target": "en"}
    assert manifest["source"]["id"] == "enzh-demo-zh-en"
    total = sum(p.stat().st_size for p in DEMO_ZH_EN_DIR.iterdir() if p.is_file())
    assert total <= 20 * 10**6, total


def test_the_test_set_is_the_en_zh_one_reversed():
    forward = held_out(DEMO_ZH_EN_DIR.parent / "demo" / "test.tsv")
    assert held_out(TEST_SET) == [(zh, en) for en, zh in forward]


def test_shipped_directory_equals_a_fresh_export(tmp_path, zh_en):
    fresh_dir = tmp_path / "fresh"
    export(str(HF_DIR), fresh_dir, ExportOptions(progress=False, source_id="enzh-demo-zh-en"))
    fresh = Translator.load(fresh_dir)
    assert fresh.manifest.files["weights.bin"] == zh_en.manifest.files["weights.bin"]
    texts = [zh for zh, _ in held_out(TEST_SET)]
    assert len(texts) == 1000
    assert fresh.translate(texts, beam_size=1) == zh_en.translate(texts, beam_size=1)


def test_held_out_quality_through_onnx(zh_en):
    """The whole held-out set, greedy: the model card's figures (96.0 % exact, chrF 99.08), with a margin for
    other CPUs' float rounding."""
    pairs = held_out(TEST_SET)
    hyps = zh_en.translate([zh for zh, _ in pairs], beam_size=1)
    scores = score(hyps, [en for _, en in pairs], "en")
    assert scores["exact"] >= 95.0 and scores["chrf"] >= 98.5, scores


@pytest.mark.parametrize("num_beams", [1, 4])
def test_parity_with_transformers_on_mixed_lengths(zh_en, num_beams):
    """Chinese sentences of very different lengths batched together: ids equal generate()'s, and the text equals
    MarianTokenizer's decoding."""
    texts = sorted({zh for zh, _ in held_out(TEST_SET)}, key=len)
    texts = texts[:6] + texts[len(texts) // 2 : len(texts) // 2 + 6] + texts[-6:]
    sources = [zh_en.tokenizer.encode(t) for t in texts]
    tokenizer = MarianTokenizer.from_pretrained(str(HF_DIR))
    assert sources == [tokenizer(t)["input_ids"] for t in texts]
    ours = [h.token_ids for h in zh_en.generate_ids(sources, beam_size=num_beams, max_new_tokens=64)]
    assert len({len(o) for o in ours}) > 3

    model = MarianMTModel.from_pretrained(HF_DIR).eval()
    theirs, out = generate_reference(model, sources, zh_en.adapter.pad_token_id, num_beams, 65)
    assert ours == theirs
    assert zh_en.decode(ours) == tokenizer.batch_decode(out, skip_special_tokens=True)


def test_the_cli_default_translates_both_ways(tmp_path):
    """No --model: the embedded pair; each text goes to the model of its language."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    texts = ["今天天气很好。", "我想要一杯咖啡。", "The weather is nice today."]
    cmd = [sys.executable, "-m", "enzh", "translate", *texts]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True)
    assert result.stdout.splitlines() == [
        "The weather is nice today.",
        "I would like a cup of coffee.",
        "今天天气很好。",
    ]
    assert result.stderr == ""
    explicit = [sys.executable, "-m", "enzh", "translate", "--source", "en", "--target", "en", "Hello."]
    refused = subprocess.run(explicit, capture_output=True, text=True, env=env, timeout=300)
    assert refused.returncode == 2
    assert refused.stderr == (
        "enzh translate: error: no loaded model translates 'en' into 'en'; offered: en->zh, zh->en "
        "(load a model of that direction with --model)\n"
    )
