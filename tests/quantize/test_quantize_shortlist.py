"""Shortlisted variants: the output projection scores only a corpus's most frequent target pieces."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from enzh import Translator
from enzh.cli.main import main as cli_main
from enzh.quantize.pipeline import quantize
from enzh.quantize.shortlist import corpus_shortlist
from enzh.runtime.errors import QuantizeError
from enzh.runtime.manifest import Manifest
from enzh.runtime.options import RuntimeOptions
from enzh.runtime.sessions import ModelSessions
from enzh.runtime.tokenizer import MarianTokenizer

from models import corpus


def test_shortlist(tiny_export, tmp_path, capsys):
    """--shortlist N: the projection scores the N pieces most frequent in the corpus (+ eos, unk) with exactly
    the full variant's logits, every other token gets -inf, and greedy search picks what the full variant
    picks when every other token is banned."""
    src, full = tiny_export("base"), tmp_path / "int8"
    quantize(src, full, precision="int8")
    lines = corpus(7)[1]
    (tmp_path / "zh.tsv").write_text("".join(f"source {i}\t{line}\n" for i, line in enumerate(lines)), "utf-8")
    out = tmp_path / "int8-shortlist"
    args = ["quantize", str(src), str(out), "--precision", "int8", "--shortlist", "20"]
    assert cli_main([*args, "--shortlist-corpus", str(tmp_path / "zh.tsv")]) == 0
    expected = MarianTokenizer.from_dir(src, vocab="vocab.json.gz").frequent_target_ids(lines, 20)
    assert corpus_shortlist(src, lines, 20) == expected
    info = Manifest.load(out).quantization["shortlist"]
    assert info["ids"] == expected and info["size"] == len(expected) == 22 and expected[:2] == [0, 1]
    decoder = onnx.load(str(out / "decoder.onnx"), load_external_data=False)
    dims = {o.name: [d.dim_value or d.dim_param for d in o.type.tensor_type.shape.dim] for o in decoder.graph.output}
    assert dims["logits"] == dims["log_probs"] == ["rows", 22]

    shortlisted = ModelSessions(out, Manifest.load(out), RuntimeOptions(verify_hashes=False))
    whole = ModelSessions(full, Manifest.load(full), RuntimeOptions(verify_hashes=False))
    ids = np.array(expected)
    others = np.setdiff1d(np.arange(whole.vocab), ids)
    source = np.array([[5, 6, 7, 0], [9, 10, 0, 58]])
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]])
    decoders = [s.decoder_for(s.encode(source, mask)) for s in (shortlisted, whole)]
    tokens = np.array([whole.manifest.special_ids["decoder_start"]] * 2)
    for _ in range(4):
        a, b = (d.step(tokens, top_k=3, logits=True) for d in decoders)
        assert a.logits is not None and b.logits is not None
        np.testing.assert_allclose(a.logits[:, ids], b.logits[:, ids], atol=1e-5)
        assert np.all(a.logits[:, others] == -np.inf) and np.all(a.log_probs[:, others] == -np.inf)
        assert np.isin(a.top_ids, ids).all()
        tokens = a.top_ids[:, 0]

    texts = [[5, 6, 7, 0], [9, 10, 0], [12, 0]]
    banned = [(int(t),) for t in others]
    picked = Translator.load(out).generate_ids(texts, beam_size=1, max_new_tokens=8)
    reference = Translator.load(full).generate_ids(texts, beam_size=1, max_new_tokens=8, bad_words_ids=banned)
    assert [h.token_ids for h in picked] == [h.token_ids for h in reference]
    beams = Translator.load(out).generate_ids(texts, beam_size=4, max_new_tokens=8)
    assert all(set(h.token_ids) <= set(expected) for h in beams)

    given = quantize(src, tmp_path / "given", precision="int4", shortlist_ids=[7, 30, 31])
    assert given.quantization["shortlist"]["ids"] == [0, 1, 7, 30, 31]
    quantize(src, tmp_path / "int4", precision="int4")
    int4 = [tmp_path / "given", tmp_path / "int4"]
    steps = []
    for directory in int4:
        sessions = ModelSessions(directory, Manifest.load(directory), RuntimeOptions(verify_hashes=False))
        steps.append(sessions.decoder_for(sessions.encode(source, mask)).step(tokens, logits=True).logits)
    np.testing.assert_allclose(steps[0][:, [0, 1, 7, 30, 31]], steps[1][:, [0, 1, 7, 30, 31]], atol=1e-5)
    # Fewer scored tokens than a beam step asks for (2 x 4 + 1 + bans): the search falls back to all scores.
    tiny = Translator.load(tmp_path / "given").generate_ids(texts, beam_size=4, max_new_tokens=6)
    assert all(h.token_ids and set(h.token_ids) <= {0, 1, 7, 30, 31} for h in tiny)
    with pytest.raises(QuantizeError, match="shortlist needs a quantized output projection"):
        quantize(src, tmp_path / "fp16", precision="fp16", shortlist_ids=expected)
    pad = Manifest.load(src).special_ids["pad"]
    with pytest.raises(QuantizeError, match=f"pad {pad} excluded"):
        quantize(src, tmp_path / "pad", precision="int8", shortlist_ids=[5, pad])
    assert cli_main(["quantize", str(src), str(tmp_path / "z"), "--precision", "int8", "--shortlist", "5"]) == 2
    assert "--shortlist N and --shortlist-corpus FILE go together" in capsys.readouterr().err
