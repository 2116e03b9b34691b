"""End to end: `enzh export --precision` / `enzh quantize`, and the size and quality gates of docs/precision.md."""

from __future__ import annotations

import json

import pytest

from enzh import Translator
from enzh.cli.main import main as cli_main
from enzh.quantize.compare import quantized_report
from enzh.quantize.pipeline import quantize
from enzh.runtime.manifest import Manifest

from models import REFERENCE_CONFIG, WORDS


def test_cli_export_and_quantize(tiny_source, tiny_export, tmp_path, capsys):
    out = tmp_path / "int4"
    assert cli_main(["export", str(tiny_source("deep")), str(out), "--precision", "int4", "--block-size", "32"]) == 0
    manifest = Manifest.load(out)
    assert manifest.precision == "int4" and manifest.quantization["block_size"] == 32
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".enzh-fp32-")]  # temporary fp32 removed
    assert "int4" in capsys.readouterr().out
    assert cli_main(["quantize", str(tiny_export("base")), str(tmp_path / "q8"), "--precision", "int8"]) == 0
    assert json.loads((tmp_path / "q8" / "manifest.json").read_text())["precision"] == "int8"
    assert cli_main(["quantize", str(tiny_export("base")), str(tmp_path / "q8"), "--precision", "int8"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert cli_main(["translate", "--model", str(tmp_path / "q8"), "--max-new-tokens", "4", WORDS[2]]) == 0


@pytest.mark.slow
@pytest.mark.skipif(not REFERENCE_CONFIG.is_dir(), reason=f"reference config not found at {REFERENCE_CONFIG}")
def test_shaped_model_size_gates(tmp_path_factory):
    """opus-mt-en-zh's exact shape: int8 <= 80 MB and int4 <= 50 MB (decimal) for the whole directory."""
    from enzh.export.pipeline import ExportOptions, export

    from models import build_reference_shaped

    source = build_reference_shaped(tmp_path_factory.mktemp("shaped-hf"))
    fp32 = tmp_path_factory.mktemp("shaped-fp32")
    export(str(source), fp32, ExportOptions(force=True, progress=False, validate=False))
    gates = {"int8": 80_000_000, "int4": 50_000_000}
    for precision, limit in gates.items():
        out = tmp_path_factory.mktemp(f"shaped-{precision}")
        manifest = quantize(fp32, out, precision=precision, force=True)
        total = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
        assert total <= limit, (precision, total / 1e6)
        assert quantized_report(out) == {"encoder": [], "decoder": []}
        assert manifest.quantization["rewritten"] == {
            "embedding lookup": 2,
            "linear": 66,
            "output projection": 1,
            "positions computed": 1,
        }


def test_demo_model_quality_and_size_gates(tmp_path_factory, demo_dir):
    """The trained demo model on 200 held-out pairs, beam 4: int8 within 1 chrF and 2 points exact match of
    fp32, int4 within 3 chrF; int8 weights at most 30 % and int4 at most 20 % of fp32 (docs/precision.md)."""
    from enzh.demo.evaluate_torch import score, test_pairs

    fp32 = demo_dir
    pairs = test_pairs(demo_dir / "test.tsv")[:200]
    sources, refs = [en for en, _ in pairs], [zh for _, zh in pairs]
    scores, sizes = {}, {}
    for precision in ("fp32", "int8", "int4"):
        directory = fp32
        if precision != "fp32":
            directory = tmp_path_factory.mktemp(f"demo-{precision}")
            quantize(fp32, directory, precision=precision, force=True)
        scores[precision] = score(Translator.load(directory).translate(sources, beam_size=4), refs)
        sizes[precision] = (directory / "weights.bin").stat().st_size
    assert scores["fp32"]["chrf"] > 80, scores  # a trained model, or the gates below mean nothing
    assert scores["fp32"]["chrf"] - scores["int8"]["chrf"] <= 1.0, scores
    assert scores["fp32"]["exact"] - scores["int8"]["exact"] <= 2.0, scores
    assert scores["fp32"]["chrf"] - scores["int4"]["chrf"] <= 3.0, scores
    assert sizes["int8"] <= 0.30 * sizes["fp32"] and sizes["int4"] <= 0.20 * sizes["fp32"], sizes
