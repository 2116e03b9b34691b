"""Source-aware shortlists: each batch's decoder scores the target pieces its source pieces are associated with."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest

from enzh import Translator
from enzh.cli.main import main as cli_main
from enzh.quantize.lexical import Tokenized, count_table, lexical_table
from enzh.quantize.pipeline import quantize
from enzh.runtime.batching import pad_batch
from enzh.runtime.candidates import COLUMN_ALIGN, TABLE_FILE, LexicalTable
from enzh.runtime.errors import QuantizeError
from enzh.runtime.manifest import Manifest, map_stored

from models import corpus

TEXTS = [[5, 6, 7, 0], [9, 10, 0], [12, 30, 31, 44, 0]]


@pytest.fixture(scope="module")
def pairs_tsv(tmp_path_factory):
    """A parallel corpus for the tiny model's tokenizers (random lines paired up: only the counting matters)."""
    en, zh = corpus(7)
    path = tmp_path_factory.mktemp("pairs") / "pairs.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in zip(en, zh, strict=True)), "utf-8")
    return path


@pytest.fixture(scope="module")
def source_aware(tiny_export, pairs_tsv, tmp_path_factory):
    """The tiny model's int8 variant with a source shortlist of 6 frequent pieces and 3 per source piece."""
    out = tmp_path_factory.mktemp("int8-source") / "model"
    args = ["quantize", str(tiny_export("base")), str(out), "--precision", "int8"]
    assert cli_main([*args, "--source-shortlist", str(pairs_tsv), "--shortlist-frequent", "6"]) == 0
    return out


@pytest.fixture(scope="module")
def no_bias_export(tiny_source, tmp_path_factory):
    """The tiny model exported with a zero final_logits_bias: its quantized projection has no bias (as
    opus-mt-en-zh's), so a source shortlist's bias input is all the runtime's (0, and -inf for the padding)."""
    from transformers import MarianMTModel

    from enzh.export.pipeline import ExportOptions, export

    hf = tmp_path_factory.mktemp("hf-no-bias")
    for path in tiny_source("base").iterdir():
        shutil.copy(path, hf / path.name)
    model = MarianMTModel.from_pretrained(tiny_source("base"))
    model.final_logits_bias.zero_()
    model.save_pretrained(hf)
    out = tmp_path_factory.mktemp("onnx-no-bias")
    export(str(hf), out, ExportOptions(force=True, progress=False))
    return out


@pytest.fixture(scope="module")
def no_bias_source_aware(no_bias_export, pairs_tsv, tmp_path_factory):
    out = tmp_path_factory.mktemp("int8-source-no-bias") / "model"
    quantize(no_bias_export, out, precision="int8", source_shortlist=pairs_tsv, shortlist_frequent=6)
    assert "bias" not in Manifest.load(out).quantization["source_shortlist"]["projection"]
    return out


def test_count_table():
    """p(t|s) ranks a source piece's targets; pieces no more likely with s than without it, and the frequent
    ones, are left out; specials are never counted."""
    sources = [[3, 4, 0], [3, 0], [4, 5, 0], [5, 0]]
    targets = [[7, 8, 9], [7, 9], [8, 9, 10], [10, 11, 1]]
    corpus = Tokenized(sources, targets, source_vocab=6, target_vocab=12, skip_sources=(0, 2), skip_targets=(0, 2, 1))
    table = count_table(corpus, frequent=1, per_source=2)
    assert table.frequent.tolist() == [9]  # 3 sentences (ties: 8 and 10 twice, 7 twice)
    rows = [table.targets[a:b].tolist() for a, b in zip(table.offsets[:-1], table.offsets[1:], strict=True)]
    # 3: with 7 twice (p=1 > 0.5) and 8 once (0.5, not above its prior 0.5); 4: 8 (p=1), then 7 and 10 tie at 0.5
    # (priors 0.5: not above); 5: 10 (p=1), 11 (0.5 > 0.25), 8 (0.5, prior 0.5: out)
    assert rows == [[], [], [], [7], [8], [10, 11]]
    data = table.to_bytes()
    assert len(data) == 8 + 4 * (3 + 7 + len(table.targets) + 1)
    sizes = {"sources": 6, "entries": 4, "frequent_ids": 1}
    assert LexicalTable.from_bytes(data, "t").sizes() == table.sizes() == sizes
    with pytest.raises(ValueError, match="is not a source shortlist table"):
        LexicalTable.from_bytes(data[:-4], "t")


def test_candidates_and_manifest(source_aware, tiny_export):
    """The manifest records the table; each batch's candidates are the numpy union of its source pieces' rows,
    the frequent pieces, eos and unk, never pad; the decoder's projection reads them as inputs, padded with -inf
    columns to a multiple of COLUMN_ALIGN."""
    manifest = Manifest.load(source_aware)
    info = manifest.quantization["source_shortlist"]
    assert info["file"] == TABLE_FILE and TABLE_FILE in manifest.files
    assert (info["frequent"], info["per_source"], info["frequent_ids"], info["corpus"]["pairs"]) == (6, 20, 6, 400)
    # The projection's weight is the embedding's int8 rows [V, d], stored once (the lookups' shared table).
    rows = info["projection"]["weight_rows"]
    assert "weight" not in info["projection"] and "shortlist_ids" not in manifest.quantization
    assert rows["dtype"] == "int8" and manifest.shared_initializers[rows["name"]]["offset"] == rows["offset"]
    table = LexicalTable.read(source_aware / TABLE_FILE, info)
    assert len(table.targets) == info["entries"] > 0
    decoder = onnx.load(str(source_aware / "decoder.onnx"), load_external_data=False)
    inputs = {i.name for i in decoder.graph.input}
    assert {"shortlist_weight", "shortlist_scales", "shortlist_bias", "shortlist_ids"} <= inputs
    dims = {o.name: [d.dim_value or d.dim_param for d in o.type.tensor_type.shape.dim] for o in decoder.graph.output}
    assert dims["logits"] == ["rows", "candidates"]

    translator = Translator.load(source_aware)
    special = manifest.special_ids
    ids, mask = pad_batch(TEXTS, special["pad"])
    selection = translator.sessions.encode(ids, mask).selection
    assert selection is not None
    expected = {int(t) for t in table.frequent} | {special["eos"], special["unk"]}
    for source in {int(s) for s in ids[mask != 0]}:
        expected |= {int(t) for t in table.targets[table.offsets[source] : table.offsets[source + 1]]}
    expected.discard(special["pad"])
    assert selection.ids.tolist() == sorted(expected)
    assert len(selection.ids) < translator.sessions.vocab - 1
    # Bound as columns padded to whole cache lines: pad's column, bias -inf.
    count, width = len(selection.ids), -(-len(selection.ids) // COLUMN_ALIGN) * COLUMN_ALIGN
    assert selection.columns.tolist() == [*selection.ids.tolist(), *[special["pad"]] * (width - count)]
    assert selection.feeds["shortlist_ids"] is selection.columns
    projection = translator.sessions.source_shortlist.projection
    stored = map_stored(source_aware, rows)  # [V, d]: bound as [d, candidates]
    assert selection.feeds["shortlist_weight"].shape == (stored.shape[1], width)
    assert np.array_equal(selection.feeds["shortlist_weight"], stored[selection.columns].T)
    assert np.array_equal(selection.feeds["shortlist_scales"], projection["scales"][selection.columns])
    bias = selection.feeds["shortlist_bias"]
    assert np.array_equal(bias[:count], projection["bias"][selection.ids]) and np.all(bias[count:] == -np.inf)


@pytest.mark.parametrize("bias", ["bias", "no bias"])
def test_same_tokens_as_a_global_shortlist_of_the_batch(bias, request, tiny_export, tmp_path):
    """Greedy, beam and n-best search of a source-aware variant give exactly the tokens (and scores) of the same
    int8 variant with a global shortlist of that batch's candidates (its -inf padding columns change nothing),
    with a projection bias and without one."""
    model, fp32 = ("source_aware", tiny_export("base")) if bias == "bias" else ("no_bias_source_aware", None)
    model_dir = request.getfixturevalue(model)
    fp32 = fp32 or request.getfixturevalue("no_bias_export")
    translator = Translator.load(model_dir)
    ids, mask = pad_batch(TEXTS, translator.manifest.special_ids["pad"])
    selection = translator.sessions.encode(ids, mask).selection
    assert selection is not None and len(selection.columns) % COLUMN_ALIGN == 0
    assert len(selection.columns) > len(selection.ids)  # padding columns are bound
    fixed = tmp_path / "global"
    quantize(fp32, fixed, precision="int8", shortlist_ids=selection.ids.tolist())
    reference = Translator.load(fixed)
    for beams in (1, 4):
        got = translator.generate_ids(TEXTS, beam_size=beams, max_new_tokens=8)
        want = reference.generate_ids(TEXTS, beam_size=beams, max_new_tokens=8)
        assert [h.token_ids for h in got] == [h.token_ids for h in want]
        assert [h.score for h in got] == [h.score for h in want]
        assert all(set(h.token_ids) <= set(selection.ids.tolist()) for h in got)
    got_n = translator.generate_nbest_ids(TEXTS, num_return_sequences=3, beam_size=4, max_new_tokens=6)
    want_n = reference.generate_nbest_ids(TEXTS, num_return_sequences=3, beam_size=4, max_new_tokens=6)
    assert [[h.token_ids for h in hs] for hs in got_n] == [[h.token_ids for h in hs] for hs in want_n]
    # One batch at a time: a sentence alone gets its own (smaller) candidate set.
    alone = translator.sessions.encode(np.array([TEXTS[1]]), np.ones((1, 3), dtype=np.int64)).selection
    assert alone is not None and set(alone.ids.tolist()) < set(selection.ids.tolist())


def test_decoder_without_a_bias_input(no_bias_source_aware, tmp_path):
    """A source-aware variant quantized before the bias was always an input (its projection without one): bound
    the candidates' columns alone, unpadded, with the same tokens and scores."""
    old = tmp_path / "old"
    shutil.copytree(no_bias_source_aware, old)
    decoder = onnx.load(str(old / "decoder.onnx"), load_external_data=False)
    projection = next(n for n in decoder.graph.node if "logits" in n.output)
    assert projection.input[4] == "shortlist_bias"
    del projection.input[3:]  # the bias (the default s7 codes have no zero point)
    bias_input = next(i for i in decoder.graph.input if i.name == "shortlist_bias")
    decoder.graph.input.remove(bias_input)
    onnx.save(decoder, str(old / "decoder.onnx"))
    manifest = json.loads((old / "manifest.json").read_text("utf-8"))
    data = (old / "decoder.onnx").read_bytes()
    manifest["files"]["decoder.onnx"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (old / "manifest.json").write_text(json.dumps(manifest), "utf-8")

    translator, current = Translator.load(old), Translator.load(no_bias_source_aware)
    ids, mask = pad_batch(TEXTS, translator.manifest.special_ids["pad"])
    selection = translator.sessions.encode(ids, mask).selection
    assert selection is not None and "shortlist_bias" not in selection.feeds
    assert selection.columns.tolist() == selection.ids.tolist()
    assert selection.feeds["shortlist_weight"].shape[1] == len(selection.ids)
    for beams in (1, 4):
        got = translator.generate_ids(TEXTS, beam_size=beams, max_new_tokens=8)
        want = current.generate_ids(TEXTS, beam_size=beams, max_new_tokens=8)
        assert [(h.token_ids, h.score) for h in got] == [(h.token_ids, h.score) for h in want]


def test_table_file_given(source_aware, tiny_export, tmp_path):
    """A table file (another variant's shortlist.bin) is used as it is, recorded by its hash."""
    given = source_aware / TABLE_FILE
    out = quantize(tiny_export("base"), tmp_path / "again", precision="int8", source_shortlist=given)
    assert (tmp_path / "again" / TABLE_FILE).read_bytes() == given.read_bytes()
    assert out.quantization["source_shortlist"]["corpus"]["given"] == "table file"
    small = LexicalTable(offsets=np.array([0, 1, 1, 1]), targets=np.array([5]), frequent=np.array([3]))
    (tmp_path / "small.bin").write_bytes(small.to_bytes())
    with pytest.raises(QuantizeError, match="does not fit this model"):
        quantize(tiny_export("base"), tmp_path / "other", precision="int8", source_shortlist=tmp_path / "small.bin")


def test_bad_options(tiny_export, pairs_tsv, tmp_path, capsys):
    src = tiny_export("base")
    with pytest.raises(QuantizeError, match="exclude each other"):
        quantize(src, tmp_path / "a", precision="int8", source_shortlist=pairs_tsv, shortlist_ids=[5])
    with pytest.raises(QuantizeError, match="needs precision='int8' with embedding='channels'"):
        quantize(src, tmp_path / "b", precision="int4", source_shortlist=pairs_tsv)
    with pytest.raises(QuantizeError, match="is not a file"):
        quantize(src, tmp_path / "c", precision="int8", source_shortlist=tmp_path / "missing.tsv")
    with pytest.raises(QuantizeError, match="shortlist_per_source >= 1"):
        quantize(src, tmp_path / "d", precision="int8", source_shortlist=pairs_tsv, shortlist_per_source=0)
    bad = tmp_path / "bad.tsv"
    bad.write_text("one\ttwo\n\nthree\tfour\tfive\n", "utf-8")
    with pytest.raises(QuantizeError, match="line 3 has 3 TAB-separated fields"):
        quantize(src, tmp_path / "e", precision="int8", source_shortlist=bad)
    corpus_args = ["--shortlist", "5", "--shortlist-corpus", str(pairs_tsv)]
    args = ["quantize", str(src), str(tmp_path / "z"), "--precision", "int8"]
    assert cli_main([*args, *corpus_args, "--source-shortlist", str(pairs_tsv)]) == 2
    assert "--shortlist and --source-shortlist exclude each other" in capsys.readouterr().err
    assert cli_main([*args, "--shortlist-frequent", "50"]) == 2
    assert "tune --source-shortlist FILE; add it" in capsys.readouterr().err
    assert cli_main([*args, "--source-shortlist-corpus", "english"]) == 2
    assert "tune --source-shortlist FILE; add it" in capsys.readouterr().err
    with pytest.raises(QuantizeError, match="source_shortlist_corpus must be one of pairs, english"):
        quantize(src, tmp_path / "f", precision="int8", source_shortlist=pairs_tsv, source_shortlist_corpus="zh")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", "utf-8")
    with pytest.raises(QuantizeError, match="holds no English sentences"):
        quantize(src, tmp_path / "g", precision="int8", source_shortlist=empty, source_shortlist_corpus="english")


def test_table_from_the_models_own_translations(tiny_export, pairs_tsv, tmp_path):
    """English alone: the pairs are the sentences with the fp32 model's greedy translations, counted as any pairs."""
    src = tiny_export("base")
    english = [line.split("\t")[0] for line in pairs_tsv.read_text("utf-8").splitlines()][:40]
    path = tmp_path / "english.txt"
    path.write_text("\n".join(english) + "\n", "utf-8")
    out = tmp_path / "model"
    args = ["quantize", str(src), str(out), "--precision", "int8", "--source-shortlist", str(path)]
    assert cli_main([*args, "--source-shortlist-corpus", "english", "--shortlist-frequent", "6"]) == 0
    record = Manifest.load(out).quantization["source_shortlist"]
    assert record["corpus"]["name"] == "english.txt (English, translated by the model, greedy)"
    assert record["corpus"]["pairs"] == 40
    pairs = list(zip(english, Translator.load(src).translate(english, beam_size=1), strict=True))
    want = lexical_table(src, pairs, frequent=6, per_source=20)
    got = LexicalTable.from_bytes((out / TABLE_FILE).read_bytes(), "table")
    assert [a.tolist() for a in got.arrays()] == [a.tolist() for a in want.arrays()]


def test_runtime_needs_no_onnx():
    """The runtime side (table, candidates, sessions) imports numpy and onnxruntime only."""
    code = (
        "import sys, enzh.runtime.candidates, enzh.runtime.sessions\n"
        "bad = [m for m in ('onnx', 'torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_compare_logits_measures_a_source_aware_variant(source_aware, tiny_export, tmp_path):
    """Differences are taken over each batch's scored tokens (the unscored ones are -inf in the variant): the
    int8 error of the same columns, about that of the plain int8 variant."""
    from enzh.quantize.compare import compare_logits

    plain = tmp_path / "int8"
    quantize(tiny_export("base"), plain, precision="int8")
    result = compare_logits(tiny_export("base"), source_aware, sequences=20, batch_size=5)
    int8 = compare_logits(tiny_export("base"), plain, sequences=20, batch_size=5)
    assert result.positions == int8.positions == 20 * 12
    assert np.isfinite(result.max_abs_diff) and 0.5 * int8.mean_abs_diff < result.mean_abs_diff < 2 * int8.mean_abs_diff
