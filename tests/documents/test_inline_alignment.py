"""Alignments from the demo model's aligner graph (enzh.documents.alignment): pieces and their character ranges,
pairs that cannot be aligned, a model directory without the aligner, and the document path using it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import sentencepiece

from enzh.documents.alignment import ModelAligner
from enzh.documents.api import translate_document
from enzh.documents.inline import Block, Mark, translate_blocks
from enzh.documents.options import DocumentOptions
from enzh.documents.sentences import SentenceEngine
from enzh.runtime.pieces import pieces_with_spans as _pieces
from enzh.runtime.pieces import proto_pieces as _proto_pieces
from enzh.runtime.translator import Translator


@pytest.fixture(scope="module")
def demo(demo_dir) -> Translator:
    return Translator.load(demo_dir)


@pytest.fixture(scope="module")
def old_demo(demo_dir, tmp_path_factory) -> Translator:
    """The demo model as a directory exported before the aligner existed."""
    copy = tmp_path_factory.mktemp("demo-without-aligner")
    shutil.copytree(demo_dir, copy, dirs_exist_ok=True)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    del manifest["graphs"]["aligner"], manifest["files"]["aligner.onnx"], manifest["alignment"]
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (copy / "aligner.onnx").unlink()
    return Translator.load(copy)


def test_pieces_carry_their_character_ranges(demo_dir):
    target = sentencepiece.SentencePieceProcessor(model_file=str(demo_dir / "target.spm"))
    text = "他说，你好。ＡＢ 4点"
    pieces = _pieces(target, text)
    assert pieces is not None
    assert [p for p, _ in pieces] == target.encode(text, out_type=str)
    assert [text[a:b] for _, (a, b) in pieces] == ["他", "说", "，", "你", "好", "。", "ＡＢ", "", "4", "点"]
    source = sentencepiece.SentencePieceProcessor(model_file=str(demo_dir / "source.spm"))
    sentence = "Paul arrived in Guangzhou."
    spans = [sentence[a:b] for _, (a, b) in _pieces(source, sentence) or []]
    assert spans == ["Paul", "arrive", "d", "in", "Guangzhou", "."]  # a word-initial piece's space left out
    assert _pieces(source, "lone \ud83d surrogate") is None


def test_the_wire_format_reader_agrees_with_protobuf(demo_dir):
    pytest.importorskip("google.protobuf")
    source = sentencepiece.SentencePieceProcessor(model_file=str(demo_dir / "source.spm"))
    text = "Where is the school? 50 yuan, naïve café."
    parsed = source.encode(text, out_type="proto")
    expected = [(p.piece, p.begin, p.end) for p in parsed.pieces]
    assert _proto_pieces(source.encode(text, out_type="serialized_proto")) == expected


def test_alignments_of_the_demo_model(demo):
    sentence, translation = "They are buying that bottle of beer now.", "他们现在在买那瓶啤酒。"
    [alignment] = ModelAligner(demo)([(sentence, translation)])
    assert alignment is not None
    assert alignment.weights.shape == (len(alignment.target), len(alignment.source))
    np.testing.assert_allclose(alignment.weights.sum(axis=1), 1.0)
    assert "".join(sentence[a:b] for a, b in alignment.source) == sentence.replace(" ", "")
    assert "".join(translation[a:b] for a, b in alignment.target) == translation
    beer = next(s for s, (a, b) in enumerate(alignment.source) if sentence[a:b] == "beer")
    best = int(np.argmax(alignment.weights[:, beer]))
    assert translation[slice(*alignment.target[best])] in "啤酒"


def test_pairs_that_cannot_be_aligned_get_none(demo, old_demo):
    aligner = ModelAligner(demo)
    pairs = [("Tea </s> now.", "茶。"), ("Tea.", ""), ("Tea \ud83d.", "茶。"), ("Tea " * 600, "茶。"), ("Tea.", "茶。")]
    found = aligner(pairs)
    assert found[:4] == [None, None, None, None] and found[4] is not None
    assert ModelAligner(old_demo)([("Tea.", "茶。")]) == [None]


def test_a_directory_without_the_aligner_places_as_without_attention(demo, old_demo):
    text = "He ordered six cups of coffee last year. They are buying that bottle of beer now."
    block = Block(text, (Mark(11, 29, "b"), Mark(57, 76, "a"), Mark(72, 76, "i")))
    options = DocumentOptions(format="html", beam_size=1)
    [old] = translate_blocks([block], SentenceEngine(old_demo, options))
    [plain] = translate_blocks([block], SentenceEngine(demo, options), attention=False)
    [aligned] = translate_blocks([block], SentenceEngine(demo, options))
    assert old == plain and plain.placement == ("sure", "sure", "unit")
    assert aligned.placement == ("sure", "sure", "aligned")
    assert [aligned.text[m.start : m.end] for m in aligned.marks] == ["六杯咖啡", "那瓶啤酒", "啤酒"]


def test_documents_place_their_tags_by_attention(demo):
    html = "<p>They are buying that bottle of <b>beer</b> now.</p><p>This piece of <b>cake</b> is cheap.</p>"
    out = translate_document(demo, html, format="html", beam_size=1)
    assert out.startswith("<p>他们现在在买那瓶<b>啤酒</b>。</p>")
    markdown = translate_document(demo, "They are buying that bottle of **beer** now.\n", format="md", beam_size=1)
    assert markdown == "他们现在在买那瓶**啤酒**。\n"
