"""The demo corpus generator, its tokenizers and the shipped demo model directory (fast: no training)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from enzh.demo import HF_MODEL_DIR
from enzh.demo import corpus as c
from enzh.demo import lexicon as lx

MODEL = HF_MODEL_DIR


def P(key: str) -> lx.Person:
    return c.person(key)


def N(key: str) -> lx.Noun:
    return lx.NOUNS_BY_KEY[key]


def T(key: str) -> lx.TimeExpr:
    return lx.TIMES_BY_KEY[key]


def NP(det: str, n: int = 1, adj: lx.Adjective | None = None, owner: lx.Person | None = None) -> dict[str, Any]:
    return {"det": det, "n": n, "adj": adj, "owner": owner}


REQUIRED = [
    (
        "weather",
        {"tense": "pres", "time": T("today"), "adj": lx.ADJECTIVES_BY_KEY["nice/好"], "deg": ""},
        ("The weather is nice today.", "今天天气很好。"),
    ),
    (
        "would_like",
        {"subj": P("I"), "noun": N("cup of coffee"), "form": "stmt", **NP("a")},
        ("I would like a cup of coffee.", "我想要一杯咖啡。"),
    ),
    (
        "event_passive",
        {
            "event": lx.EVENTS_BY_KEY["meeting"],
            "verb": lx.EVENT_VERBS["event"][0],
            "form": "perfect",
            "until": None,
            "agent": None,
        },
        ("The meeting has been postponed.", "会议已被推迟。"),
    ),
]


@pytest.mark.parametrize(("template", "slots", "expected"), REQUIRED, ids=[r[2][0] for r in REQUIRED])
def test_required_sentences_are_in_the_grammar_and_in_training(
    template: str, slots: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert c.render(template, slots) == expected
    assert c.split_of(template, slots) == "train"
    # ... and the template's own sampler draws exactly this sentence.
    rng = random.Random(0)
    drawn = {c.render(template, c.TEMPLATES[template].sample(rng)) for _ in range(20000)}
    assert expected in drawn


def test_deterministic_per_seed_and_split() -> None:
    a = c.generate_pairs(300, seed=5)
    assert a == c.generate_pairs(300, seed=5)
    assert a != c.generate_pairs(300, seed=6)
    t = c.generate_pairs(100, seed=5, split="test")
    assert t == c.generate_pairs(100, seed=5, split="test")
    assert not {en for en, _ in t} & {en for en, _ in a}


def test_no_overlap_between_train_and_test_and_one_translation_per_sentence() -> None:
    train = c.generate_samples(40000, c.DEFAULT_TRAIN_SEED, "train")
    test = c.generate_samples(3000, c.DEFAULT_TEST_SEED, "test", unique=True)
    assert all(c.split_of(s.template, s.slots) == "train" for s in train)
    assert all(c.split_of(s.template, s.slots) == "test" for s in test)
    assert not {s.en for s in train} & {s.en for s in test}
    translations: dict[str, set[str]] = defaultdict(set)
    for s in train + test:
        translations[s.en].add(s.zh)
    assert all(len(zh) == 1 for zh in translations.values())
    # genuinely varied: most training draws are distinct sentences, and every template occurs in both splits
    assert len({s.en for s in train}) > 30000
    assert {s.template for s in train} == {s.template for s in test} == set(c.TEMPLATES)


def test_lexicon_size_and_shape() -> None:
    assert lx.lexicon_size() >= 300
    groups = lx.lexicon()
    assert len(groups["nouns"]) >= 80 and all(n.mw for n in lx.NOUNS)
    assert len(groups["verbs"]) + len(groups["activities"]) >= 60
    for key in ("people", "places", "times", "adjectives"):
        assert len(groups[key]) >= 40, key
    for n in lx.NOUNS:
        assert all(lx.NOUNS_BY_KEY.get(k) or k for k in n.tags)
    for p in lx.PLACES:
        assert all(k in lx.NOUNS_BY_KEY for k in p.contains), p.en


EXPECTED = [
    # dates
    (
        "dates",
        {"form": "born_on", "who": P("Tom"), "date": (2024, 3, 5), "city": None},
        "Tom was born on March 5, 2024.",
        "汤姆出生于2024年3月5日。",
    ),
    (
        "dates",
        {"form": "held_fut", "who": lx.EVENTS_BY_KEY["meeting"], "date": (2025, 10, 21), "city": None},
        "The meeting will be held on October 21, 2025.",
        "会议将于2025年10月21日举行。",
    ),
    (
        "dates",
        {"form": "day_is", "who": "today", "date": (2024, 3, 5), "city": None},
        "Today is March 5, 2024.",
        "今天是2024年3月5日。",
    ),
    # money
    (
        "money",
        {"form": "costs", "who": None, "noun": N("book"), "money": (2500, "yuan", "word"), **NP("this")},
        "This book costs 25 yuan.",
        "这本书25元。",
    ),
    (
        "money",
        {"form": "costs", "who": None, "noun": N("pair of shoes"), "money": (4050, "dollar", "$"), **NP("that")},
        "That pair of shoes costs $40.50.",
        "那双鞋40.50美元。",
    ),
    (
        "money",
        {
            "form": "spent",
            "who": P("she"),
            "noun": N("coat"),
            "money": (120000, "yuan", "word"),
            "time": T("yesterday"),
            **NP("a"),
        },
        "She spent 1,200 yuan on a coat yesterday.",
        "她昨天花1200元买了一件外套。",
    ),
    (
        "money",
        {"form": "how_much", "who": None, "noun": N("umbrella"), "money": None, **NP("this")},
        "How much is this umbrella?",
        "这把伞多少钱？",
    ),
    # clock times
    (
        "clock",
        {"form": "hab", "who": P("I"), "act": lx.ACTIVITIES_BY_KEY["get up"], "clock": (7, 0), "day": None},
        "I get up at 7 a.m. every day.",
        "我每天早上7点起床。",
    ),
    (
        "clock",
        {"form": "now", "who": None, "act": None, "clock": (15, 30), "day": None},
        "It is 3:30 p.m. now.",
        "现在是下午3点30分。",
    ),
    (
        "clock",
        {
            "form": "fut",
            "who": P("we"),
            "act": lx.ACTIVITIES_BY_KEY["have dinner"],
            "clock": (19, 0),
            "day": T("tomorrow"),
        },
        "We will have dinner at 7 p.m. tomorrow.",
        "我们明天晚上7点要吃晚饭。",
    ),
    # passives
    (
        "obj_passive",
        {
            "verb": lx.PASSIVE_BY_KEY["break/打破"],
            "noun": N("window"),
            "form": "agent",
            "agent": P("Tom"),
            "time": None,
            **NP("the"),
        },
        "The window was broken by Tom.",
        "窗户被汤姆打破了。",
    ),
    (
        "obj_passive",
        {
            "verb": lx.PASSIVE_BY_KEY["steal/偷走"],
            "noun": N("bicycle"),
            "form": "time",
            "agent": None,
            "time": T("last night"),
            **NP("poss", owner=P("I")),
        },
        "My bicycle was stolen last night.",
        "我的自行车昨天晚上被偷走了。",
    ),
    (
        "event_passive",
        {
            "event": lx.EVENTS_BY_KEY["meeting"],
            "verb": lx.EVENT_VERBS["event"][0],
            "form": "until",
            "until": T("next week"),
            "agent": None,
        },
        "The meeting has been postponed until next week.",
        "会议已被推迟到下周。",
    ),
    # questions
    (
        "where",
        {"form": "thing", "who": None, "thing": N("key"), **NP("poss_pl", owner=P("I"))},
        "Where are my keys?",
        "我的钥匙在哪里？",
    ),
    (
        "what",
        {"form": "did", "who": P("you"), "verb": lx.VERBS_BY_KEY["buy/买"], "time": T("yesterday"), "now": False},
        "What did you buy yesterday?",
        "你昨天买了什么？",
    ),
    (
        "like",
        {"subj": P("you"), "noun": N("cup of coffee"), "form": "question"},
        "Do you like coffee?",
        "你喜欢咖啡吗？",
    ),
    # measure words, numbers, aspect, negation, comparisons
    (
        "past_trans",
        {"subj": P("I"), "verb": lx.VERBS_BY_KEY["buy/买"], "noun": N("book"), "time": T("yesterday"), **NP("num", 2)},
        "I bought two books yesterday.",
        "我昨天买了两本书。",
    ),
    (
        "exist",
        {"place": lx.PLACES_BY_KEY["the classroom"], "noun": N("student"), "form": "stmt", **NP("num", 25)},
        "There are 25 students in the classroom.",
        "教室里有25个学生。",
    ),
    (
        "state_zhe",
        {
            "form": "wear",
            "subj": P("she"),
            "noun": N("coat"),
            "thing": None,
            **NP("a", adj=lx.ADJECTIVES_BY_KEY["red/红色"]),
        },
        "She is wearing a red coat.",
        "她穿着一件红色的外套。",
    ),
    (
        "progressive",
        {"subj": P("he"), "verb": lx.VERBS_BY_KEY["read/看"], "noun": N("book"), "form": "stmt", **NP("a")},
        "He is reading a book.",
        "他在看一本书。",
    ),
    (
        "been_to",
        {"subj": P("I"), "city": lx.PLACES_BY_KEY["Beijing"], "form": "stmt", "n": 2},
        "I have been to Beijing.",
        "我去过北京。",
    ),
    (
        "go_place",
        {"subj": P("he"), "dest": lx.PLACES_BY_KEY["Shanghai"], "form": "neg", "by": None, "time": T("last week")},
        "He did not go to Shanghai last week.",
        "他上周没有去上海。",
    ),
    (
        "compare_people",
        {"p1": P("Tom"), "p2": P("Mary"), "adj": lx.ADJECTIVES_BY_KEY["tall/高"], "form": "comp", "deg": ""},
        "Tom is taller than Mary.",
        "汤姆比玛丽高。",
    ),
    (
        "compare_things",
        {
            "noun": N("book"),
            "adj": lx.ADJECTIVES_BY_KEY["expensive/贵"],
            "form": "this_that",
            "deg": "much",
            "o1": None,
            "o2": None,
        },
        "This book is much more expensive than that one.",
        "这本书比那本贵得多。",
    ),
    (
        "act_habit",
        {
            "subj": P("my father"),
            "act": lx.ACTIVITIES_BY_KEY["read the newspaper"],
            "place": lx.PLACES_BY_KEY["the park"],
            "form": "time",
            "time": T("every morning"),
            "adv": None,
        },
        "My father reads the newspaper in the park every morning.",
        "我爸爸每天早上在公园看报纸。",
    ),
]


@pytest.mark.parametrize(("template", "slots", "en", "zh"), EXPECTED, ids=[e[2] for e in EXPECTED])
def test_exact_chinese_for_generated_english(template: str, slots: dict[str, Any], en: str, zh: str) -> None:
    assert c.render(template, slots) == (en, zh)


def test_tsv_round_trip(tmp_path: Path) -> None:
    pairs = c.generate_pairs(50, seed=3)
    assert c.read_tsv(c.write_tsv(tmp_path / "x.tsv", pairs)) == pairs


# --------------------------------------------------------------------------------------------------
# The shipped model directory
# --------------------------------------------------------------------------------------------------


def test_shipped_vocab_layout_and_configs() -> None:
    vocab = json.loads((MODEL / "vocab.json").read_text(encoding="utf-8"))
    assert [vocab["</s>"], vocab["<unk>"], vocab[">>cmn_Hans<<"], vocab[">>cmn_Hant<<"]] == [0, 1, 2, 3]
    pad = vocab["<pad>"]
    assert pad == len(vocab) - 1 == max(vocab.values())
    assert sorted(vocab.values()) == list(range(len(vocab)))
    config = json.loads((MODEL / "config.json").read_text())
    assert config["vocab_size"] == config["decoder_vocab_size"] == len(vocab)
    assert config["pad_token_id"] == config["decoder_start_token_id"] == pad
    assert config["eos_token_id"] == config["forced_eos_token_id"] == 0
    assert config["activation_function"] == "swish" and config["static_position_embeddings"]
    assert config["scale_embedding"] and config["share_encoder_decoder_embeddings"]
    gen = json.loads((MODEL / "generation_config.json").read_text())
    assert gen["bad_words_ids"] == [[pad]] and gen["decoder_start_token_id"] == pad
    assert gen["num_beams"] == 4 and gen["max_length"] == 512 and gen["renormalize_logits"] is True
    assert gen["eos_token_id"] == gen["forced_eos_token_id"] == 0


def test_shipped_model_size_and_files() -> None:
    names = {p.name for p in MODEL.iterdir()}
    assert {
        "model.safetensors",
        "config.json",
        "generation_config.json",
        "source.spm",
        "target.spm",
        "vocab.json",
        "tokenizer_config.json",
        "README.md",
        "test.tsv",
    } <= names
    assert sum(p.stat().st_size for p in MODEL.iterdir() if p.is_file()) <= 20 * 1024 * 1024


def test_shipped_test_set_is_the_generated_held_out_set() -> None:
    shipped = c.read_tsv(MODEL / "test.tsv")
    assert len(shipped) == 1000 == len({en for en, _ in shipped})
    assert shipped == c.generate_pairs(1000, c.DEFAULT_TEST_SEED, "test", unique=True)


def test_target_spm_covers_every_chinese_character_of_the_lexicon() -> None:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(MODEL / "target.spm"))
    vocab = json.loads((MODEL / "vocab.json").read_text(encoding="utf-8"))
    strings = [str(getattr(e, "zh", "")).format(o="", le="") for group in lx.lexicon().values() for e in group]
    chars = {ch for zh in strings for ch in zh} | set("。？吗了过着在被比很不没有什么哪里年月日点分元美欧英镑")
    for ch in sorted(chars):
        pieces = sp.encode(ch, out_type=str)
        assert sp.unk_id() not in sp.encode(ch), ch
        assert all(p in vocab for p in pieces), (ch, pieces)


def test_marian_tokenizer_loads_the_shipped_model_and_matches_training_ids() -> None:
    import warnings

    transformers = pytest.importorskip("transformers")
    from enzh.demo.tokenizers import with_lang_token
    from enzh.demo.train import encode_pairs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = transformers.MarianTokenizer.from_pretrained(str(MODEL))
        auto = transformers.AutoTokenizer.from_pretrained(str(MODEL))
    assert type(auto).__name__ == "MarianTokenizer"
    assert tok.pad_token_id == len(tok) - 1 and tok.eos_token_id == 0 and tok.unk_token_id == 1
    pairs = c.generate_pairs(200, seed=11) + [r[2] for r in REQUIRED]
    src, tgt = encode_pairs(MODEL, pairs)
    for (en, zh), s, t in zip(pairs, src, tgt, strict=True):
        batch = tok(with_lang_token(en), text_target=zh)
        assert batch["input_ids"] == s and s[0] == 2 and s[-1] == 0
        assert batch["labels"] == t and 1 not in s and 1 not in t
        assert tok.decode(t, skip_special_tokens=True) == zh
