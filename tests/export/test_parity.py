"""Token-for-token parity of the ONNX translator with transformers generate() on tiny random Marian models."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import MarianMTModel
from transformers import MarianTokenizer as HFMarianTokenizer

from enzh import Translator

from conftest import TINY_VARIANTS
from models import WORDS

MAX_NEW = 20


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.choice([1, 2, 3, 5, 8, 13, 21, 30]))]
        out.append(" ".join(words).capitalize() + rng.choice([".", "?", "!", ""]))
    return out


def hf_generate(model, tokenizer, texts: list[str], num_beams: int) -> list[tuple[int, ...]]:
    batch = tokenizer([f">>cmn_Hans<< {t}" for t in texts], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, num_beams=num_beams, max_length=MAX_NEW + 1, do_sample=False)
    results = []
    for row in out.tolist():
        ids = row[1:]  # drop the decoder start token
        if 0 in ids:
            ids = ids[: ids.index(0) + 1]  # HF pads after eos
        results.append(tuple(ids))
    return results


@pytest.fixture(scope="module", params=sorted(TINY_VARIANTS))
def pair(request, tiny_source, tiny_export):
    name = request.param
    model = MarianMTModel.from_pretrained(tiny_source(name)).eval()
    tokenizer = HFMarianTokenizer.from_pretrained(tiny_source(name))
    return name, model, tokenizer, Translator.load(tiny_export(name))


@pytest.mark.parametrize("num_beams", [1, 4])
def test_batched_and_single_equal_transformers(pair, num_beams):
    name, model, tokenizer, translator = pair
    texts = sentences(32, seed=hash(name) % 1000)
    expected = hf_generate(model, tokenizer, texts, num_beams)
    ours = [t.token_ids[0] for t in translator.translate_detailed(texts, beam_size=num_beams, max_new_tokens=MAX_NEW)]
    assert ours == expected
    # One by one: same ids as transformers one by one, and as our own batched run.
    for text, batched in zip(texts[:12], ours[:12], strict=True):
        single = translator.translate_detailed([text], beam_size=num_beams, max_new_tokens=MAX_NEW)[0].token_ids[0]
        assert single == hf_generate(model, tokenizer, [text], num_beams)[0]
        assert single == batched


def test_sentences_finish_at_different_steps(pair):
    """The parity above is only meaningful if some sentences stop early and others run to the limit."""
    name, _, _, translator = pair
    for beams in (1, 4):
        results = translator.translate_detailed(sentences(32, 7), beam_size=beams, max_new_tokens=MAX_NEW)
        lengths = {len(t.token_ids[0]) for t in results}
        if TINY_VARIANTS[name][1] > 0:
            assert min(lengths) < MAX_NEW and MAX_NEW in lengths, lengths
        else:
            assert lengths == {MAX_NEW}


def test_text_output_is_the_decoded_ids(pair):
    _, _, tokenizer, translator = pair
    results = translator.translate_detailed(sentences(8, 3), max_new_tokens=MAX_NEW)
    for result in results:
        assert result.text == tokenizer.decode(list(result.token_ids[0]), skip_special_tokens=True)
