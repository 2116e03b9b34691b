"""The multilingual families: tiny random NLLB-, M2M100- and mBART-50-style models with their real tokenizer files
export with default options and decode token-identically to transformers ``generate()``.

Each model is built by :func:`enzh.tools.models.build_tiny_multilingual` (the tokenizer saved by transformers'
own classes, the model sized to its ids, an eos bias so that sentences stop at different steps) and exported with
``enzh export``'s defaults (the numeric validation against PyTorch float64 included).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from enzh import Translator  # noqa: E402
from enzh.cli.main import main as cli_main  # noqa: E402
from enzh.export.pipeline import ExportOptions, export  # noqa: E402
from enzh.quantize.pipeline import quantize  # noqa: E402
from enzh.runtime.batching import pad_batch  # noqa: E402
from enzh.runtime.errors import ExportError  # noqa: E402
from enzh.tools.models import build_tiny_multilingual  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# kind -> (eos bias that makes the random model stop at different steps, its language codes, directions to test)
FAMILIES: dict[str, tuple[float, int, list[tuple[str, str]]]] = {
    "nllb": (6.0, 202, [("en", "zh"), ("zh", "en"), ("en", "zh-Hant"), ("eng_Latn", "zho_Hant")]),
    "m2m100": (4.0, 100, [("en", "zh"), ("zh", "en")]),
    "mbart50": (8.0, 52, [("en", "zh"), ("zh", "en")]),
}
TEXTS = [
    "The weather is nice today.",
    "Where is the train station?",
    "I like tea",
    "Hello",
    "我想要一杯咖啡。",
    "这是中文。没有拉丁字母！",
    "She has lived in Shanghai for three years, and she still loves the food there.",
    "a",
]


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """kind -> (HF directory, exported directory, the HF model, its tokenizer), built once per module."""
    cache: dict[str, tuple[Path, Path, Any, Any]] = {}

    def get(kind: str) -> tuple[Path, Path, Any, Any]:
        if kind not in cache:
            hf = build_tiny_multilingual(
                tmp_path_factory.mktemp(f"hf-{kind}"), kind, seed=1, eos_bias=FAMILIES[kind][0]
            )
            out = tmp_path_factory.mktemp(f"onnx-{kind}")
            export(str(hf), out, ExportOptions(force=True, progress=False))
            model = transformers.AutoModelForSeq2SeqLM.from_pretrained(hf).eval()
            cache[kind] = hf, out, model, transformers.AutoTokenizer.from_pretrained(hf)
        return cache[kind]

    return get


def _hf_language(code: str) -> str:
    """transformers' name of a code: M2M100's tokenizer takes ``en`` for the token ``__en__``."""
    return code.strip("_")


def _hf_generate(model: Any, sources: list[list[int]], forced: int, beams: int, new_tokens: int) -> list[tuple]:
    ids, mask = pad_batch(sources, int(model.config.pad_token_id))
    with torch.no_grad():
        out = model.generate(
            torch.from_numpy(ids),
            attention_mask=torch.from_numpy(mask),
            num_beams=beams,
            max_new_tokens=new_tokens,
            forced_bos_token_id=forced,
            do_sample=False,
        )
    rows = []
    for row in out[:, 1:].tolist():  # without the decoder start token, and without batch padding
        while row and row[-1] == model.config.pad_token_id:
            row.pop()
        rows.append(tuple(row))
    return rows


@pytest.mark.parametrize("kind", list(FAMILIES))
def test_exported_family_matches_generate(kind: str, family: Any) -> None:
    _, out, model, hf_tokenizer = family(kind)
    translator = Translator.load(out)
    for source, target in FAMILIES[kind][2]:
        source_code, target_code = translator.adapter.resolve_source(source), translator.resolve_target(target)
        forced = translator.adapter.codes[target_code]
        hf_tokenizer.src_lang = _hf_language(source_code)
        sources = [translator.tokenizer.encode(text, source_code) for text in TEXTS]
        assert sources == [hf_tokenizer(text)["input_ids"] for text in TEXTS]  # the same model inputs
        for beams in (1, 4):
            batched = [
                h.token_ids
                for h in translator.generate_ids(sources, beam_size=beams, max_new_tokens=24, target=target_code)
            ]
            assert batched == _hf_generate(model, sources, forced, beams, 24), (kind, source, target, beams)
            alone = [
                translator.generate_ids([s], beam_size=beams, max_new_tokens=24, target=target_code)[0].token_ids
                for s in sources
            ]
            assert alone == batched
            assert all(tokens[0] == forced for tokens in batched)  # the forced target code comes first
        lengths = {len(t) for t in batched}
        assert len(lengths) >= 2, lengths  # sentences stop at different steps


@pytest.mark.parametrize("kind", list(FAMILIES))
def test_languages_and_text_api(kind: str, family: Any) -> None:
    _, out, model, hf_tokenizer = family(kind)
    translator = Translator.load(out)
    info = translator.info
    assert len(info.targets) == FAMILIES[kind][1] == len(translator.languages)  # every code, at transformers' ids
    for code, idx in translator.adapter.codes.items():
        assert hf_tokenizer.convert_tokens_to_ids(code) == idx, code
    # Text in, text out: the translation is the decoded generate() output of the tokenizer's ids.
    hf_tokenizer.src_lang = _hf_language(translator.adapter.resolve_source("zh"))
    forced = translator.adapter.codes[translator.resolve_target("en")]
    ids = [hf_tokenizer("我想要一杯咖啡。")["input_ids"]]
    expected = hf_tokenizer.batch_decode(
        [list(t) for t in _hf_generate(model, ids, forced, 4, 24)], skip_special_tokens=True
    )
    assert (
        translator.translate(["我想要一杯咖啡。"], source="zh", target="en", beam_size=4, max_new_tokens=24) == expected
    )
    with pytest.raises(ValueError, match="unknown target 'xx'"):
        translator.translate(["Hi."], target="xx")
    with pytest.raises(ValueError, match="unknown source 'yy'"):
        translator.translate(["Hi."], source="yy")


def test_int8_and_the_cli(family: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _, _ = family("nllb")
    quantize(out, tmp_path / "int8", precision="int8")
    int8 = Translator.load(tmp_path / "int8")
    hyps = int8.generate_ids([int8.tokenizer.encode("Where is the train station?", "eng_Latn")], max_new_tokens=12)
    assert 0 < len(hyps[0].token_ids) <= 12 and hyps[0].token_ids[0] == int8.adapter.codes["zho_Hans"]
    fp32 = Translator.load(out)
    assert cli_main(["translate", "--model", str(out), "--source", "zh", "--target", "en", "我想要一杯咖啡。"]) == 0
    assert capsys.readouterr().out == fp32.translate(["我想要一杯咖啡。"], source="zh", target="en")[0] + "\n"
    assert cli_main(["translate", "--model", str(out), "--target", "fr_XX", "Hi."]) == 2
    assert "unknown target 'fr_XX'" in capsys.readouterr().err


def test_a_family_directory_without_its_tokenizer_files_is_refused(family: Any, tmp_path: Path) -> None:
    hf, _, _, _ = family("m2m100")
    copy = tmp_path / "m2m100"
    copy.mkdir()
    for path in hf.iterdir():
        if path.name != "vocab.json":
            (copy / path.name).write_bytes(path.read_bytes())
    with pytest.raises(ExportError, match="lacks tokenizer file.*vocab.json"):
        export(str(copy), tmp_path / "out", ExportOptions(progress=False))


def test_pad_aware_positions(family: Any) -> None:
    """M2M100/NLLB count positions past pads: a pad typed inside the source (the tokenizer turns "<pad>" into
    it) shifts the positions of the tokens after it, in the exported encoder as in transformers."""
    _, out, model, _ = family("nllb")
    translator = Translator.load(out)
    sources = [[256047, 50, 1, 60, 70, 2], [256047, 50, 60, 70, 2]]
    sources = [[min(i, model.config.vocab_size - 1) for i in s] for s in sources]
    forced = translator.adapter.codes["zho_Hans"]
    ours = [h.token_ids for h in translator.generate_ids(sources, beam_size=1, max_new_tokens=10, target="zho_Hans")]
    assert ours == _hf_generate(model, sources, forced, 1, 10)
    assert np.asarray(ours[0]).shape != () and ours[0] != ours[1]


def test_validate_checks_a_family_export(family: Any) -> None:
    """`enzh validate`: numerics and greedy / beam token parity with generate() (the target code forced)."""
    from enzh.export.validate import validate_directory

    hf, out, _, _ = family("mbart50")
    report = validate_directory(out, str(hf))
    assert report.ok, report.format()
    assert set(report.parity) == {"greedy, batched", "greedy, one by one", "beam 4, batched", "beam 4, one by one"}


@pytest.mark.parametrize("kind", ["nllb", "mbart50"])
def test_one_multilingual_model_serves_both_directions(kind: str, family: Any) -> None:
    """The router, a document and the LibreTranslate API take each direction of one multilingual model: the same
    text as the translator's own call with that source and target."""
    from fastapi.testclient import TestClient

    from enzh.documents.api import translate_document
    from enzh.runtime.router import Translators
    from enzh.serve.app import create_app
    from enzh.serve.options import ServeOptions

    _, out, _, _ = family(kind)
    translator = Translator.load(out)
    english, chinese = "The weather is nice today.", "我想要一杯咖啡。"
    into_zh = translator.translate([english], source="en", target="zh", beam_size=1)[0]
    into_en = translator.translate([chinese], source="zh", target="en", beam_size=1)[0]
    router = Translators([translator])
    assert router.directions == (("en", "zh"), ("zh", "en"))
    assert router.translate([english, chinese], beam_size=1) == [into_zh, into_en]
    document = translate_document(translator, f"{chinese}\n", format="txt", source="zh", target="en", beam_size=1)
    assert document == f"{into_en}\n"
    with TestClient(create_app(ServeOptions(default_beam_size=1), translator)) as client:
        deadline = time.monotonic() + 120  # the lifespan loads and warms up in its own thread
        while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        for source, target, text, want in (("zh", "en", chinese, into_en), ("en", "zh", english, into_zh)):
            answer = client.post("/translate", json={"q": text, "source": source, "target": target})
            assert answer.status_code == 200, answer.text
            assert answer.json()["translatedText"] == want
