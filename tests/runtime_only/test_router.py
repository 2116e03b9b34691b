"""The router: each text to the model of its direction (stand-in engines here; the embedded pair in
test_runtime_only.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from enzh.runtime.engine import ModelInfo, Translation
from enzh.runtime.router import Translators, base_language, detect_script

INFO = ModelInfo(
    name="m",
    source_id="m",
    precision="fp32",
    directory=Path("m"),
    embedded=False,
    default_beam_size=1,
    max_positions=512,
    targets=(),
    default_target=None,
    has_aligner=False,
    fingerprint="m",
)


@dataclass
class Stub:
    """An engine that tags each text with its name and the target token it was asked for, and records calls."""

    name: str
    directions: tuple[tuple[str, str], ...]
    targets: tuple[str, ...] = ()
    calls: list[tuple[list[str], Any, Any]] = field(default_factory=list)

    @property
    def info(self) -> ModelInfo:
        return replace(INFO, name=self.name, directions=self.directions, targets=self.targets)

    def resolve_target(self, target: str | None) -> str | None:
        if not self.targets:
            return None
        known = {"zh": self.targets[0], "zh-Hant": self.targets[-1], **{t: t for t in self.targets}}
        if (target or "zh") not in known:
            raise ValueError(f"unknown target {target!r}")
        return known[target or "zh"]

    def translate_detailed(self, texts: list[str], **options: Any) -> list[Translation]:
        self.calls.append((list(texts), options["target"], options["source"]))
        tag = f"{self.name}:{options['target']}" if options["target"] else self.name
        return [Translation(text=f"{tag}({t})", token_ids=((1,),), scores=(0.0,), parts=1) for t in texts]


@pytest.fixture
def pair() -> tuple[Stub, Stub, Translators]:
    en_zh = Stub("en-zh", (("en", "zh"),), targets=(">>cmn_Hans<<", ">>cmn_Hant<<"))
    zh_en = Stub("zh-en", (("zh", "en"),))
    return en_zh, zh_en, Translators([en_zh, zh_en])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("The weather is nice today.", "en"),
        ("今天天气很好。", "zh"),
        ("我用Python写代码。", "zh"),  # an English word in a Chinese sentence
        ("I like 北京 very much.", "en"),  # a Chinese name in an English sentence
        ("Ｆｕｌｌ ｗｉｄｔｈ", "en"),  # NFKC, as the models read it
        ("2024-03-05 12:30 !!", None),  # nothing to tell by
        ("", None),
    ],
)
def test_the_language_is_told_by_script(text, language):
    assert detect_script(text) == language


@pytest.mark.parametrize(
    ("code", "base"),
    [
        *[
            ("zh-Hant", "zh"),
            ("zt", "zh"),
            ("zho_Hant", "zh"),
            ("__zh__", "zh"),
            ("zh_CN", "zh"),
            (">>cmn_Hant<<", "zh"),
        ],
        *[("en-GB", "en"), ("eng_Latn", "en"), ("en_XX", "en"), ("de", "de")],
    ],
)
def test_codes_of_every_family_name_their_language(code, base):
    assert base_language(code) == base


def test_auto_sends_each_text_to_its_model_in_one_call_per_model(pair):
    en_zh, zh_en, router = pair
    texts = ["Hello.", "你好。", "  ", "Bye.", "2024", "再见。"]
    got = router.translate(texts)
    assert got == [
        "en-zh:>>cmn_Hans<<(Hello.)",
        "zh-en(你好。)",
        "  ",  # blank and letterless text is returned as it is, by no model
        "en-zh:>>cmn_Hans<<(Bye.)",
        "2024",
        "zh-en(再见。)",
    ]
    assert en_zh.calls == [(["Hello.", "Bye."], ">>cmn_Hans<<", "en")]
    assert zh_en.calls == [(["你好。", "再见。"], None, "zh")]
    assert router.directions == (("en", "zh"), ("zh", "en"))
    assert router.languages == {"en": ("zh",), "zh": ("en",)}


def test_text_already_in_the_target_language_is_kept(pair):
    _, zh_en, router = pair
    assert router.translate(["你好。", "Hello."], target="zh-Hant") == ["你好。", "en-zh:>>cmn_Hant<<(Hello.)"]
    assert router.translate(["你好。", "Hello."], target="en") == ["zh-en(你好。)", "Hello."]
    assert zh_en.calls == [(["你好。"], None, "zh")]


def test_an_explicit_source_sends_every_text_to_that_direction(pair):
    en_zh, _, router = pair
    assert router.translate(["你好。", "Hello."], source="zh") == ["zh-en(你好。)", "zh-en(Hello.)"]
    assert router.translate(["Hi."], source="en", target="zt") == ["en-zh:>>cmn_Hant<<(Hi.)"]
    assert en_zh.calls == [(["Hi."], ">>cmn_Hant<<", "en")]


def test_a_direction_no_model_has_is_a_clear_error(pair):
    _, _, router = pair
    with pytest.raises(ValueError, match=r"no loaded model translates 'de' into 'en'; offered: en->zh, zh->en"):
        router.translate(["Hallo."], source="de", target="en")
    with pytest.raises(ValueError, match=r"unknown target 'fr'"):  # the one model from English says what it takes
        router.translate(["Hello."], target="fr")


def test_one_model_alone_keeps_text_it_cannot_read():
    en_zh = Stub("en-zh", (("en", "zh"),), targets=(">>cmn_Hans<<",))
    router = Translators([en_zh])  # type: ignore[list-item]
    assert router.translate(["你好。", "Hello."]) == ["你好。", "en-zh:>>cmn_Hans<<(Hello.)"]


def test_a_lone_model_that_names_no_languages_takes_every_text():
    old = Stub("old", ())
    router = Translators([old])  # type: ignore[list-item]
    assert router.translate(["Hello.", "你好。"]) == ["old(Hello.)", "old(你好。)"]
    with pytest.raises(ValueError, match="cannot route to old: nothing in the model says which languages"):
        Translators([old, Stub("en-zh", (("en", "zh"),))])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="needs at least one model"):
        Translators([])
