"""SRT and WebVTT on the demo model: numbers, timings, settings and NOTE/STYLE blocks byte for byte."""

from __future__ import annotations

import io

import pytest

from enzh.documents.api import translate_document
from enzh.runtime.translator import Translator

SRT = (
    "1\r\n00:00:01,000 --> 00:00:02,500\r\nThe weather is nice today.\r\n<i>I would like a cup of coffee.</i>\r\n\r\n"
    "2\r\n00:00:03,000 --> 00:00:04,000 X1:10 X2:20\r\n{\\an8}My bicycle was stolen\r\n\r\n"
    "3\r\n00:00:04,000 --> 00:00:05,000\r\nlast night.\r\n\r\n"
    "4\r\n00:00:05,000 --> 00:00:06,000\r\n- Where is the school?\r\n- Is my son resting?\r\n\r\n"
    "5\r\n00:00:06,000 --> 00:00:07,000\r\n我想要一杯咖啡。\r\n\r\n"
    "6\r\n00:00:07,000 --> 00:00:08,000\r\n<b>He owes the students 50 yuan.\r\n"
)
SRT_EXPECTED = (
    "1\r\n00:00:01,000 --> 00:00:02,500\r\n今天天气很好。\r\n<i>我想要一杯咖啡。</i>\r\n\r\n"
    "2\r\n00:00:03,000 --> 00:00:04,000 X1:10 X2:20\r\n{\\an8}我的自行车\r\n\r\n"
    "3\r\n00:00:04,000 --> 00:00:05,000\r\n昨天晚上被偷走了。\r\n\r\n"
    "4\r\n00:00:05,000 --> 00:00:06,000\r\n- 学校在哪里？\r\n- 我儿子在休息吗？\r\n\r\n"
    "5\r\n00:00:06,000 --> 00:00:07,000\r\n我想要一杯咖啡。\r\n\r\n"
    "6\r\n00:00:07,000 --> 00:00:08,000\r\n<b>他欠学生们50元。\r\n"
)
VTT = (
    "WEBVTT - The weather is nice today.\n\nNOTE Where is the school?\nIs my son resting?\n\n"
    "STYLE\n::cue { color: yellow }\n\n"
    "intro\n00:00:01.000 --> 00:00:02.000 align:start position:10%\n<v Roger>Anna goes to the station every day.\n\n"
    "00:02.000 --> 00:03.000\n<c.loud>Where is the school?</c> I would like a glass of wine.\n\n"
    "00:03.000 --> 00:04.000\nThe meeting has been\n\n"
    "00:04.000 --> 00:05.000\npostponed.\n\n"
    "NOTE a note between cues keeps them apart\n\n"
    "00:05.000 --> 00:06.000\nMy bicycle was stolen\nlast night.\n"
)
VTT_EXPECTED = (
    "WEBVTT - The weather is nice today.\n\nNOTE Where is the school?\nIs my son resting?\n\n"
    "STYLE\n::cue { color: yellow }\n\n"
    "intro\n00:00:01.000 --> 00:00:02.000 align:start position:10%\n<v Roger>安娜每天去车站。\n\n"
    "00:02.000 --> 00:03.000\n<c.loud>学校在哪里？</c>我想要一杯葡萄酒。\n\n"
    "00:03.000 --> 00:04.000\n会议已被\n\n"
    "00:04.000 --> 00:05.000\n推迟。\n\n"
    "NOTE a note between cues keeps them apart\n\n"
    "00:05.000 --> 00:06.000\n我的自行车昨天晚上\n被偷走了。\n"
)


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def test_srt_exact_output_and_cues_parse_the_same(translator):
    srt = pytest.importorskip("srt")
    out = translate_document(translator, SRT, format="srt", beam_size=1)
    assert out == SRT_EXPECTED
    before, after = list(srt.parse(SRT)), list(srt.parse(out))
    assert [(s.index, s.start, s.end, s.proprietary) for s in after] == [
        (s.index, s.start, s.end, s.proprietary) for s in before
    ]
    assert [s.content.count("\n") for s in after] == [s.content.count("\n") for s in before]


def test_vtt_exact_output_and_cues_parse_the_same(translator):
    webvtt = pytest.importorskip("webvtt")
    out = translate_document(translator, VTT, format="vtt", beam_size=1)
    assert out == VTT_EXPECTED
    before, after = webvtt.from_buffer(io.StringIO(VTT)), webvtt.from_buffer(io.StringIO(out))
    assert [(c.identifier, c.start, c.end, c.voice) for c in after.captions] == [
        (c.identifier, c.start, c.end, c.voice) for c in before.captions
    ]
    assert [s.text for s in after.styles] == [s.text for s in before.styles]


def test_a_sentence_over_two_cues_is_translated_whole(translator):
    calls: list[list[str]] = []

    def spy(sentences: list[str]) -> list[str]:
        calls.append(sentences)
        return translator.translate(sentences, beam_size=1)

    from enzh.documents.inline import translate_blocks
    from enzh.documents.subtitles import SRT as FORMAT

    units = FORMAT.read(
        "1\n00:00:01,000 --> 00:00:02,000\nMy bicycle was stolen\n\n2\n00:00:02,000 --> 00:00:03,000\nlast night.\n"
    )
    assert [b.text for b in units.blocks] == ["My bicycle was stolen last night."]
    translate_blocks(units.blocks, spy)
    assert "My bicycle was stolen last night." in calls[0]


@pytest.mark.parametrize("fmt", ["srt", "vtt"])
def test_empty_and_untranslatable_subtitles_are_unchanged(translator, fmt):
    header = "WEBVTT\n\n" if fmt == "vtt" else ""
    for source in ("", header, header + "1\n00:00:01,000 --> 00:00:02,000\n♪♪\n\n2\n00:00:02,000 --> 00:00:03,000\n"):
        assert translate_document(translator, source, format=fmt, beam_size=1) == source
