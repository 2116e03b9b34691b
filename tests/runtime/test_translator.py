"""Translator behaviour: input handling, language token, long input splitting, batching, output bound."""

from __future__ import annotations

import pytest

from enzh import Translator
from enzh.runtime.batching import length_groups, plan_batches
from enzh.runtime.segment import clean_text, split_sentences
from enzh.runtime.translator import default_max_new_tokens

from models import WORDS


@pytest.fixture(scope="module")
def translator(tiny_export):
    return Translator.load(tiny_export("base"))


def test_empty_and_blank_inputs(translator):
    out = translator.translate(["", "   ", "\n\t", "cat"], max_new_tokens=5)
    assert out[:3] == ["", "   ", "\n\t"]  # blank text comes back as sent (layout is kept), never translated
    assert translator.translate_detailed(["  "])[0].parts == 0
    assert translator.translate([]) == []


def test_type_errors_name_the_position(translator):
    with pytest.raises(TypeError, match=r"texts\[2\] must be str, got int"):
        translator.translate(["a", "b", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"got a single str; wrap it: translate\(\[text\]\)"):
        translator.translate("hello")
    with pytest.raises(TypeError, match="texts must be a list of strings, got NoneType"):
        translator.translate(None)  # type: ignore[arg-type]


def test_language_token_added_once(translator):
    tok = translator.tokenizer
    hans, hant = tok.token_to_id(">>cmn_Hans<<"), tok.token_to_id(">>cmn_Hant<<")
    adapter = translator.adapter
    assert tok.encode(adapter.with_language_token("the cat", ">>cmn_Hans<<"))[0] == hans
    already = adapter.with_language_token(">>cmn_Hant<< the cat", ">>cmn_Hans<<")
    assert already == ">>cmn_Hant<< the cat"
    assert tok.encode(already).count(hant) == 1 and hans not in tok.encode(already)
    # Marian only honours a token at position 0: leading spaces are removed rather than adding a second token.
    assert adapter.with_language_token("  >>cmn_Hant<< x", ">>cmn_Hans<<") == ">>cmn_Hant<< x"


def test_target_option(translator):
    a = translator.translate_detailed(["the cat"], target="zh-Hant", max_new_tokens=6)
    b = translator.translate_detailed([">>cmn_Hant<< the cat"], max_new_tokens=6)
    c = translator.translate_detailed(["the cat"], target=">>cmn_Hant<<", max_new_tokens=6)
    assert a[0].token_ids == b[0].token_ids == c[0].token_ids
    with pytest.raises(ValueError, match="unknown target 'fr'; accepted: .*zh-Hans.*zh-Hant"):
        translator.translate(["x"], target="fr")


def test_long_input_is_split_and_every_part_translated(translator):
    sentence = " ".join(WORDS[:40]) + "."
    text = " ".join([sentence] * 30)  # far beyond 256 positions
    assert len(translator.tokenizer.encode(text)) > 5 * translator.adapter.max_positions
    result = translator.translate_detailed([text], max_new_tokens=4)[0]
    parts = translator._encode_parts(text, ">>cmn_Hans<<")
    assert result.parts == len(parts) > 5
    assert all(len(p) <= translator.adapter.max_positions for p in parts)
    # Nothing is dropped: the parts hold every source piece of the text.
    pieces = [p for part in parts for p in part if p not in (0, translator.tokenizer.token_to_id(">>cmn_Hans<<"))]
    assert len(pieces) == len(translator.tokenizer.encode(text)) - 1


def test_one_endless_sentence_is_windowed(translator):
    text = " ".join(WORDS * 12)  # no sentence end at all
    parts = translator._encode_parts(text, ">>cmn_Hans<<")
    assert len(parts) > 1 and all(len(p) <= translator.adapter.max_positions for p in parts)
    assert translator.translate_detailed([text], max_new_tokens=3)[0].parts == len(parts)


def test_unicode_edge_cases_do_not_crash(translator):
    texts = [
        "\ud800 lone surrogate",
        "emoji 👩‍👩‍👧 🎉",
        "zero\u200bwidth",
        "NUL\x00byte",
        "עברית",
        "全角，标点。",
        "e\u0301",
    ]
    out = translator.translate(texts, max_new_tokens=4)
    assert len(out) == len(texts) and all(isinstance(o, str) for o in out)
    assert clean_text("a\ud800b") == "a\ufffdb"


def test_default_output_bound(translator):
    """Without max_new_tokens the output length is bounded by the source length, never 'until 512'."""
    assert default_max_new_tokens(5, 511) == 32
    assert default_max_new_tokens(20, 511) == 64
    assert default_max_new_tokens(300, 511) == 511
    texts = ["cat"]  # gelu/base random models rarely stop: the bound must stop them
    result = translator.translate_detailed(texts, beam_size=1)[0]
    src_len = len(translator.tokenizer.encode(">>cmn_Hans<< cat"))
    assert len(result.token_ids[0]) <= default_max_new_tokens(src_len, 255)


def test_batch_invariance_of_default_bound(translator):
    texts = [" ".join(WORDS[: n % 37 + 1]) for n in range(0, 200, 7)]
    together = translator.translate_detailed(texts, beam_size=2)
    alone = [translator.translate_detailed([t], beam_size=2)[0] for t in texts]
    assert [t.token_ids for t in together] == [t.token_ids for t in alone]


def test_plan_batches():
    lengths = [5, 50, 7, 50, 3, 8]
    batches = plan_batches(lengths, max_tokens=100, max_batch=3)
    assert sorted(i for b in batches for i in b) == list(range(6))
    assert batches[0] == [1, 3]  # 2 x 50 tokens fill the budget
    assert batches[1] == [5, 2, 0]  # then longest first, at most 3
    assert plan_batches([500], max_tokens=100, max_batch=4) == [[0]]  # too long alone still runs
    grouped = plan_batches([4, 4, 4, 4], max_tokens=100, max_batch=8, group=lambda i: i % 2)
    assert grouped == [[0], [1], [2], [3]]  # keys alternate in length order, so no two may share a batch


def test_length_groups():
    # shortest first; a group ends before a sentence over twice its shortest and more than 8 tokens longer
    assert length_groups([60, 15, 12, 18, 3, 9, 70, 31]) == [[4, 5], [2, 1, 3], [7, 0], [6]]
    assert length_groups([3, 11, 4]) == [[0, 2, 1]]  # 11 is within 8 tokens of 3
    assert length_groups([]) == []


def test_split_sentences():
    assert split_sentences('Hi there. How are you?  "Fine." Go!\n\nNext; done') == [
        "Hi there.",
        "How are you?",
        '"Fine."',
        "Go!",
        "Next; done",  # a semicolon does not end an English sentence
    ]
    assert split_sentences("   ") == []


def test_runtime_options_reach_onnxruntime():
    from enzh.runtime.options import RuntimeOptions
    from enzh.runtime.sessions import session_options

    so = session_options(RuntimeOptions(intra_op_threads=1))
    assert so.intra_op_num_threads == 1 and so.inter_op_num_threads == 1
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spinning = session_options(RuntimeOptions(spin_threads=True))
    assert spinning.get_session_config_entry("session.intra_op.allow_spinning") == "1"
