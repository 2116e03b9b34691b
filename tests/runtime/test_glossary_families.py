"""Glossaries with the multilingual families (a tiny random M2M100- and NLLB-style export): the target-language
code stays the forced first token, the term's ids appear exactly once, and a glossary without matching terms
changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from enzh import Translator  # noqa: E402
from enzh.export.pipeline import ExportOptions, export  # noqa: E402
from enzh.tools.models import build_tiny_multilingual  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = ["The weather is nice today.", "Where is the train station?", "I like tea"]


@pytest.fixture(scope="module", params=["m2m100", "nllb"])
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Translator:
    kind = request.param
    hf = build_tiny_multilingual(tmp_path_factory.mktemp(f"hf-{kind}"), kind, seed=1, eos_bias=5.0)
    out = tmp_path_factory.mktemp(f"onnx-{kind}")
    export(str(hf), out, ExportOptions(force=True, progress=False, validate=False))
    return Translator.load(out)


def occurrences(ids: tuple[int, ...], term: tuple[int, ...]) -> int:
    return sum(1 for i in range(len(ids) - len(term) + 1) if ids[i : i + len(term)] == term)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_terms_placed_after_the_forced_language_code(exported: Translator, beam_size: int) -> None:
    translator: Any = exported
    code = translator.adapter.codes[translator.adapter.resolve_target("zh")]
    term = translator.term_ids("我们", "test")
    found = translator.translate_detailed(TEXTS, target="zh", beam_size=beam_size, glossary={"weather": "我们"})
    ids = found[0].token_ids[0]
    assert ids[0] == code
    assert occurrences(ids, term) == 1
    plain = translator.translate_detailed(TEXTS[1:], target="zh", beam_size=beam_size)
    assert [t.token_ids for t in found[1:]] == [t.token_ids for t in plain]  # sentences without the term
