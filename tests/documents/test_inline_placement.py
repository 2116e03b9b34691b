"""Placement of inline marks (enzh.documents.inline): the guarantees on random nested marks (hypothesis), and the
rules one by one with a scripted translator (no model)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enzh.documents.inline import Block, Mark, TranslatedBlock, lost_marks, mark_parents, translate_blocks
from enzh.documents.markup import Tag, render
from enzh.documents.placement import Alignment, attended, is_boundary


@dataclass(frozen=True)
class Named:
    """A tag with an explicit parent, like markup.Tag: ``parent`` None = top level."""

    name: str
    parent: int | None


def scripted(table: dict[str, str]):
    """A translator that answers from ``table`` and records what it was asked."""
    asked: list[list[str]] = []

    def translate(texts: list[str]) -> list[str]:
        asked.append(list(texts))
        return [table.get(t, "？") for t in texts]

    translate.asked = asked  # type: ignore[attr-defined]
    return translate


def with_aligner(translate, alignments: dict[tuple[str, str], Alignment]):
    """``translate`` with the aligner protocol's ``align``: the alignments of ``alignments``, None for others."""
    asked: list[list[tuple[str, str]]] = []

    def align(pairs: list[tuple[str, str]]) -> list[Alignment | None]:
        asked.append(list(pairs))
        return [alignments.get(pair) for pair in pairs]

    translate.align = align  # type: ignore[attr-defined]
    translate.aligned = asked  # type: ignore[attr-defined]
    return translate


def word_alignment(source: list[tuple[int, int]], target: list[tuple[int, int]], links: dict[int, int]) -> Alignment:
    """Pieces at the given character ranges; target piece t attends only to source piece links[t] (uniform
    attention over all source pieces for a target piece without a link)."""
    weights = np.full((len(target), len(source)), 1 / len(source))
    for t, s in links.items():
        weights[t] = 0.0
        weights[t, s] = 1.0
    return Alignment(tuple(source), tuple(target), weights)


def spans(result: TranslatedBlock) -> list[str]:
    return [result.text[m.start : m.end] for m in result.marks]


def check_tree(result: TranslatedBlock, parents: list[int]) -> None:
    """Every mark inside its parent, after its previous sibling, on safe boundaries."""
    last_end: dict[int, int] = {}
    for i, (mark, p) in enumerate(zip(result.marks, parents, strict=True)):
        lo, hi = (0, len(result.text)) if p < 0 else (result.marks[p].start, result.marks[p].end)
        assert lo <= mark.start <= mark.end <= hi, (i, mark, lo, hi)
        assert mark.start >= last_end.get(p, lo), (i, mark)
        last_end[p] = mark.end
        assert is_boundary(result.text, mark.start) and is_boundary(result.text, mark.end), (result.text, mark)


# -- the rules ----------------------------------------------------------------------------------------------


def test_a_mark_over_the_whole_sentence_wraps_its_whole_translation_without_asking_for_it():
    translate = scripted({"Where is the school?": "学校在哪里？"})
    [result] = translate_blocks([Block("Where is the school?", (Mark(0, 20, "b"),))], translate)
    assert spans(result) == ["学校在哪里？"] and result.placement == ("sure",)
    assert translate.asked == [["Where is the school?"]]


def test_a_mark_over_all_but_the_final_punctuation_leaves_it_out():
    translate = scripted({"Where is the school?": "学校在哪里？"})
    [result] = translate_blocks([Block("Where is the school?", (Mark(0, 19, "a"),))], translate)
    assert spans(result) == ["学校在哪里"] and result.placement == ("sure",)


def test_an_anchor_found_exactly_once_places_the_mark_and_is_asked_in_the_same_batch():
    translate = scripted({"He ordered six cups of coffee.": "他点了六杯咖啡。", "six cups of coffee.": "六杯咖啡。"})
    [result] = translate_blocks([Block("He ordered six cups of coffee.", (Mark(11, 29, "b"),))], translate)
    assert spans(result) == ["六杯咖啡"] and result.placement == ("sure",)
    assert translate.asked == [["He ordered six cups of coffee.", "six cups of coffee."]]


def test_an_anchor_found_twice_is_not_sure_and_the_mark_wraps_its_unit():
    translate = scripted({"Tea and tea.": "茶和茶。", "tea.": "茶。"})
    [result] = translate_blocks([Block("Tea and tea.", (Mark(8, 11, "i"),))], translate)
    assert spans(result) == ["茶和茶"] and result.placement == ("unit",)


def test_names_and_numbers_are_found_as_written():
    translate = scripted({"There are 28 books.": "有28本书。"})
    [result] = translate_blocks([Block("There are 28 books.", (Mark(10, 12, "b"),))], translate)
    assert spans(result) == ["28"] and result.placement == ("sure",)
    assert translate.asked == [["There are 28 books."]]  # no letter in the span: nothing to translate for it


def test_reordered_siblings_keep_the_source_order_the_longer_anchor_wins():
    # Chinese puts the time first; the tags must stay in source order, so only one can be on its words.
    table = {
        "He ordered six cups of coffee last year.": "他去年点了六杯咖啡。",
        "six cups of coffee.": "六杯咖啡。",
        "last year.": "去年。",
    }
    block = Block("He ordered six cups of coffee last year.", (Mark(11, 29, "b"), Mark(30, 39, "i")))
    [result] = translate_blocks([block], scripted(table), fallback=False)
    assert spans(result) == ["六杯咖啡", ""]
    assert result.placement == ("sure", "empty")  # its words are known to be elsewhere: it wraps nothing


def test_a_mark_that_lost_its_words_gets_its_own_part_translated_on_its_own():
    # The fallback: the sentence is cut at the lost mark's edges ("." stays with it) and the parts translated in
    # one more call; the first part's final stop is dropped, the other mark is placed on its part by its anchor.
    table = {
        "He ordered six cups of coffee last year.": "他去年点了六杯咖啡。",
        "six cups of coffee.": "六杯咖啡。",
        "last year.": "去年。",
        "He ordered six cups of coffee.": "他点了六杯咖啡。",  # a part is given a period, as an anchor is
    }
    block = Block("He ordered six cups of coffee last year.", (Mark(11, 29, "b"), Mark(30, 39, "i")))
    translate = scripted(table)
    [result] = translate_blocks([block], translate)
    assert result.text == "他点了六杯咖啡去年。"
    assert spans(result) == ["六杯咖啡", "去年"] and result.placement == ("sure", "own")
    assert translate.asked[1] == ["He ordered six cups of coffee.", "last year.", "six cups of coffee."]
    assert lost_marks(block, result) == []


def test_a_part_whose_translation_has_no_word_left_is_kept_as_written():
    # The sentence comes back as punctuation only: the mark has no unit it may wrap (a gap of punctuation), so it
    # lost its words; its part "Tom" is answered with punctuation only too, and is then kept as written.
    table = {"Anna met Tom today.": "！。", "Anna met.": "安娜见了。", "Tom.": "！", "today.": "今天。"}
    block = Block("Anna met Tom today.", (Mark(9, 12, "b"),))
    [result] = translate_blocks([block], scripted(table))
    assert result.text == "安娜见了Tom 今天。"  # a part left in Latin script keeps its space
    assert spans(result) == ["Tom"] and result.placement == ("own",)
    [without] = translate_blocks([block], scripted(table), fallback=False)
    assert without.placement == ("empty",) and lost_marks(block, without) == [0]


def test_lost_means_no_letter_or_digit_left_and_a_verbatim_child_keeps_its_parent():
    block = Block("See the docs now.", (Mark(4, 12, "a"),))
    assert lost_marks(block, TranslatedBlock("现在看。", (Mark(3, 4, "a"),))) == [0]  # only "。": no words
    assert lost_marks(block, TranslatedBlock("现在看。", (Mark(2, 3, "a"),))) == []
    code = Tag("code", verbatim="`bat`", parent=0)
    with_code = Block("See `bat` now.", (Mark(4, 7, Tag("a")), Mark(4, 7, code)))
    placed = TranslatedBlock("现在看。", (Mark(2, 2, Tag("a")), Mark(2, 2, code)))
    assert lost_marks(with_code, placed) == []  # the link holds the code, which is written verbatim inside it


def test_a_point_after_the_last_sentence_goes_after_its_line_break():
    # An end tag after a paragraph's last line (Markdown "_world_.\n</pre>"): after the newline, not before it.
    block = Block("Where is the school?\n", (Mark(21, 21, Tag("pre", verbatim="</pre>")),))
    [result] = translate_blocks([block], scripted({"Where is the school?": "学校在哪里？"}))
    assert result.text == "学校在哪里？\n" and (result.marks[0].start, result.marks[0].end) == (7, 7)


def test_siblings_without_anchors_the_longest_takes_the_unit_the_other_is_written_empty():
    translate = scripted({"Germany is bigger than Italy.": "德国比意大利大。"})
    block = Block("Germany is bigger than Italy.", (Mark(0, 7, "b"), Mark(23, 28, "i")))
    [result] = translate_blocks([block], translate, anchors=False, fallback=False)
    assert spans(result) == ["德国比意大利大", ""] and result.placement == ("unit", "empty")


def test_nested_marks_stay_nested():
    table = {
        "They are buying that bottle of beer now.": "他们现在在买那瓶啤酒。",
        "that bottle of beer.": "那瓶啤酒。",
        "beer.": "啤酒。",
    }
    block = Block("They are buying that bottle of beer now.", (Mark(16, 35, "b"), Mark(31, 35, "i")))
    [result] = translate_blocks([block], scripted(table))
    assert spans(result) == ["那瓶啤酒", "啤酒"] and result.placement == ("sure", "sure")


def test_a_mark_across_two_sentences_runs_from_the_first_to_the_second():
    table = {"Where is the school?": "学校在哪里？", "They have drunk juice.": "他们喝过果汁。"}
    text = "Where is the school? They have drunk juice."
    [result] = translate_blocks([Block(text, (Mark(0, len(text), "all"), Mark(9, 37, "x")))], scripted(table))
    assert result.text == "学校在哪里？他们喝过果汁。"
    assert spans(result)[0] == result.text
    assert result.marks[1].start < 6 < result.marks[1].end  # x starts in the first sentence, ends in the second


def test_text_left_as_it_is_keeps_its_marks_where_they_were():
    [result] = translate_blocks([Block("你好，世界", (Mark(3, 5, "b"),))], scripted({}))
    assert result.text == "你好，世界" and spans(result) == ["世界"]


def test_a_verbatim_mark_goes_on_its_text_or_becomes_a_point():
    code = Tag("code", verbatim="<code>ls</code>")
    table = {"Run ls now.": "现在运行ls。", "Run ls please.": "请运行。"}
    found, missing = translate_blocks(
        [Block("Run ls now.", (Mark(4, 6, code),)), Block("Run ls please.", (Mark(4, 6, code),))], scripted(table)
    )
    assert spans(found) == ["ls"] and found.placement == ("sure",)
    assert spans(missing) == [""] and missing.placement == ("point",)  # never swallows translated words


def test_zero_width_marks_at_a_boundary_follow_their_explicit_parent():
    table = {"Hi there.": "你好。"}
    inside = (Mark(0, 8, Named("b", None)), Mark(8, 8, Named("x", 0)))  # <b>Hi there<x/></b>.
    after = (Mark(0, 8, Named("b", None)), Mark(8, 8, Named("x", None)))  # <b>Hi there</b><x/>.
    assert mark_parents(inside) == [-1, 0] and mark_parents(after) == [-1, -1]
    for marks in (inside, after):
        [result] = translate_blocks([Block("Hi there.", marks)], scripted(table))
        check_tree(result, mark_parents(marks))


def test_an_empty_block_and_a_blank_one():
    empty, blank = translate_blocks([Block(""), Block("  ", (Mark(1, 1, "p"),))], scripted({}))
    assert empty == TranslatedBlock("", (), ())
    assert blank.text == "  " and len(blank.marks) == 1


def test_boundaries_never_split_a_surrogate_pair_or_a_combining_sequence():
    text = "e\u0301\ud83d\ude00x"  # é as e + combining acute, 😀 as a UTF-16 surrogate pair
    assert [is_boundary(text, i) for i in range(len(text) + 1)] == [True, False, True, False, True, True]


def test_attended_is_the_run_of_target_pieces_attending_to_the_span():
    # "He ordered six cups of coffee." / 他 点了 六杯 咖啡 。
    source = [(0, 2), (3, 10), (11, 14), (15, 19), (20, 22), (23, 29), (29, 30)]
    target = [(0, 1), (1, 3), (3, 5), (5, 7), (7, 8)]
    alignment = word_alignment(source, target, {0: 0, 1: 1, 2: 2, 3: 5, 4: 6})
    assert attended(alignment, 11, 29, 8) == (3, 7)  # six .. coffee -> 六杯咖啡
    assert attended(alignment, 0, 2, 8) == (0, 1)
    assert attended(alignment, 15, 22, 8) is None  # cups of: no target piece attends to them enough
    assert attended(alignment, 11, 29, 6) == (3, 5)  # pieces past the translation's end are ignored


def test_without_an_anchor_the_mark_goes_on_the_aligned_words():
    sentence, output = "He ordered six cups of coffee.", "他点了六杯咖啡。"
    source = [(0, 2), (3, 10), (11, 14), (15, 19), (20, 22), (23, 29), (29, 30)]
    target = [(0, 1), (1, 3), (3, 5), (5, 7), (7, 8)]
    alignment = word_alignment(source, target, {0: 0, 1: 1, 2: 2, 3: 5, 4: 6})
    translate = with_aligner(scripted({sentence: output}), {(sentence, output): alignment})
    [result] = translate_blocks([Block(sentence, (Mark(11, 29, "b"),))], translate)  # "six cups of coffee." -> ？
    assert spans(result) == ["六杯咖啡"] and result.placement == ("aligned",)
    assert translate.aligned == [[(sentence, output)]]  # one call for every sentence with a mark to place
    [result] = translate_blocks([Block(sentence, (Mark(11, 29, "b"),))], translate, attention=False)
    assert spans(result) == ["他点了六杯咖啡"] and result.placement == ("unit",)
    assert len(translate.aligned) == 1


def test_an_aligned_range_never_displaces_an_anchor():
    # The anchor of "last year" holds; the aligned range of the coffee comes after it in the translation but
    # before it in the source, so keeping both would change the tag order: the anchor stays, the other is empty.
    sentence, output = "He ordered six cups of coffee last year.", "他去年点了六杯咖啡。"
    source = [(0, 2), (3, 10), (11, 14), (15, 19), (20, 22), (23, 29), (30, 34), (35, 39), (39, 40)]
    target = [(0, 1), (1, 3), (3, 5), (5, 7), (7, 9), (9, 10)]
    alignment = word_alignment(source, target, {0: 0, 1: 7, 2: 1, 3: 2, 4: 5, 5: 8})
    table = {sentence: output, "last year.": "去年。"}
    translate = with_aligner(scripted(table), {(sentence, output): alignment})
    block = Block(sentence, (Mark(11, 29, "b"), Mark(30, 39, "i")))
    [result] = translate_blocks([block], translate, fallback=False)
    assert spans(result) == ["", "去年"] and result.placement == ("empty", "sure")


def test_sentences_without_marks_to_align_are_not_sent_to_the_aligner():
    translate = with_aligner(
        scripted({"Where is the school?": "学校在哪里？", "There are 28 books.": "有28本书。"}), {}
    )
    blocks = [Block("Where is the school?", (Mark(0, 20, "b"),)), Block("Where is the school?"), Block("")]
    translate_blocks(blocks, translate)
    assert translate.aligned == []  # whole-sentence marks have sure ranges, and align is not called for nothing
    [result] = translate_blocks([Block("There are 28 books.", (Mark(10, 12, "b"),))], translate)
    assert spans(result) == ["28"] and result.placement == ("sure",)  # no alignment (None): the anchor still holds


def test_translate_must_answer_every_input():
    with pytest.raises(ValueError, match="2 inputs"):
        translate_blocks([Block("Where is the school?", (Mark(9, 19, "b"),))], lambda texts: ["x"])


# -- the guarantees, on random input -----------------------------------------------------------------------

ALPHABET = st.sampled_from([*"ab cd.?,", "\u0301", "\u200d", "\ud83d", "\ude00", "学", "。"])


WORDY = st.sampled_from([*"abcd  ab.", "\u0301", "\ud83d", "\ude00", "学"])  # mostly words: marks with text to align


@st.composite
def blocks_with_marks(draw, alphabet=ALPHABET, wide=False):
    text = draw(st.text(alphabet, max_size=40))
    marks: list[Mark] = []
    explicit = draw(st.booleans())

    def fill(lo: int, hi: int, parent: int | None, depth: int) -> None:
        position = lo
        for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
            if position > hi:
                break
            start = draw(st.integers(position, hi))
            end = draw(st.integers(min(start + wide, hi), hi))  # wide: a mark has text when it can
            index = len(marks)
            marks.append(Mark(start, end, Named(f"t{index}", parent) if explicit else f"t{index}"))
            fill(start, end, index, depth + 1)
            position = end + (0 if explicit else 1)  # inferred nesting needs a gap to tell siblings apart

    fill(0, len(text), None, 0)
    return Block(text, tuple(marks))


def random_alignment(data, sentence: str, translation: str) -> Alignment | None:
    """Any alignment: pieces that tile the text or fall anywhere (overlapping, empty, past the end), random
    attention (rows need not sum to 1)."""
    if not data.draw(st.integers(0, 3), label="aligned"):
        return None

    def pieces(text: str) -> tuple[tuple[int, int], ...]:
        if data.draw(st.booleans(), label="tiling"):
            cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=8))) | {0, len(text)})
            return tuple(itertools.pairwise(cuts)) or ((0, 0),)
        bound = len(text) + 2
        spans = st.tuples(st.integers(0, bound), st.integers(0, bound))
        return tuple(data.draw(st.lists(spans, min_size=1, max_size=8), label=f"pieces of {text!r}"))

    source, target = pieces(sentence), pieces(translation)
    values = st.floats(0, 1, allow_nan=False)
    rows = data.draw(
        st.lists(
            st.lists(values, min_size=len(source), max_size=len(source)), min_size=len(target), max_size=len(target)
        )
    )
    return Alignment(source, target, np.asarray(rows, dtype=np.float64))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=blocks_with_marks(), data=st.data())
def test_every_mark_once_in_order_nested_on_safe_boundaries(block, data):
    def translate(texts: list[str]) -> list[str]:
        # any answer: echoes, pieces of the source (so anchors are found), combining marks, surrogates
        return [data.draw(st.one_of(st.just(t), st.text(ALPHABET, max_size=20)), label=t) for t in texts]

    def align(pairs: list[tuple[str, str]]) -> list[Alignment | None]:
        return [random_alignment(data, sentence, translation) for sentence, translation in pairs]

    if data.draw(st.integers(0, 3), label="with an aligner"):
        translate.align = align  # type: ignore[attr-defined]
    [result] = translate_blocks([block], translate)
    parents = mark_parents(block.marks)
    assert len(result.marks) == len(block.marks) and len(result.placement) == len(block.marks)
    assert [m.tag for m in result.marks] == [m.tag for m in block.marks]
    check_tree(result, parents)
    if all(isinstance(m.tag, Named) for m in block.marks):
        # written out as tags: the same sequence of tags as the source, each exactly once
        tags = tuple(
            Mark(m.start, m.end, Tag("t", f"<{i}>", f"</{i}>", m.tag.parent)) for i, m in enumerate(block.marks)
        )
        source = render(Block(block.text, tags), TranslatedBlock(block.text, tags))
        output = render(
            Block(block.text, tags),
            TranslatedBlock(
                result.text, tuple(Mark(m.start, m.end, t.tag) for m, t in zip(result.marks, tags, strict=True))
            ),
        )
        assert re.findall(r"</?\d+>", output) == re.findall(r"</?\d+>", source)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=blocks_with_marks(WORDY, wide=True), data=st.data())
def test_aligned_marks_keep_the_guarantees(block, data):
    """The same guarantees with an aligner on every sentence, on text that is mostly words (more aligned marks)."""

    def translate(texts: list[str]) -> list[str]:
        return [data.draw(st.text(ALPHABET, min_size=1, max_size=20), label=t) for t in texts]

    translate.align = lambda pairs: [random_alignment(data, s, t) for s, t in pairs]  # type: ignore[attr-defined]
    [result] = translate_blocks([block], translate)
    assert [m.tag for m in result.marks] == [m.tag for m in block.marks]
    check_tree(result, mark_parents(block.marks))


def test_a_name_is_found_only_as_a_whole_word():
    translate = scripted({"Give Al the book.": "把书给Alan和Al。"})
    [result] = translate_blocks([Block("Give Al the book.", (Mark(5, 7, "b"),))], translate)
    assert spans(result) == ["Al"] and result.marks[0].start == 8 and result.placement == ("sure",)
