"""n-best: ``num_return_sequences`` hypotheses per sentence, equal to ``generate(num_return_sequences=N)``.

On the torch stand-in decoder (search only) and through exported models (``Translator.generate_nbest_ids``
and ``translate_detailed(..., alternatives=N)``): the same sequences in the same order, and the same
``sequences_scores`` to float32 rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_decoding import (  # noqa: E402
    EOS,
    MID,
    PLAIN,
    SMALL,
    WIDE,
    ModelSpec,
    TorchDecoder,
    build_model,
    make_sources,
    pad_batch,
    settings_for,
)
from transformers import MarianMTModel  # noqa: E402
from transformers import MarianTokenizer as HFMarianTokenizer  # noqa: E402

from enzh import Translator  # noqa: E402
from enzh.runtime.decoding import Hypothesis, beam_search, check_num_return_sequences, generate_nbest  # noqa: E402
from enzh.runtime.options import DecodingSettings  # noqa: E402

from models import WORDS  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def hf_nbest(model: Any, ids: Any, mask: Any, pad: int, n: int, **kwargs: Any) -> list[list[Hypothesis]]:
    """generate(num_return_sequences=n): per source the n sequences (start token and padding stripped) with
    their sequences_scores, in HF's order."""
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=mask,
            num_return_sequences=n,
            do_sample=False,
            return_dict_in_generate=True,
            output_scores=True,
            **kwargs,
        )
    flat = []
    for row, score in zip(out.sequences[:, 1:].tolist(), out.sequences_scores.tolist(), strict=True):
        while row and row[-1] == pad:
            row.pop()
        flat.append(Hypothesis(tuple(row), score))
    return [flat[i : i + n] for i in range(0, len(flat), n)]


def assert_same_nbest(actual: list[list[Hypothesis]], expected: list[list[Hypothesis]], tol: float, what: str) -> None:
    assert [[h.token_ids for h in hyps] for hyps in actual] == [[h.token_ids for h in hyps] for hyps in expected], what
    np.testing.assert_allclose(
        [h.score for hyps in actual for h in hyps], [h.score for hyps in expected for h in hyps], rtol=tol, atol=tol
    )


# ----------------------------------------------------------------------------------------------------------
# The search on the torch stand-in decoder
# ----------------------------------------------------------------------------------------------------------

SEARCH_CASES: dict[str, tuple[ModelSpec, int, int, dict[str, Any]]] = {
    # name: (model, max_new_tokens, num_return_sequences, settings)
    "beam2-n2": (MID, 30, 2, {"num_beams": 2}),
    "beam3-n2-early": (SMALL, 25, 2, {"num_beams": 3, "early_stopping": True}),
    "beam4-n4-marian": (WIDE, 30, 4, {"num_beams": 4, "renormalize_logits": True, "forced_eos_token_id": EOS}),
    "beam4-n3-lp0.6-never": (MID, 25, 3, {"num_beams": 4, "length_penalty": 0.6, "early_stopping": "never"}),
    "beam5-n5-minlen-ngram": (MID, 25, 5, {"num_beams": 5, "min_length": 6, "no_repeat_ngram_size": 2}),
    "beam4-n2-plain-short": (PLAIN, 3, 2, {"num_beams": 4}),
    "beam4-n1": (SMALL, 20, 1, {"num_beams": 4}),
}


def _hf_kwargs(settings: DecodingSettings) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "num_beams": settings.num_beams,
        "max_new_tokens": settings.max_length - 1,
        "length_penalty": settings.length_penalty,
        "early_stopping": settings.early_stopping,
        "renormalize_logits": settings.renormalize_logits,
        "bad_words_ids": [list(s) for s in settings.bad_words_ids],
    }
    if settings.forced_eos_token_id is not None:
        kwargs["forced_eos_token_id"] = settings.forced_eos_token_id
    for key in ("min_length", "no_repeat_ngram_size"):
        if getattr(settings, key):
            kwargs[key] = getattr(settings, key)
    return kwargs


@pytest.mark.parametrize("name", list(SEARCH_CASES))
def test_nbest_search_matches_generate(name: str) -> None:
    spec, max_new, n, options = SEARCH_CASES[name]
    settings = settings_for(spec, max_new, **options)
    sources = make_sources(spec, 10, seed=len(name))
    ids, mask = pad_batch(spec, sources)
    model = build_model(spec)
    expected = hf_nbest(model, ids, mask, spec.pad, n, **_hf_kwargs(settings))
    ours = generate_nbest(TorchDecoder(model, ids, mask), len(sources), settings, n)
    assert_same_nbest(ours, expected, 1e-5, name)
    # The best of the n-best is beam_search's answer; the n hypotheses of a sentence differ.
    best = beam_search(TorchDecoder(model, ids, mask), len(sources), settings)
    assert [hyps[0] for hyps in ours] == best
    assert all(len({h.token_ids for h in hyps}) == n for hyps in ours)
    # One by one gives the same n-best.
    for index in (0, len(sources) - 1):
        one_ids, one_mask = pad_batch(spec, [sources[index]])
        alone = generate_nbest(TorchDecoder(model, one_ids, one_mask), 1, settings, n)
        assert_same_nbest(alone, [ours[index]], 1e-5, f"{name}: alone")


def test_num_return_sequences_is_checked() -> None:
    greedy = settings_for(SMALL, 5)
    beam = settings_for(SMALL, 5, num_beams=3)
    with pytest.raises(ValueError, match=r"must be 1 with greedy search \(num_beams=1\), got 2"):
        generate_nbest(None, 1, greedy, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"between 1 and num_beams \(3\), got 4"):
        generate_nbest(None, 1, beam, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"between 1 and num_beams \(3\), got 0"):
        check_num_return_sequences(0, 3)
    with pytest.raises(TypeError, match="must be an int, got float"):
        check_num_return_sequences(2.0, 3)  # type: ignore[arg-type]
    assert generate_nbest(None, 0, beam, 3) == []  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------------
# Through exported models (the session's tiny Marian models with their tokenizers)
# ----------------------------------------------------------------------------------------------------------

MAX_NEW = 20


def texts(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        " ".join(rng.choice(WORDS, size=int(rng.choice([1, 3, 6, 12, 25])))).capitalize() + "." for _ in range(count)
    ]


@pytest.fixture(scope="module", params=["base", "untied"])
def pair(request: Any, tiny_source: Any, tiny_export: Any) -> tuple[Any, Any, Translator]:
    name = request.param
    model = MarianMTModel.from_pretrained(tiny_source(name)).eval()
    return model, HFMarianTokenizer.from_pretrained(tiny_source(name)), Translator.load(tiny_export(name))


@pytest.mark.parametrize(("beams", "n"), [(2, 2), (4, 3), (5, 5)])
def test_nbest_ids_through_exported_model(pair: tuple[Any, Any, Translator], beams: int, n: int) -> None:
    model, tokenizer, translator = pair
    sentences = texts(12, seed=beams * 10 + n)
    batch = tokenizer([f">>cmn_Hans<< {t}" for t in sentences], return_tensors="pt", padding=True)
    # The model's generation_config supplies the rest (bad words, forced eos, renormalization).
    expected = hf_nbest(
        model, batch["input_ids"], batch["attention_mask"], translator.adapter.pad_token_id, n,
        num_beams=beams, max_length=MAX_NEW + 1,
    )  # fmt: skip
    sources = [translator.tokenizer.encode(f">>cmn_Hans<< {t}") for t in sentences]
    ours = translator.generate_nbest_ids(sources, num_return_sequences=n, beam_size=beams, max_new_tokens=MAX_NEW)
    assert_same_nbest(ours, expected, 1e-4, "batched")
    lengths = {len(h.token_ids) for hyps in ours for h in hyps}
    assert min(lengths) < MAX_NEW and MAX_NEW in lengths, lengths  # some hypotheses stop early, some do not
    for source, hyps in zip(sources[:4], ours, strict=False):
        alone = translator.generate_nbest_ids([source], num_return_sequences=n, beam_size=beams, max_new_tokens=MAX_NEW)
        assert_same_nbest(alone, [hyps], 1e-4, "one by one")
    best = translator.generate_ids(sources, beam_size=beams, max_new_tokens=MAX_NEW)
    assert [h.token_ids for h in best] == [hyps[0].token_ids for hyps in ours]


def test_translate_detailed_alternatives(tiny_export: Any) -> None:
    translator = Translator.load(tiny_export("base"))
    sentences = [*texts(5, seed=3), "", "   "]
    plain = translator.translate_detailed(sentences, beam_size=4, max_new_tokens=MAX_NEW)
    detailed = translator.translate_detailed(sentences, beam_size=4, max_new_tokens=MAX_NEW, alternatives=3)
    assert all(t.alternatives == () for t in plain)
    sources = [translator.tokenizer.encode(f">>cmn_Hans<< {t}") for t in sentences[:5]]
    nbest = translator.generate_nbest_ids(sources, num_return_sequences=3, beam_size=4, max_new_tokens=MAX_NEW)
    for result, ordinary, hyps in zip(detailed, plain, nbest, strict=False):
        # The best stays first and is the ordinary translation.
        assert (result.text, result.token_ids, result.scores) == (ordinary.text, ordinary.token_ids, ordinary.scores)
        assert len(result.alternatives) == 3
        first = result.alternatives[0]
        assert (first.text, first.token_ids, first.scores) == (result.text, result.token_ids, result.scores)
        for alternative, hyp in zip(result.alternatives, hyps, strict=True):
            assert alternative.token_ids == (hyp.token_ids,)
            assert alternative.scores == (hyp.score,)
            assert alternative.text == translator.tokenizer.decode(hyp.token_ids)
        assert [a.scores[0] for a in result.alternatives] == sorted(
            (a.scores[0] for a in result.alternatives), reverse=True
        )
    for blank, sent in zip(detailed[5:], sentences[5:], strict=True):
        assert blank.text == sent and blank.parts == 0  # blank text comes back as sent
        assert [(a.text, a.token_ids) for a in blank.alternatives] == [(sent, ())]
    # The model default beam size (4, from generation_config) applies when beam_size is not given.
    default = translator.translate_detailed(sentences[:2], max_new_tokens=MAX_NEW, alternatives=4)
    assert all(len(t.alternatives) == 4 for t in default)


def test_alternatives_of_a_text_split_into_parts(tiny_export: Any) -> None:
    """A text too long for one decode: the k-th alternative is the k-th best of every part, joined."""
    translator = Translator.load(tiny_export("base"))
    sentence = " ".join(WORDS[:40]) + "."
    text = " ".join([sentence] * 8)
    result = translator.translate_detailed([text], beam_size=2, max_new_tokens=4, alternatives=2)[0]
    assert result.parts > 1
    assert [len(a.token_ids) for a in result.alternatives] == [result.parts] * 2
    second = result.alternatives[1]
    assert second.text == "".join(translator.tokenizer.decode(ids) for ids in second.token_ids)  # Chinese: no spaces


def test_alternatives_are_checked(tiny_export: Any) -> None:
    translator = Translator.load(tiny_export("base"))
    message = (
        r"alternatives=5 needs beam search with at least 5 beams, but the beam size is 4 \(the model default\); "
        r"pass alternatives between 1 and 4, or beam_size >= 5"
    )
    with pytest.raises(ValueError, match=message):
        translator.translate_detailed(["cat"], alternatives=5)
    with pytest.raises(
        ValueError, match="alternatives=2 needs beam search with at least 2 beams, but the beam size is 1;"
    ):
        translator.translate_detailed(["cat"], beam_size=1, alternatives=2)
    with pytest.raises(ValueError, match=r"alternatives must be between 1 and the beam size \(4\), or None, got 0"):
        translator.translate_detailed(["cat"], alternatives=0)
    with pytest.raises(TypeError, match="alternatives must be an int or None, got float"):
        translator.translate_detailed(["cat"], alternatives=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"between 1 and num_beams \(2\), got 3"):
        translator.generate_nbest_ids([[5, 0]], num_return_sequences=3, beam_size=2)
    with pytest.raises(TypeError, match="for n-best use generate_nbest_ids"):
        translator.generate_ids([[5, 0]], num_return_sequences=2)
    # The default call keeps its return type: one Hypothesis per source.
    assert all(isinstance(h, Hypothesis) for h in translator.generate_ids([[5, 0], [6, 7, 0]], max_new_tokens=3))
