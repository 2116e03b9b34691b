"""Marian pairs other than en->zh: single-target models without ``>>xx<<`` tokens.

Two tiny random models: en->de shaped with one shared vocabulary (tied embeddings), and zh->en shaped with
separate source and target vocabularies (vocab.json + target_vocab.json, separate embeddings), as
transformers converts such Marian models. Each is exported, validated and checked for token parity with
``generate()`` (greedy and beam, batched and one by one), and its tokenizer against transformers'.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import MarianMTModel  # noqa: E402
from transformers import MarianTokenizer as HFMarianTokenizer  # noqa: E402

from enzh import Translator  # noqa: E402
from enzh.export.pipeline import ExportOptions, export  # noqa: E402
from enzh.export.validate import check_numerics, validate_directory  # noqa: E402
from enzh.runtime.manifest import Manifest  # noqa: E402
from enzh.runtime.segment import join_parts  # noqa: E402

from models import HANZI, WORDS, build_single_target_marian  # noqa: E402

MAX_NEW = 20
PAIRS = {
    # name: (separate vocabularies, source words, eos bias)
    "en-de-shared": (False, WORDS, 15.0),
    "zh-en-separate": (True, list(HANZI), 15.0),
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Factory: name -> (HF model directory, exported directory), each built and exported once."""
    cache: dict[str, tuple[Path, Path]] = {}

    def get(name: str) -> tuple[Path, Path]:
        if name not in cache:
            separate, _, eos_bias = PAIRS[name]
            source = build_single_target_marian(
                tmp_path_factory.mktemp(f"hf-{name}"), separate_vocabs=separate, eos_bias=eos_bias
            )
            out = tmp_path_factory.mktemp(f"onnx-{name}")
            export(str(source), out, ExportOptions(force=True, progress=False))
            cache[name] = source, out
        return cache[name]

    return get


def sentences(name: str, count: int, seed: int) -> list[str]:
    words = PAIRS[name][1]
    rng = random.Random(seed)
    joiner = "" if name.startswith("zh") else " "
    return [
        joiner.join(rng.choice(words) for _ in range(rng.choice([1, 2, 4, 8, 13, 21]))) + rng.choice([".", "?", ""])
        for _ in range(count)
    ]


def hf_generate(model: Any, tokenizer: Any, texts: list[str], num_beams: int) -> list[tuple[int, ...]]:
    batch = tokenizer(texts, return_tensors="pt", padding=True)  # no language token: one target language
    with torch.no_grad():
        out = model.generate(**batch, num_beams=num_beams, max_length=MAX_NEW + 1, do_sample=False)
    results = []
    for row in out.tolist():
        ids = row[1:]
        results.append(tuple(ids[: ids.index(0) + 1] if 0 in ids else ids))
    return results


@pytest.mark.parametrize("name", list(PAIRS))
def test_export_validates_and_records_the_layout(name: str, pairs: Any) -> None:
    source, out = pairs(name)
    separate = PAIRS[name][0]
    model = MarianMTModel.from_pretrained(source).eval()
    assert model.config.share_encoder_decoder_embeddings is not separate
    report = check_numerics(out, model, atol=1e-4)
    assert report.ok, report.format()
    manifest = Manifest.load(out)
    source_lang, target_lang = ("zh", "en") if separate else ("en", "de")  # from tokenizer_config.json
    assert manifest.languages == {"tokens": [], "default": None, "source": source_lang, "target": target_lang}
    assert ("target_vocab" in manifest.tokenizer) is separate
    assert ("target_vocab.json.gz" in manifest.files) is separate
    if separate:
        packed = json.loads(gzip.decompress((out / "target_vocab.json.gz").read_bytes()))
        assert packed == json.loads((source / "target_vocab.json").read_text(encoding="utf-8"))
        assert "embed_tokens" not in manifest.shared_initializers  # encoder and decoder embeddings differ


@pytest.mark.parametrize("name", list(PAIRS))
def test_validate_directory_reports_parity(name: str, pairs: Any) -> None:
    source, out = pairs(name)
    report = validate_directory(out, str(source), sentences=sentences(name, 6, seed=1))
    assert report.ok, report.format()


@pytest.mark.parametrize("name", list(PAIRS))
def test_tokenizer_matches_transformers(name: str, pairs: Any) -> None:
    source, out = pairs(name)
    hf = HFMarianTokenizer.from_pretrained(source)
    ours = Translator.load(out).tokenizer
    texts = [*sentences(name, 20, seed=2), ">>de<< leading code-like text", "  spaces  ", ""]
    assert [ours.encode(t) for t in texts] == [hf(t)["input_ids"] for t in texts]
    rng = np.random.default_rng(3)
    size = MarianMTModel.from_pretrained(source).config.decoder_vocab_size
    for _ in range(30):
        ids = rng.integers(0, size, size=int(rng.integers(0, 12))).tolist()
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True), ids


@pytest.mark.parametrize("name", list(PAIRS))
@pytest.mark.parametrize("num_beams", [1, 4])
def test_translation_equals_transformers(name: str, num_beams: int, pairs: Any) -> None:
    source, out = pairs(name)
    model = MarianMTModel.from_pretrained(source).eval()
    tokenizer = HFMarianTokenizer.from_pretrained(source)
    translator = Translator.load(out)
    texts = sentences(name, 24, seed=num_beams)
    expected = hf_generate(model, tokenizer, texts, num_beams)
    results = translator.translate_detailed(texts, beam_size=num_beams, max_new_tokens=MAX_NEW)
    assert [r.token_ids[0] for r in results] == expected
    assert [r.text for r in results] == [tokenizer.decode(list(ids), skip_special_tokens=True) for ids in expected]
    lengths = {len(ids) for ids in expected}
    assert min(lengths) < MAX_NEW and MAX_NEW in lengths, lengths  # some stop early, some run to the limit
    for text, batched in zip(texts[:8], results[:8], strict=False):
        alone = translator.translate_detailed([text], beam_size=num_beams, max_new_tokens=MAX_NEW)[0]
        assert alone.token_ids == batched.token_ids
        assert alone.token_ids[0] == hf_generate(model, tokenizer, [text], num_beams)[0]


@pytest.mark.parametrize("name", list(PAIRS))
def test_no_language_token_is_added_and_target_is_refused(name: str, pairs: Any) -> None:
    _, out = pairs(name)
    translator = Translator.load(out)
    assert translator.adapter.language_tokens == ()
    # The text is encoded exactly as given (no token added, leading spaces kept, as transformers does).
    for text in ("hello", "  >>de<< hello", ">>fr<< x"):
        assert translator.adapter.with_language_token(text, translator.adapter.resolve_target(None)) == text
    wrong = "fr" if name.startswith("en-de") else "de"
    with pytest.raises(
        ValueError, match=rf"no target-language tokens .* target='{wrong}' cannot be honoured; accepted: None"
    ):
        translator.translate(["x"], target=wrong)
    assert translator.translate([""], target=None) == [""]
    # Its one target language, which the manifest names, is accepted and changes nothing.
    own = translator.info.directions[0][1]
    assert translator.translate(["x"], target=own) == translator.translate(["x"])


def test_n_best_with_separate_vocabularies(pairs: Any) -> None:
    source, out = pairs("zh-en-separate")
    model = MarianMTModel.from_pretrained(source).eval()
    tokenizer = HFMarianTokenizer.from_pretrained(source)
    translator = Translator.load(out)
    texts = sentences("zh-en-separate", 6, seed=9)
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        hf = model.generate(**batch, num_beams=4, num_return_sequences=3, max_length=MAX_NEW + 1)
    detailed = translator.translate_detailed(texts, beam_size=4, max_new_tokens=MAX_NEW, alternatives=3)
    expected = [tokenizer.decode(row, skip_special_tokens=True) for row in hf.tolist()]
    assert [a.text for t in detailed for a in t.alternatives] == expected


def test_quantized_variant_keeps_the_target_vocabulary(pairs: Any, tmp_path: Path) -> None:
    from enzh.quantize.pipeline import quantize

    source, out = pairs("zh-en-separate")
    manifest = quantize(out, tmp_path / "int8", precision="int8", force=True)
    assert manifest.tokenizer["target_vocab"] == "target_vocab.json.gz"
    translator = Translator.load(tmp_path / "int8")
    tokenizer = HFMarianTokenizer.from_pretrained(source)
    for result in translator.translate_detailed(sentences("zh-en-separate", 6, seed=4), max_new_tokens=MAX_NEW):
        assert result.text == tokenizer.decode(list(result.token_ids[0]), skip_special_tokens=True)


def test_parts_are_joined_with_spaces_unless_chinese_or_japanese(pairs: Any) -> None:
    assert join_parts(["Hello.", "How are you?"]) == "Hello. How are you?"
    assert join_parts(["你好。", "你呢？"]) == "你好。你呢？"
    assert join_parts(["Er sagt:", "「はい」"]) == "Er sagt:「はい」"
    assert join_parts(["", "a", "", "b"]) == "a b"
    # A long English-target text split into parts: the parts' translations joined with single spaces.
    _, out = pairs("zh-en-separate")
    translator = Translator.load(out)
    text = "。".join(sentences("zh-en-separate", 40, seed=5)) + "。"
    result = translator.translate_detailed([text], max_new_tokens=4)[0]
    assert result.parts > 1
    decoded = [translator.tokenizer.decode(ids) for ids in result.token_ids]
    assert result.text == " ".join(d for d in decoded if d)


def test_separate_vocabularies_must_agree_on_special_ids(pairs: Any) -> None:
    from enzh.runtime.tokenizer import MarianTokenizer

    source, _ = pairs("zh-en-separate")
    target = json.loads((source / "target_vocab.json").read_text(encoding="utf-8"))
    pad = target.pop("<pad>")
    target["<pad>"], moved = 5, next(t for t, i in target.items() if i == 5)
    target[moved] = pad
    (source / "moved_vocab.json").write_text(json.dumps(target), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pad_token '<pad>' has id 5 in the target vocabulary and \d+ in"):
        MarianTokenizer.from_dir(source, target_vocab="moved_vocab.json")
    assert MarianTokenizer.from_dir(source, target_vocab="target_vocab.json").id_to_token(pad) == "<pad>"
