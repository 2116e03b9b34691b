"""A deterministic English->Chinese corpus generator: sentence templates over the lexicon in ``lexicon.py``.

Every template draws slot values (a person, a verb, a noun with its measure word, a time, a place, a date,
a clock time, an amount of money, ...) and renders them twice: as an English sentence and as its Chinese
translation, written with the rules of Chinese word order (subject, time, place, manner before the verb),
aspect (了 for completed actions, 过 for experience, 在 for actions in progress, 着 for states),
measure words after numbers and demonstratives, 不/没有 negation, 吗/什么/哪里 questions, 比 comparisons and
被 passives.

Held-out combinations: each template names the slots whose combination identifies a sentence "kind"
(``key_slots``). A stable hash of (template, those slot values) puts every combination into the train or
the test split, so the test set is made of combinations that never occur in training.

>>> generate_pairs(2, seed=1)  # doctest: +SKIP
[('...', '...'), ('...', '...')]
"""

# Long because it holds every sentence template (37) next to the grammar helpers they share; each template is
# short and self-contained, and one file lets a reader check the whole demo language in one place.
from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from enzh.demo import lexicon as lx
from enzh.demo.lexicon import Activity, Adjective, Noun, Person, Place, Word

__all__ = [
    "TEMPLATES",
    "TEST_PERCENT",
    "Template",
    "generate_pairs",
    "generate_samples",
    "read_tsv",
    "render",
    "split_of",
    "write_tsv",
]

Slots = dict[str, Any]
T = TypeVar("T")

TEST_PERCENT = 10  # share of (template, key slots) combinations held out for the test split
DEFAULT_TRAIN_SEED = 1
DEFAULT_TEST_SEED = 2


@dataclass(frozen=True)
class Template:
    name: str
    weight: float
    key_slots: tuple[str, ...]
    sample: Callable[[random.Random], Slots]
    render: Callable[[Slots], tuple[str, str]]


TEMPLATES: dict[str, Template] = {}


def _register(
    name: str, weight: float, key_slots: tuple[str, ...]
) -> Callable[[Callable[[random.Random], Slots]], Callable[[random.Random], Slots]]:
    """Decorator for a sampler; the renderer is the module function ``_r_<name>``, bound at the end."""

    def deco(fn: Callable[[random.Random], Slots]) -> Callable[[random.Random], Slots]:
        _PENDING.append((name, weight, key_slots, fn))
        return fn

    return deco


_PENDING: list[tuple[str, float, tuple[str, ...], Callable[[random.Random], Slots]]] = []

# --------------------------------------------------------------------------------------------------
# Small helpers: English agreement, numbers, noun phrases, dates, clock times, money
# --------------------------------------------------------------------------------------------------

_NUM_EN = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_NUM_ZH = ["零", "一", "两", "三", "四", "五", "六", "七", "八", "九", "十"]


def num_en(n: int) -> str:
    return _NUM_EN[n] if 0 < n <= 10 else str(n)


def num_zh(n: int) -> str:
    """A count before a measure word or unit: 一, 两, 三 ... 十, then digits."""
    return _NUM_ZH[n] if 0 < n <= 10 else str(n)


def finish(en: str, zh: str, question: bool = False) -> tuple[str, str]:
    en = en.strip()
    en = en[0].upper() + en[1:]
    if question:
        return en + "?", zh + "？"
    return (en if en.endswith(".") else en + "."), zh + "。"


def be(p: Person, tense: str = "pres") -> str:
    if tense == "past":
        return "was" if p.agr in ("1s", "3s") else "were"
    return {"1s": "am", "3s": "is"}.get(p.agr, "are")


def be_n(plural: bool, tense: str = "pres") -> str:
    if tense == "past":
        return "were" if plural else "was"
    return "are" if plural else "is"


def has(p: Person) -> str:
    return "has" if p.agr == "3s" else "have"


def does(p: Person) -> str:
    return "does" if p.agr == "3s" else "do"


def verb_form(base: str, form: str) -> str:
    """ "s3", "past", "pp" or "ing" of a verb or verb phrase whose first word inflects ("wait for")."""
    head, rest = (base, "") if base in lx._IRREGULAR else (base.partition(" ")[0], base.partition(" ")[2])
    s3, past, pp, ing = lx.inflect(head)
    word = {"s3": s3, "past": past, "pp": pp, "ing": ing}[form]
    return f"{word} {rest}".strip()


def pres(p: Person, base: str) -> str:
    """Present tense of a verb (phrase) agreeing with the subject."""
    return verb_form(base, "s3") if p.agr == "3s" else base


def act_pres(p: Person, a: Activity) -> str:
    return a.phrase("s3") if p.agr == "3s" else a.phrase("base")


def np(
    noun: Noun, det: str, n: int = 1, adj: Adjective | None = None, owner: Person | None = None
) -> tuple[str, str, bool]:
    """(English, Chinese, plural) of a noun phrase.

    det: "a", "num" (n items), "this", "that", "these", "those", "poss" (owner's), "poss_pl", "the",
    "the_pl", "generic", "some".
    """
    attr = adj.attr if adj else ""
    adj_en = adj.en + " " if adj else ""
    if det in ("a", "num"):
        plural = det == "num" and n > 1
        if noun.is_container:
            unit, rest = noun.en.split(" of ", 1)
            head = f"{lx.pluralize(unit) if plural else unit} of {adj_en}{rest}"
        else:
            head = adj_en + (noun.plural if plural else noun.en)
        en = f"{lx.article(head)} {head}" if det == "a" else f"{num_en(n)} {head}"
        return en, f"{num_zh(n if det == 'num' else 1)}{noun.mw}{attr}{noun.zh}", plural
    if det in ("this", "that"):
        zh_det = "这" if det == "this" else "那"
        if noun.is_container:
            unit, rest = noun.en.split(" of ", 1)
            return f"{det} {unit} of {adj_en}{rest}", f"{zh_det}{noun.mw}{attr}{noun.zh}", False
        return f"{det} {adj_en}{noun.en}", f"{zh_det}{noun.mw}{attr}{noun.zh}", False
    if det in ("these", "those"):
        zh_det = "这些" if det == "these" else "那些"
        return f"{det} {adj_en}{noun.plural}", f"{zh_det}{attr}{noun.zh}", True
    if det in ("poss", "poss_pl"):
        assert owner is not None
        if noun.is_container:
            en_word, plural = noun.generic, noun.generic_is_plural
        elif det == "poss_pl":
            en_word, plural = noun.plural, True
        else:
            en_word, plural = noun.en, False
        return f"{owner.en_poss} {adj_en}{en_word}", f"{owner.zh_of}{attr}{noun.zh}", plural
    if det == "the":
        if noun.is_container:
            return f"the {noun.generic}", noun.zh, noun.generic_is_plural
        return f"the {noun.en}", noun.zh, False
    if det == "the_pl":
        return f"the {noun.plural}", noun.zh, True
    if det == "generic":
        return noun.generic, noun.zh, noun.generic_is_plural
    if det == "some":
        return f"some {noun.generic}", f"一些{noun.zh}", noun.generic_is_plural
    raise ValueError(f"unknown determiner {det!r}")


def date_en(d: tuple[int, int, int]) -> str:
    y, m, day = d
    return f"{lx.MONTHS[m - 1]} {day}, {y}"


def date_zh(d: tuple[int, int, int]) -> str:
    y, m, day = d
    return f"{y}年{m}月{day}日"


_MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def sample_date(rng: random.Random, lo: int = 1950, hi: int = 2035) -> tuple[int, int, int]:
    m = rng.randint(1, 12)
    return rng.randint(lo, hi), m, rng.randint(1, _MONTH_DAYS[m - 1])


def clock_en(c: tuple[int, int]) -> str:
    h, m = c
    h12 = h % 12 or 12
    suffix = "a.m." if h < 12 else "p.m."
    return f"{h12} {suffix}" if m == 0 else f"{h12}:{m:02d} {suffix}"


def clock_zh(c: tuple[int, int]) -> str:
    h, m = c
    h12 = h % 12 or 12
    period = "早上" if h <= 8 else "上午" if h <= 11 else "中午" if h == 12 else "下午" if h <= 17 else "晚上"
    return f"{period}{h12}点" + (f"{m}分" if m else "")


_MINUTES = [0, 0, 0, 0, 15, 30, 30, 45, 10, 20, 40, 50]


def sample_clock(rng: random.Random, hours: tuple[int, int] = (6, 23)) -> tuple[int, int]:
    return rng.randint(hours[0], hours[1]), rng.choice(_MINUTES)


def money_en(m: tuple[int, str, str]) -> str:
    cents, cur, style = m
    units, rest = divmod(cents, 100)
    amount = f"{units:,}" + (f".{rest:02d}" if rest else "")
    if style == "$":
        return "$" + amount
    c = lx.CURRENCIES_BY_KEY[cur]
    return f"{amount} {c.extra}"


def money_zh(m: tuple[int, str, str]) -> str:
    cents, cur, _ = m
    units, rest = divmod(cents, 100)
    return f"{units}" + (f".{rest:02d}" if rest else "") + lx.CURRENCIES_BY_KEY[cur].zh


def sample_money(rng: random.Random, hi: int = 999) -> tuple[int, str, str]:
    cur = rng.choice(["dollar", "dollar", "yuan", "yuan", "euro", "pound"])
    r = rng.random()
    if r < 0.5:
        units = rng.choice([5, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300, 500, 800])
    elif r < 0.85 or hi < 1000:
        units = rng.randint(2, hi)
    else:
        units = rng.randint(1000, 9999)
    style = rng.choice(["$", "word"]) if cur == "dollar" else "word"
    cents = 0
    if style == "$" and units < 100 and rng.random() < 0.3:
        cents = rng.choice([25, 50, 75, 99, 10, 20, 80])
    return units * 100 + cents, cur, style


def sample_count(rng: random.Random, big: float = 0.25, hi: int = 99) -> int:
    return rng.randint(11, hi) if rng.random() < big else rng.randint(2, 10)


# --------------------------------------------------------------------------------------------------
# Sampling helpers
# --------------------------------------------------------------------------------------------------


def _pick(rng: random.Random, seq: Sequence[T]) -> T:
    return seq[rng.randrange(len(seq))]


def pick_person(rng: random.Random, *, roles: bool = True, coord: bool = True, plural: bool | None = None) -> Person:
    while True:
        r = rng.random()
        if r < 0.42:
            p = _pick(rng, lx.PRONOUNS)
        elif r < 0.70:
            p = _pick(rng, lx.NAMES)
        elif r < 0.90 or not roles:
            p = _pick(rng, lx.KIN)
        elif r < 0.96 or not coord:
            p = _pick(rng, lx.ROLES_AS_PEOPLE)
        else:
            a, b = rng.sample(lx.NAMES, 2)
            p = Person(f"{a.en} and {b.en}", f"{a.zh}和{b.zh}", "3p", kind="coord")
        if plural is None or (p.agr in ("1p", "3p")) == plural:
            return p


def other_person(rng: random.Random, subj: Person) -> Person:
    """An object person different from the subject (and never "me" for "I", "us" for "we", ...)."""
    while True:
        o = pick_person(rng, coord=False)
        if o.key == subj.key:
            continue
        if {o.key, subj.key} & {"I", "we"} == {o.key, subj.key} or {o.key, subj.key} <= {"you"}:
            continue
        return o


def person(key: str) -> Person:
    """The person for an English subject key, including coordinations "Tom and Mary"."""
    if key in lx.PEOPLE_BY_KEY:
        return lx.PEOPLE_BY_KEY[key]
    a, b = key.split(" and ")
    pa, pb = lx.PEOPLE_BY_KEY[a], lx.PEOPLE_BY_KEY[b]
    return Person(key, f"{pa.zh}和{pb.zh}", "3p", kind="coord")


def _key(v: Any) -> str:
    if v is None:
        return ""
    if hasattr(v, "key"):
        return str(v.key)
    if isinstance(v, tuple):
        return "-".join(_key(x) for x in v)
    return str(v)


def _where(p: Place) -> str:
    return "在" + p.zh


# --------------------------------------------------------------------------------------------------
# Degrees
# --------------------------------------------------------------------------------------------------


def degree_ok(a: Adjective, deg: str) -> bool:
    if deg in ("too", "a little"):
        return a.mild
    if deg == "not":
        return not a.zh.startswith("有")
    return True


def pred_zh(adj_zh: str, deg: str) -> str:
    return {
        "": f"很{adj_zh}",
        "very": f"非常{adj_zh}",
        "not": f"不{adj_zh}",
        "too": f"太{adj_zh}了",
        "a little": f"有点{adj_zh}",
    }[deg]


def pred_en(adj_en: str, deg: str) -> str:
    return f"{deg} {adj_en}".strip()


_DEGREES = ["", "", "very", "not", "too", "a little"]
_COMP_DEG = {"": ("", ""), "much": ("much ", "得多"), "a little": ("a little ", "一点")}

# --------------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------------


@_register("weather", 2.0, ("time", "adj", "deg"))
def _s_weather(rng: random.Random) -> Slots:
    tense = rng.choice(["pres", "past", "fut"])
    time = _pick(rng, [t for t in lx.TIMES if ("pres" if tense == "pres" else tense) in t.classes])
    adj = _pick(rng, lx.adjectives("weather"))
    degs = ["", "", "very", "a little"] if tense == "fut" else _DEGREES
    deg = _pick(rng, [d for d in degs if degree_ok(adj, d)])
    return {"tense": tense, "time": time, "adj": adj, "deg": deg}


def _r_weather(s: Slots) -> tuple[str, str]:
    verb = {"pres": "is", "past": "was", "fut": "will be"}[s["tense"]]
    zh_pred = pred_zh(s["adj"].zh, s["deg"])
    if s["tense"] == "fut":
        zh_pred = "会" + zh_pred
    return finish(f"The weather {verb} {pred_en(s['adj'].en, s['deg'])} {s['time'].en}", f"{s['time'].zh}天气{zh_pred}")


@_register("city_season", 1.0, ("city", "season"))
def _s_city_season(rng: random.Random) -> Slots:
    adj = _pick(rng, [a for a in lx.adjectives("weather") if a.en != "nice"])
    deg = _pick(rng, [d for d in ["", "very", "not", "a little"] if degree_ok(adj, d)])
    return {"city": _pick(rng, lx.CITIES), "season": _pick(rng, lx.SEASONS), "adj": adj, "deg": deg}


def _r_city_season(s: Slots) -> tuple[str, str]:
    return finish(
        f"It is {pred_en(s['adj'].en, s['deg'])} in {s['city'].en} in {s['season'].en}",
        f"{s['city'].zh}{s['season'].zh}{pred_zh(s['adj'].zh, s['deg'])}",
    )


_WANTABLE = [n for n in lx.NOUNS if n.tags & {"buy", "eat", "drink", "order"}]


def _sample_np(
    rng: random.Random, noun: Noun, dets: Sequence[str], adj_p: float = 0.25, owner: Person | None = None
) -> Slots:
    det = _pick(rng, dets)
    n = sample_count(rng, big=0.15, hi=30) if det == "num" else 1
    adj = None
    if det in ("a", "num", "this", "that", "poss") and rng.random() < adj_p:
        choices = [a for a in lx.ADJECTIVES if a.attr and (a.kind == "color" and "color" in noun.tags)]
        choices += [a for a in lx.adjectives_for(noun) if a.attr]
        if noun.is_container:
            choices = [a for a in choices if a.kind == "color"]
        if choices:
            adj = _pick(rng, choices)
    return {"det": det, "n": n, "adj": adj, "owner": owner}


def _np(s: Slots, noun_slot: str = "noun") -> tuple[str, str, bool]:
    return np(s[noun_slot], s["det"], s["n"], s["adj"], s.get("owner"))


@_register("would_like", 3.0, ("subj", "noun", "form"))
def _s_would_like(rng: random.Random) -> Slots:
    noun = _pick(rng, _WANTABLE)
    form = rng.choice(["stmt", "stmt", "question"])
    subj = lx.PEOPLE_BY_KEY["I"] if form == "stmt" and rng.random() < 0.3 else pick_person(rng)
    return {"subj": subj, "noun": noun, "form": form, **_sample_np(rng, noun, ["a", "a", "num", "some"])}


def _r_would_like(s: Slots) -> tuple[str, str]:
    en_np, zh_np, _ = _np(s)
    p = s["subj"]
    if s["form"] == "question":
        return finish(f"Would {p.en} like {en_np}", f"{p.zh}想要{zh_np}吗", question=True)
    return finish(f"{p.en} would like {en_np}", f"{p.zh}想要{zh_np}")


@_register("event_passive", 3.0, ("event", "verb", "form", "until", "agent"))
def _s_event_passive(rng: random.Random) -> Slots:
    event = _pick(rng, lx.EVENTS)
    verb = _pick(rng, lx.EVENT_VERBS[event.cat])
    forms = ["perfect", "perfect", "neg", "agent", "question"]
    if verb.en == "postponed":
        forms += ["until", "until"]
    form = rng.choice(forms)
    until: Any = None
    if form == "until":
        until = sample_date(rng, 2020, 2030) if rng.random() < 0.4 else _pick(rng, lx.times("fut"))
    agent = pick_person(rng) if form == "agent" else None
    return {"event": event, "verb": verb, "form": form, "until": until, "agent": agent}


def _r_event_passive(s: Slots) -> tuple[str, str]:
    e, v, form = s["event"], s["verb"], s["form"]
    if form == "perfect":
        return finish(f"the {e.en} has been {v.en}", f"{e.zh}已被{v.zh}")
    if form == "neg":
        return finish(f"the {e.en} has not been {v.en} yet", f"{e.zh}还没有被{v.zh}")
    if form == "agent":
        return finish(f"the {e.en} was {v.en} by {s['agent'].en_obj}", f"{e.zh}被{s['agent'].zh}{v.zh}了")
    if form == "question":
        return finish(f"has the {e.en} been {v.en}", f"{e.zh}被{v.zh}了吗", question=True)
    u = s["until"]
    u_en, u_zh = (date_en(u), date_zh(u)) if isinstance(u, tuple) else (u.en, u.zh)
    return finish(f"the {e.en} has been postponed until {u_en}", f"{e.zh}已被推迟到{u_zh}")


@_register("obj_passive", 4.0, ("verb", "noun", "form"))
def _s_obj_passive(rng: random.Random) -> Slots:
    verb = _pick(rng, lx.PASSIVE_VERBS)
    noun = _pick(rng, lx.nouns_with(verb.obj))
    form = rng.choice(["agent", "agent", "time", "perfect"])
    owner = pick_person(rng, roles=False, coord=False)
    dets = ["the", "the", "the_pl", "poss", "this", "that"]
    if noun.is_container:
        dets = ["the", "this", "that"]
    det = _pick(rng, dets)
    return {
        "verb": verb,
        "noun": noun,
        "form": form,
        "det": det,
        "n": 1,
        "adj": None,
        "owner": owner if det == "poss" else None,
        "agent": pick_person(rng) if form == "agent" else None,
        "time": _pick(rng, lx.times("past")) if form == "time" else None,
    }


def _r_obj_passive(s: Slots) -> tuple[str, str]:
    en_np, zh_np, plural = _np(s)
    v = s["verb"]
    if s["form"] == "agent":
        a = s["agent"]
        return finish(f"{en_np} {be_n(plural, 'past')} {v.pp} by {a.en_obj}", f"{zh_np}被{a.zh}{v.zh}了")
    if s["form"] == "time":
        t = s["time"]
        return finish(f"{en_np} {be_n(plural, 'past')} {v.pp} {t.en}", f"{zh_np}{t.zh}被{v.zh}了")
    return finish(f"{en_np} {'have' if plural else 'has'} been {v.pp}", f"{zh_np}已被{v.zh}")


def _verb_noun(rng: random.Random, pred: Callable[[lx.Verb], bool] = lambda v: True) -> tuple[lx.Verb, Noun]:
    verb = _pick(rng, [v for v in lx.VERBS if pred(v)])
    return verb, _pick(rng, lx.nouns_with(verb.obj))


@_register("past_trans", 4.0, ("subj", "verb", "noun"))
def _s_past_trans(rng: random.Random) -> Slots:
    verb, noun = _verb_noun(rng)
    subj = pick_person(rng)
    return {
        "subj": subj,
        "verb": verb,
        "noun": noun,
        "time": _pick(rng, lx.times("past")),
        **_sample_np(rng, noun, ["a", "a", "num", "num", "this", "that", "these", "those"]),
    }


def _r_past_trans(s: Slots) -> tuple[str, str]:
    en_np, zh_np, _ = _np(s)
    p, v, t = s["subj"], s["verb"], s["time"]
    return finish(f"{p.en} {v.forms[1]} {en_np} {t.en}", f"{p.zh}{t.zh}{v.zh}了{zh_np}")


@_register("past_neg", 2.0, ("subj", "verb", "noun"))
def _s_past_neg(rng: random.Random) -> Slots:
    verb, noun = _verb_noun(rng)
    return {
        "subj": pick_person(rng),
        "verb": verb,
        "noun": noun,
        "time": _pick(rng, lx.times("past")),
        **_sample_np(rng, noun, ["this", "that", "these", "those"], adj_p=0.1),
    }


def _r_past_neg(s: Slots) -> tuple[str, str]:
    en_np, zh_np, _ = _np(s)
    p, v, t = s["subj"], s["verb"], s["time"]
    return finish(f"{p.en} did not {v.base} {en_np} {t.en}", f"{p.zh}{t.zh}没有{v.zh}{zh_np}")


@_register("progressive", 2.5, ("subj", "verb", "noun", "form"))
def _s_progressive(rng: random.Random) -> Slots:
    verb, noun = _verb_noun(rng, lambda v: v.durative)
    form = rng.choice(["stmt", "stmt", "now", "question"])
    return {
        "subj": pick_person(rng),
        "verb": verb,
        "noun": noun,
        "form": form,
        **_sample_np(rng, noun, ["a", "a", "num", "this", "that"]),
    }


def _r_progressive(s: Slots) -> tuple[str, str]:
    en_np, zh_np, _ = _np(s)
    p, v = s["subj"], s["verb"]
    ing = v.forms[3]
    if s["form"] == "question":
        return finish(f"{be(p)} {p.en} {ing} {en_np}", f"{p.zh}在{v.zh}{zh_np}吗", question=True)
    if s["form"] == "now":
        return finish(f"{p.en} {be(p)} {ing} {en_np} now", f"{p.zh}现在在{v.zh}{zh_np}")
    return finish(f"{p.en} {be(p)} {ing} {en_np}", f"{p.zh}在{v.zh}{zh_np}")


@_register("future_trans", 3.0, ("subj", "verb", "noun", "form"))
def _s_future_trans(rng: random.Random) -> Slots:
    verb, noun = _verb_noun(rng)
    form = rng.choice(["will", "going", "want", "will_not"])
    dets = ["this", "that"] if form == "will_not" else ["a", "a", "num", "this", "that"]
    return {
        "subj": pick_person(rng),
        "verb": verb,
        "noun": noun,
        "form": form,
        "time": _pick(rng, lx.times("fut")),
        **_sample_np(rng, noun, dets, adj_p=0.35),
    }


def _r_future_trans(s: Slots) -> tuple[str, str]:
    en_np, zh_np, _ = _np(s)
    p, v, t, form = s["subj"], s["verb"], s["time"], s["form"]
    if form == "will":
        return finish(f"{p.en} will {v.base} {en_np} {t.en}", f"{p.zh}{t.zh}要{v.zh}{zh_np}")
    if form == "will_not":
        return finish(f"{p.en} will not {v.base} {en_np} {t.en}", f"{p.zh}{t.zh}不{v.zh}{zh_np}")
    if form == "going":
        return finish(f"{p.en} {be(p)} going to {v.base} {en_np} {t.en}", f"{p.zh}{t.zh}打算{v.zh}{zh_np}")
    return finish(f"{p.en} {pres(p, 'want')} to {v.base} {en_np}", f"{p.zh}想{v.zh}{zh_np}")


@_register("experience", 2.0, ("subj", "verb", "noun", "form"))
def _s_experience(rng: random.Random) -> Slots:
    verb, noun = _verb_noun(rng, lambda v: v.experiential)
    form = rng.choice(["stmt", "never", "question"])
    dets = ["this", "that"] if form == "stmt" else ["this", "that", "generic"]
    if verb.obj in ("eat", "drink"):
        dets = ["generic"]
    return {"subj": pick_person(rng), "verb": verb, "noun": noun, "form": form, **_sample_np(rng, noun, dets, 0.1)}


def _r_experience(s: Slots) -> tuple[str, str]:
    en_np, zh_np, _ = _np(s)
    p, v, form = s["subj"], s["verb"], s["form"]
    pp = v.forms[2]
    if form == "stmt":
        return finish(f"{p.en} {has(p)} {pp} {en_np}", f"{p.zh}{v.zh}过{zh_np}")
    if form == "never":
        return finish(f"{p.en} {has(p)} never {pp} {en_np}", f"{p.zh}从来没有{v.zh}过{zh_np}")
    return finish(f"{has(p)} {p.en} ever {pp} {en_np}", f"{p.zh}{v.zh}过{zh_np}吗", question=True)


@_register("been_to", 1.5, ("subj", "city", "form"))
def _s_been_to(rng: random.Random) -> Slots:
    form = rng.choice(["stmt", "never", "question", "times"])
    return {"subj": pick_person(rng), "city": _pick(rng, lx.CITIES), "form": form, "n": rng.randint(2, 10)}


def _r_been_to(s: Slots) -> tuple[str, str]:
    p, c, form = s["subj"], s["city"], s["form"]
    if form == "stmt":
        return finish(f"{p.en} {has(p)} been to {c.en}", f"{p.zh}去过{c.zh}")
    if form == "never":
        return finish(f"{p.en} {has(p)} never been to {c.en}", f"{p.zh}从来没有去过{c.zh}")
    if form == "times":
        n = s["n"]
        return finish(f"{p.en} {has(p)} been to {c.en} {num_en(n)} times", f"{p.zh}去过{c.zh}{num_zh(n)}次")
    return finish(f"{has(p)} {p.en} ever been to {c.en}", f"{p.zh}去过{c.zh}吗", question=True)


_PARTS = {"morning": (6, 11), "afternoon": (12, 17), "evening": (18, 23), "night": (18, 23), "tonight": (18, 23)}


def _time_fits(t: lx.TimeExpr, a: Activity) -> bool:
    """A time of day ("every morning") must overlap the hours when the activity happens."""
    for word, (lo, hi) in _PARTS.items():
        if word in t.en:
            return a.hours[0] <= hi and lo <= a.hours[1]
    return True


def _time_for(rng: random.Random, cls: str, a: Activity) -> lx.TimeExpr:
    return _pick(rng, [t for t in lx.times(cls) if _time_fits(t, a)])


_ROUTINE = {"daily", "eat"}


def _place_for(rng: random.Random, a: Activity, p: float) -> Place | None:
    if rng.random() >= p:
        return None
    places = [pl for pl in lx.PLACES if pl.tags & a.tags]
    return _pick(rng, places) if places else None


@_register("act_habit", 3.0, ("subj", "act", "place", "form"))
def _s_act_habit(rng: random.Random) -> Slots:
    act = _pick(rng, lx.ACTIVITIES)
    form = rng.choice(["time", "time", "adverb"] + ([] if act.tags & _ROUTINE else ["never"]))
    return {
        "subj": pick_person(rng),
        "act": act,
        "form": form,
        "place": _place_for(rng, act, 0.5) if form != "never" else None,
        "time": _time_for(rng, "hab", act),
        "adv": _pick(rng, lx.ADVERBS),
    }


def _r_act_habit(s: Slots) -> tuple[str, str]:
    p, a, pl = s["subj"], s["act"], s["place"]
    en_pl = f" {pl.at}" if pl else ""
    zh_pl = _where(pl) if pl else ""
    if s["form"] == "time":
        t = s["time"]
        return finish(f"{p.en} {act_pres(p, a)}{en_pl} {t.en}", f"{p.zh}{t.zh}{zh_pl}{a.zh}")
    if s["form"] == "adverb":
        adv = s["adv"]
        return finish(f"{p.en} {adv.en} {act_pres(p, a)}{en_pl}", f"{p.zh}{adv.zh}{zh_pl}{a.zh}")
    return finish(f"{p.en} never {act_pres(p, a)}", f"{p.zh}从不{a.zh}")


@_register("act_progressive", 2.0, ("subj", "act", "form"))
def _s_act_progressive(rng: random.Random) -> Slots:
    act = _pick(rng, lx.ACTIVITIES)
    form = rng.choice(["stmt", "now", "place", "question"])
    place = _place_for(rng, act, 1.0) if form == "place" else None
    if form == "place" and place is None:
        form = "stmt"
    return {"subj": pick_person(rng), "act": act, "form": form, "place": place}


def _r_act_progressive(s: Slots) -> tuple[str, str]:
    p, a, form = s["subj"], s["act"], s["form"]
    ing = a.phrase("ing")
    if form == "now":
        return finish(f"{p.en} {be(p)} {ing} now", f"{p.zh}现在在{a.zh}")
    if form == "place":
        pl = s["place"]
        return finish(f"{p.en} {be(p)} {ing} {pl.at}", f"{p.zh}正在{pl.zh}{a.zh}")
    if form == "question":
        return finish(f"{be(p)} {p.en} {ing}", f"{p.zh}在{a.zh}吗", question=True)
    return finish(f"{p.en} {be(p)} {ing}", f"{p.zh}在{a.zh}")


@_register("act_past", 3.0, ("subj", "act", "form"))
def _s_act_past(rng: random.Random) -> Slots:
    act = _pick(rng, lx.ACTIVITIES)
    forms = ["stmt", "stmt", "neg", "question"] + (["already"] if act.telic else [])
    form = rng.choice(forms)
    return {
        "subj": pick_person(rng),
        "act": act,
        "form": form,
        "place": _place_for(rng, act, 0.4) if form == "stmt" else None,
        "time": _time_for(rng, "past", act),
    }


def _r_act_past(s: Slots) -> tuple[str, str]:
    p, a, t, form = s["subj"], s["act"], s["time"], s["form"]
    if form == "stmt":
        pl = s["place"]
        en_pl = f" {pl.at}" if pl else ""
        zh_pl = _where(pl) if pl else ""
        return finish(f"{p.en} {a.phrase('past')}{en_pl} {t.en}", f"{p.zh}{t.zh}{zh_pl}{a.zh}了")
    if form == "neg":
        return finish(f"{p.en} did not {a.phrase('base')} {t.en}", f"{p.zh}{t.zh}没有{a.zh}")
    if form == "question":
        return finish(f"did {p.en} {a.phrase('base')} {t.en}", f"{p.zh}{t.zh}{a.zh}了吗", question=True)
    return finish(f"{p.en} {has(p)} already {a.phrase('pp')}", f"{p.zh}已经{a.zh}了")


@_register("act_future", 3.0, ("subj", "act", "form", "time"))
def _s_act_future(rng: random.Random) -> Slots:
    act = _pick(rng, lx.ACTIVITIES)
    forms = ["will", "will", "will_not", "going", "want", "like", "dislike"] + (["lets"] if "fun" in act.tags else [])
    form = rng.choice(forms)
    return (
        {
            "subj": pick_person(rng),
            "act": act,
            "form": form,
            "place": _place_for(rng, act, 0.4) if form == "will" else None,
            "time": _time_for(rng, "fut", act),
        }
        | ({"subj": None} if form == "lets" else {})
        | ({"time": None} if form in ("want", "like", "dislike") else {})
    )


def _r_act_future(s: Slots) -> tuple[str, str]:
    p, a, t, form = s["subj"], s["act"], s["time"], s["form"]
    base = a.phrase("base")
    if form == "will":
        pl = s["place"]
        en_pl = f" {pl.at}" if pl else ""
        zh_pl = _where(pl) if pl else ""
        return finish(f"{p.en} will {base}{en_pl} {t.en}", f"{p.zh}{t.zh}要{zh_pl}{a.zh}")
    if form == "will_not":
        return finish(f"{p.en} will not {base} {t.en}", f"{p.zh}{t.zh}不{a.zh}")
    if form == "going":
        return finish(f"{p.en} {be(p)} going to {base} {t.en}", f"{p.zh}{t.zh}打算{a.zh}")
    if form == "want":
        return finish(f"{p.en} {pres(p, 'want')} to {base}", f"{p.zh}想{a.zh}")
    if form == "like":
        return finish(f"{p.en} {pres(p, 'like')} to {base}", f"{p.zh}喜欢{a.zh}")
    if form == "dislike":
        return finish(f"{p.en} {does(p)} not like to {base}", f"{p.zh}不喜欢{a.zh}")
    return finish(f"let's {base} {t.en}", f"我们{t.zh}{a.zh}吧")


@_register("language", 1.5, ("subj", "lang", "form"))
def _s_language(rng: random.Random) -> Slots:
    form = rng.choice(["can", "cannot", "question", "learning", "studied", "teaches"])
    subj = pick_person(rng)
    return {
        "subj": subj,
        "lang": _pick(rng, lx.LANGUAGES),
        "form": form,
        "n": rng.randint(2, 10),
        "unit": _pick(rng, [lx.DURATIONS_BY_KEY["month"], lx.DURATIONS_BY_KEY["year"]]),
        "obj": other_person(rng, subj) if form == "teaches" else None,
    }


def _r_language(s: Slots) -> tuple[str, str]:
    p, lang, form = s["subj"], s["lang"], s["form"]
    if form == "can":
        return finish(f"{p.en} can speak {lang.en}", f"{p.zh}会说{lang.zh}")
    if form == "cannot":
        return finish(f"{p.en} cannot speak {lang.en}", f"{p.zh}不会说{lang.zh}")
    if form == "question":
        return finish(f"can {p.en} speak {lang.en}", f"{p.zh}会说{lang.zh}吗", question=True)
    if form == "learning":
        return finish(f"{p.en} {be(p)} learning {lang.en}", f"{p.zh}在学{lang.zh}")
    if form == "studied":
        n, u = s["n"], s["unit"]
        return finish(f"{p.en} studied {lang.en} for {num_en(n)} {u.extra}", f"{p.zh}学了{num_zh(n)}{u.zh}{lang.zh}")
    o = s["obj"]
    return finish(f"{p.en} {pres(p, 'teach')} {o.en_obj} {lang.en}", f"{p.zh}教{o.zh}{lang.zh}")


@_register("go_place", 3.0, ("subj", "dest", "form"))
def _s_go_place(rng: random.Random) -> Slots:
    dest = _pick(rng, lx.DESTINATIONS)
    form = rng.choice(["past", "past", "fut", "hab", "neg", "question"])
    by = None
    if form in ("past", "fut", "hab") and rng.random() < 0.4:
        keys = [t.key for t in lx.TRANSPORT] if dest.city else lx.LOCAL_TRANSPORT
        by = lx.TRANSPORT_BY_KEY[_pick(rng, keys)]
    cls = {"past": "past", "neg": "past", "question": "past", "fut": "fut", "hab": "hab"}[form]
    return {"subj": pick_person(rng), "dest": dest, "form": form, "by": by, "time": _pick(rng, lx.times(cls))}


def _r_go_place(s: Slots) -> tuple[str, str]:
    p, d, form, by, t = s["subj"], s["dest"], s["form"], s["by"], s["time"]
    en_by = f" {by.en}" if by else ""
    zh_by = by.zh if by else ""
    if form == "past":
        return finish(f"{p.en} went to {d.en}{en_by} {t.en}", f"{p.zh}{t.zh}{zh_by}去了{d.zh}")
    if form == "fut":
        return finish(f"{p.en} will go to {d.en}{en_by} {t.en}", f"{p.zh}{t.zh}要{zh_by}去{d.zh}")
    if form == "hab":
        return finish(f"{p.en} {pres(p, 'go')} to {d.en}{en_by} {t.en}", f"{p.zh}{t.zh}{zh_by}去{d.zh}")
    if form == "neg":
        return finish(f"{p.en} did not go to {d.en} {t.en}", f"{p.zh}{t.zh}没有去{d.zh}")
    return finish(f"did {p.en} go to {d.en} {t.en}", f"{p.zh}{t.zh}去{d.zh}了吗", question=True)


_WHERE_VERBS = [Word("live", "住", "w"), Word("work", "工作", "w"), Word("study", "学习", "w")]


@_register("where", 2.0, ("form", "who", "thing", "det", "owner"))
def _s_where(rng: random.Random) -> Slots:
    form = rng.choice(["thing", "thing", "place", "does", "went", "from", "going"])
    s: Slots = {"form": form, "who": pick_person(rng), "thing": None, "det": None, "n": 1, "adj": None, "owner": None}
    if form == "thing":
        s["who"] = None
        s["thing"] = lx.NOUNS_BY_KEY[_pick(rng, lx.SMALL_THINGS)]
        s["det"] = _pick(rng, ["poss", "poss", "poss_pl", "the", "this", "that"])
        if s["det"] == "poss_pl" and s["thing"].is_container:
            s["det"] = "poss"  # "my shoes" either way
        s["owner"] = pick_person(rng, roles=False, coord=False) if s["det"].startswith("poss") else None
    elif form == "place":
        s["who"] = None
        s["thing"] = _pick(rng, [p for p in lx.PLACES if p.en != "home"])
    elif form == "does":
        s["thing"] = _pick(rng, _WHERE_VERBS)
    elif form in ("went", "going"):
        s["thing"] = _pick(rng, lx.times("past" if form == "went" else "fut"))
    return s


def _r_where(s: Slots) -> tuple[str, str]:
    form, p, x = s["form"], s["who"], s["thing"]
    if form == "thing":
        en_np, zh_np, plural = np(x, s["det"], 1, None, s.get("owner"))
        return finish(f"where {be_n(plural)} {en_np}", f"{zh_np}在哪里", question=True)
    if form == "place":
        return finish(f"where is {x.en}", f"{x.zh}在哪里", question=True)
    if form == "does":
        return finish(f"where {does(p)} {p.en} {x.en}", f"{p.zh}在哪里{x.zh}", question=True)
    if form == "went":
        return finish(f"where did {p.en} go {x.en}", f"{p.zh}{x.zh}去了哪里", question=True)
    if form == "going":
        return finish(f"where {be(p)} {p.en} going {x.en}", f"{p.zh}{x.zh}要去哪里", question=True)
    return finish(f"where {be(p)} {p.en} from", f"{p.zh}来自哪里", question=True)


_WHAT_VERBS = [v for v in lx.VERBS if v.base in ("buy", "read", "watch", "eat", "drink", "write", "order", "sell")]


@_register("what", 2.0, ("form", "who", "verb"))
def _s_what(rng: random.Random) -> Slots:
    form = rng.choice(["want", "did", "doing", "will"])
    return {
        "form": form,
        "who": pick_person(rng),
        "verb": _pick(rng, _WHAT_VERBS) if form != "doing" else None,
        "time": _pick(rng, lx.times("past" if form == "did" else "fut")),
        "now": rng.random() < 0.5,
    }


def _r_what(s: Slots) -> tuple[str, str]:
    form, p, v, t = s["form"], s["who"], s["verb"], s["time"]
    if form == "want":
        return finish(f"what {does(p)} {p.en} want to {v.base}", f"{p.zh}想{v.zh}什么", question=True)
    if form == "did":
        return finish(f"what did {p.en} {v.base} {t.en}", f"{p.zh}{t.zh}{v.zh}了什么", question=True)
    if form == "will":
        return finish(f"what will {p.en} {v.base} {t.en}", f"{p.zh}{t.zh}要{v.zh}什么", question=True)
    if s["now"]:
        return finish(f"what {be(p)} {p.en} doing now", f"{p.zh}现在在做什么", question=True)
    return finish(f"what {be(p)} {p.en} doing", f"{p.zh}在做什么", question=True)


_LIKEABLE = [n for n in lx.NOUNS if n.tags & {"eat", "drink", "animal", "content", "clothes", "beauty"}]


@_register("like", 2.0, ("subj", "noun", "form"))
def _s_like(rng: random.Random) -> Slots:
    return {"subj": pick_person(rng), "noun": _pick(rng, _LIKEABLE), "form": rng.choice(["stmt", "neg", "question"])}


def _r_like(s: Slots) -> tuple[str, str]:
    p, n, form = s["subj"], s["noun"], s["form"]
    g = n.generic
    if form == "stmt":
        return finish(f"{p.en} {pres(p, 'like')} {g}", f"{p.zh}喜欢{n.zh}")
    if form == "neg":
        return finish(f"{p.en} {does(p)} not like {g}", f"{p.zh}不喜欢{n.zh}")
    return finish(f"{does(p)} {p.en} like {g}", f"{p.zh}喜欢{n.zh}吗", question=True)


_HAVEABLE = [n for n in lx.NOUNS if n.tags & {"pet", "thing"} and not n.is_container]


@_register("have", 2.0, ("subj", "noun", "form"))
def _s_have(rng: random.Random) -> Slots:
    noun = _pick(rng, _HAVEABLE)
    form = rng.choice(["stmt", "stmt", "neg", "question", "how_many"])
    return {"subj": pick_person(rng), "noun": noun, "form": form, **_sample_np(rng, noun, ["a", "num", "num"], 0.3)}


def _r_have(s: Slots) -> tuple[str, str]:
    p, n, form = s["subj"], s["noun"], s["form"]
    if form == "stmt":
        en_np, zh_np, _ = _np(s)
        return finish(f"{p.en} {has(p)} {en_np}", f"{p.zh}有{zh_np}")
    if form == "neg":
        return finish(f"{p.en} {does(p)} not have {lx.article(n.en)} {n.en}", f"{p.zh}没有{n.zh}")
    if form == "question":
        return finish(f"{does(p)} {p.en} have {lx.article(n.en)} {n.en}", f"{p.zh}有{n.zh}吗", question=True)
    return finish(f"how many {n.plural} {does(p)} {p.en} have", f"{p.zh}有多少{n.mw}{n.zh}", question=True)


_EXIST_SUFFIX = {"the playground": "上"}


@_register("exist", 3.0, ("place", "noun", "form"))
def _s_exist(rng: random.Random) -> Slots:
    place = _pick(rng, lx.PLACES_WITH_CONTENTS)
    noun = lx.NOUNS_BY_KEY[_pick(rng, sorted(place.contains))]
    form = rng.choice(["stmt", "stmt", "neg", "question", "how_many"])
    det = "a" if rng.random() < 0.3 else "num"
    return {"place": place, "noun": noun, "form": form, "det": det, "n": sample_count(rng, 0.35, 60), "adj": None}


def _r_exist(s: Slots) -> tuple[str, str]:
    pl, n, form = s["place"], s["noun"], s["form"]
    zh_pl = pl.zh + _EXIST_SUFFIX.get(pl.en, "里")
    if form == "stmt":
        en_np, zh_np, plural = _np(s)
        return finish(f"there {be_n(plural)} {en_np} {pl.at}", f"{zh_pl}有{zh_np}")
    if form == "neg":
        return finish(f"there are no {n.plural} {pl.at}", f"{zh_pl}没有{n.zh}")
    if form == "question":
        return finish(f"is there {lx.article(n.en)} {n.en} {pl.at}", f"{zh_pl}有{n.zh}吗", question=True)
    return finish(f"how many {n.plural} are there {pl.at}", f"{zh_pl}有多少{n.mw}{n.zh}", question=True)


_SURFACES = ["on the table", "on the desk", "on the shelf", "on the sofa", "on the bed", "on the floor"]
_HANGABLE = [n for n in lx.NOUNS if "hang" in n.tags]
_PARKABLE = [lx.NOUNS_BY_KEY[k] for k in ("car", "bicycle", "motorcycle")]


@_register("thing_place", 2.5, ("noun", "loc", "form", "n"))
def _s_thing_place(rng: random.Random) -> Slots:
    form = rng.choice(["be", "be", "exist", "lying", "hanging", "parked"])
    if form == "hanging":
        noun, loc = _pick(rng, _HANGABLE), None
    elif form == "parked":
        noun, loc = _pick(rng, _PARKABLE), None
    else:
        noun = lx.NOUNS_BY_KEY[_pick(rng, lx.SMALL_THINGS)]
        locs = _SURFACES if form == "lying" else [w.key for w in lx.LOCATIONS]
        locs = [k for k in locs if noun.en.split(" ")[-1] not in k and noun.generic not in k]
        loc = lx.LOCATIONS_BY_KEY[_pick(rng, locs)]
    if form == "be":
        np_s = _sample_np(
            rng,
            noun,
            ["poss", "poss_pl", "the", "the", "this", "that"],
            0.15,
            owner=pick_person(rng, roles=False, coord=False),
        )
        if np_s["det"] == "poss_pl" and noun.is_container:
            np_s["det"] = "poss"
    else:
        np_s = _sample_np(rng, noun, ["a", "num"], 0.2)
        np_s["n"] = rng.randint(2, 10) if np_s["det"] == "num" else 1
    return {"noun": noun, "loc": loc, "form": form, **np_s}


def _r_thing_place(s: Slots) -> tuple[str, str]:
    en_np, zh_np, plural = _np(s)
    loc, form = s["loc"], s["form"]
    if form == "be":
        return finish(f"{en_np} {be_n(plural)} {loc.en}", f"{zh_np}在{loc.zh}")
    if form == "exist":
        return finish(f"there {be_n(plural)} {en_np} {loc.en}", f"{loc.zh}有{zh_np}")
    if form == "lying":
        return finish(f"there {be_n(plural)} {en_np} lying {loc.en}", f"{loc.zh}放着{zh_np}")
    if form == "hanging":
        return finish(f"there {be_n(plural)} {en_np} hanging on the wall", f"墙上挂着{zh_np}")
    return finish(f"there {be_n(plural)} {en_np} parked in front of the house", f"房子前面停着{zh_np}")


_WEARABLE = [n for n in lx.NOUNS if n.tags & {"wear", "wear_on"}]
_HOLDABLE = [n for n in lx.NOUNS if "hold" in n.tags]


@_register("state_zhe", 2.5, ("subj", "noun", "form", "thing", "on"))
def _s_state_zhe(rng: random.Random) -> Slots:
    form = rng.choice(["wear", "wear", "hold", "open"])
    if form == "open":
        switch = _pick(rng, lx.SWITCHABLE)
        return {"form": form, "thing": switch, "on": rng.random() < 0.5, "subj": None, "noun": None}
    thing = None
    noun = _pick(rng, _WEARABLE if form == "wear" else _HOLDABLE)
    return {
        "form": form,
        "subj": pick_person(rng),
        "noun": noun,
        "thing": thing,
        "on": None,
        **_sample_np(rng, noun, ["a", "a", "num"], 0.5),
    }


def _r_state_zhe(s: Slots) -> tuple[str, str]:
    if s["form"] == "open":
        t, on = s["thing"], s["on"]
        if t.cat == "open":
            return finish(f"the {t.en} is {'open' if on else 'closed'}", f"{t.zh}{'开' if on else '关'}着")
        return finish(f"the {t.en} is {'on' if on else 'off'}", f"{t.zh}{'开' if on else '关'}着")
    en_np, zh_np, _ = _np(s)
    p, n = s["subj"], s["noun"]
    if s["form"] == "hold":
        return finish(f"{p.en} {be(p)} holding {en_np}", f"{p.zh}拿着{zh_np}")
    verb = "戴" if "wear_on" in n.tags else "穿"
    return finish(f"{p.en} {be(p)} wearing {en_np}", f"{p.zh}{verb}着{zh_np}")


_COMPARABLE_PEOPLE = [a for a in lx.adjectives("person") if a.comp]


@_register("compare_people", 2.5, ("p1", "adj", "form"))
def _s_compare_people(rng: random.Random) -> Slots:
    p1 = pick_person(rng)
    return {
        "p1": p1,
        "p2": other_person(rng, p1),
        "adj": _pick(rng, _COMPARABLE_PEOPLE),
        "form": rng.choice(["comp", "comp", "as", "not_as", "question"]),
        "deg": rng.choice(["", "", "much", "a little"]),
    }


def _r_compare_people(s: Slots) -> tuple[str, str]:
    p1, p2, a, form = s["p1"], s["p2"], s["adj"], s["form"]
    if form == "comp":
        d_en, d_zh = _COMP_DEG[s["deg"]]
        return finish(f"{p1.en} {be(p1)} {d_en}{a.comp} than {p2.en_obj}", f"{p1.zh}比{p2.zh}{a.zh_c}{d_zh}")
    if form == "as":
        return finish(f"{p1.en} {be(p1)} as {a.en} as {p2.en_obj}", f"{p1.zh}和{p2.zh}一样{a.zh_c}")
    if form == "not_as":
        return finish(f"{p1.en} {be(p1)} not as {a.en} as {p2.en_obj}", f"{p1.zh}没有{p2.zh}{a.zh_c}")
    return finish(f"{be(p1)} {p1.en} {a.comp} than {p2.en_obj}", f"{p1.zh}比{p2.zh}{a.zh_c}吗", question=True)


_COMPARABLE_NOUNS = [n for n in lx.NOUNS if any(a.comp for a in lx.adjectives_for(n))]


@_register("compare_things", 2.0, ("noun", "adj", "form"))
def _s_compare_things(rng: random.Random) -> Slots:
    noun = _pick(rng, _COMPARABLE_NOUNS)
    form = rng.choice(["this_that", "this_that", "poss"])
    if form == "poss" and noun.is_container and not noun.generic_is_plural:
        form = "this_that"
    o1, o2 = rng.sample(lx.PRONOUNS, 2)
    return {
        "noun": noun,
        "adj": _pick(rng, [a for a in lx.adjectives_for(noun) if a.comp]),
        "form": form,
        "deg": rng.choice(["", "", "much", "a little"]),
        "o1": o1,
        "o2": o2,
    }


def _r_compare_things(s: Slots) -> tuple[str, str]:
    n, a = s["noun"], s["adj"]
    d_en, d_zh = _COMP_DEG[s["deg"]]
    if s["form"] == "this_that":
        en_np, zh_np, _ = np(n, "this")
        return finish(f"{en_np} is {d_en}{a.comp} than that one", f"{zh_np}比那{n.mw}{a.zh_c}{d_zh}")
    o1, o2 = s["o1"], s["o2"]
    en_np, zh_np, plural = np(n, "poss", owner=o1)
    return finish(f"{en_np} {be_n(plural)} {d_en}{a.comp} than {o2.pron}", f"{zh_np}比{o2.zh_poss}{a.zh_c}{d_zh}")


_PLACE_ADJ = lx.adjectives("place")
_SEASON_ADJ = [a for a in lx.adjectives("weather") if a.comp]


@_register("places", 1.5, ("c1", "c2", "form", "deg"))
def _s_places(rng: random.Random) -> Slots:
    form = rng.choice(["comp", "season", "pred", "far"])
    kind = rng.choice(["city", "city", "country"])
    c1, c2 = rng.sample([c for c in lx.CITIES if kind in c.tags], 2)
    s: Slots = {"form": form, "c1": c1, "c2": c2, "season": _pick(rng, lx.SEASONS), "deg": ""}
    if form == "comp":
        s["adj"] = _pick(rng, [a for a in _PLACE_ADJ if a.en != "far"])
    elif form == "season":
        s["adj"] = _pick(rng, _SEASON_ADJ)
    elif form == "pred":
        s["c1"] = _pick(rng, [p for p in lx.PLACES + lx.CITIES if p.en != "home"])
        s["c2"] = None
        s["adj"] = _pick(rng, [a for a in _PLACE_ADJ if a.en not in ("far", "old")])
        s["deg"] = _pick(rng, [d for d in ["", "very", "not", "too"] if degree_ok(s["adj"], d)])
    else:
        s["c1"] = _pick(rng, [p for p in lx.PLACES if p.en != "home"])
        s["c2"] = None
        s["adj"] = None
        s["deg"] = _pick(rng, ["", "very", "not"])
    return s


def _r_places(s: Slots) -> tuple[str, str]:
    form, c1, c2, a = s["form"], s["c1"], s["c2"], s["adj"]
    if form == "comp":
        return finish(f"{c1.en} is {a.comp} than {c2.en}", f"{c1.zh}比{c2.zh}{a.zh_c}")
    if form == "season":
        se = s["season"]
        return finish(f"{c1.en} is {a.comp} than {c2.en} in {se.en}", f"{c1.zh}{se.zh}比{c2.zh}{a.zh_c}")
    if form == "pred":
        return finish(f"{c1.en} is {pred_en(a.en, s['deg'])}", f"{c1.zh}{pred_zh(a.zh, s['deg'])}")
    return finish(f"{c1.en} is {pred_en('far', s['deg'])} from here", f"{c1.zh}离这里{pred_zh('远', s['deg'])}")


_PREDICABLE_NOUNS = [n for n in lx.NOUNS if lx.adjectives_for(n) or "color" in n.tags]


@_register("adj_thing", 3.0, ("noun", "adj", "form"))
def _s_adj_thing(rng: random.Random) -> Slots:
    noun = _pick(rng, _PREDICABLE_NOUNS)
    adjs = lx.adjectives_for(noun)
    form = rng.choice(["stmt", "stmt", "question", "color"]) if adjs else "color"
    if form == "color" and "color" not in noun.tags:
        form = "stmt"
    adj = _pick(rng, lx.adjectives("color")) if form == "color" else _pick(rng, adjs)
    dets = ["this", "that", "poss", "poss"] + ([] if noun.is_container else ["these", "those", "poss_pl"])
    if noun.is_container and not noun.generic_is_plural:
        dets = ["this", "that"]
    return {
        "noun": noun,
        "adj": adj,
        "form": form,
        "deg": _pick(rng, [d for d in _DEGREES if degree_ok(adj, d)]),
        "det": _pick(rng, dets),
        "n": 1,
        "owner": pick_person(rng, roles=False, coord=False),
    }


def _r_adj_thing(s: Slots) -> tuple[str, str]:
    a, form = s["adj"], s["form"]
    en_np, zh_np, plural = np(s["noun"], s["det"], 1, None, s["owner"])
    if form == "color":
        return finish(f"{en_np} {be_n(plural)} {a.en}", f"{zh_np}是{a.zh}的")
    if form == "question":
        return finish(f"{be_n(plural)} {en_np} {a.en}", f"{zh_np}{a.zh}吗", question=True)
    return finish(f"{en_np} {be_n(plural)} {pred_en(a.en, s['deg'])}", f"{zh_np}{pred_zh(a.zh, s['deg'])}")


_STATE_TIMES = [
    t
    for t in lx.TIMES
    if t.classes & {"past", "pres"}
    and (t.day or "morning" in t.en or "night" in t.en or "afternoon" in t.en or t.en == "now")
]
_PREDICATE_PEOPLE = [a for a in lx.adjectives("person") if a.en not in ("old", "short")]


@_register("adj_person", 2.0, ("subj", "adj", "form"))
def _s_adj_person(rng: random.Random) -> Slots:
    adj = _pick(rng, _PREDICATE_PEOPLE)
    form = rng.choice(["stmt", "stmt", "question"])
    time = None
    if adj.state and rng.random() < 0.6:
        time = _pick(rng, _STATE_TIMES)
    degs = ["", "", "very", "not", "too", "a little"] if form == "stmt" else [""]
    return {
        "subj": pick_person(rng),
        "adj": adj,
        "form": form,
        "time": time,
        "deg": _pick(rng, [d for d in degs if degree_ok(adj, d)]),
    }


def _r_adj_person(s: Slots) -> tuple[str, str]:
    p, a, t = s["subj"], s["adj"], s["time"]
    tense = "past" if t is not None and "past" in t.classes else "pres"
    en_t = f" {t.en}" if t else ""
    zh_t = t.zh if t else ""
    if s["form"] == "question":
        return finish(f"{be(p, tense)} {p.en} {a.en}{en_t}", f"{p.zh}{zh_t}{a.zh}吗", question=True)
    return finish(f"{p.en} {be(p, tense)} {pred_en(a.en, s['deg'])}{en_t}", f"{p.zh}{zh_t}{pred_zh(a.zh, s['deg'])}")


@_register("job", 1.5, ("subj", "job", "form"))
def _s_job(rng: random.Random) -> Slots:
    subj = pick_person(rng, roles=False)
    return {
        "subj": subj,
        "job": _pick(rng, lx.PROFESSIONS),
        "form": rng.choice(["is", "is_not", "question", "want", "used"]),
    }


def _r_job(s: Slots) -> tuple[str, str]:
    p, j, form = s["subj"], s["job"], s["form"]
    plural = p.agr in ("1p", "3p")
    en_j = j.extra if plural else f"{lx.article(j.en)} {j.en}"
    if form == "is":
        return finish(f"{p.en} {be(p)} {en_j}", f"{p.zh}是{j.zh}")
    if form == "is_not":
        return finish(f"{p.en} {be(p)} not {en_j}", f"{p.zh}不是{j.zh}")
    if form == "question":
        return finish(f"{be(p)} {p.en} {en_j}", f"{p.zh}是{j.zh}吗", question=True)
    if form == "want":
        return finish(f"{p.en} {pres(p, 'want')} to be {en_j}", f"{p.zh}想当{j.zh}")
    return finish(f"{p.en} used to be {en_j}", f"{p.zh}以前是{j.zh}")


_WORK_PLACES = [p for p in lx.PLACES if "work" in p.tags] + lx.CITIES


@_register("person_place", 2.0, ("subj", "place", "form"))
def _s_person_place(rng: random.Random) -> Slots:
    form = rng.choice(["from", "live", "work", "lived_for", "is_at", "was_in", "born_in"])
    if form == "work":
        place = _pick(rng, _WORK_PLACES)
    elif form == "is_at":
        place = _pick(rng, lx.PLACES)
    else:
        place = _pick(rng, lx.CITIES)
    return {
        "subj": pick_person(rng),
        "place": place,
        "form": form,
        "n": sample_count(rng, 0.3, 40),
        "now": rng.random() < 0.4,
        "time": _pick(rng, lx.times("past")),
    }


def _r_person_place(s: Slots) -> tuple[str, str]:
    p, pl, form = s["subj"], s["place"], s["form"]
    if form == "from":
        return finish(f"{p.en} {be(p)} from {pl.en}", f"{p.zh}来自{pl.zh}")
    if form == "live":
        return finish(f"{p.en} {pres(p, 'live')} in {pl.en}", f"{p.zh}住在{pl.zh}")
    if form == "work":
        return finish(f"{p.en} {pres(p, 'work')} {pl.at}", f"{p.zh}在{pl.zh}工作")
    if form == "lived_for":
        n = s["n"]
        return finish(f"{p.en} {has(p)} lived in {pl.en} for {num_en(n)} years", f"{p.zh}在{pl.zh}住了{num_zh(n)}年了")
    if form == "is_at":
        if s["now"]:
            return finish(f"{p.en} {be(p)} {pl.at} now", f"{p.zh}现在在{pl.zh}")
        return finish(f"{p.en} {be(p)} {pl.at}", f"{p.zh}在{pl.zh}")
    if form == "was_in":
        t = s["time"]
        return finish(f"{p.en} {be(p, 'past')} in {pl.en} {t.en}", f"{p.zh}{t.zh}在{pl.zh}")
    return finish(f"{p.en} {be(p, 'past')} born in {pl.en}", f"{p.zh}出生在{pl.zh}")


_DAY_WORDS = [("today", "今天", "is"), ("tomorrow", "明天", "is"), ("yesterday", "昨天", "was")]


@_register("dates", 3.0, ("form", "who", "date"))
def _s_dates(rng: random.Random) -> Slots:
    form = rng.choice(
        ["day_is", "weekday", "born_on", "held_fut", "held_past", "arrived", "birthday", "moved", "born_city_year"]
    )
    s: Slots = {"form": form, "who": None, "date": sample_date(rng), "city": _pick(rng, lx.CITIES)}
    if form in ("day_is", "weekday"):
        s["who"] = _pick(rng, _DAY_WORDS)[0]
        s["date"] = sample_date(rng, 1990, 2035) if form == "day_is" else _pick(rng, lx.WEEKDAYS)[0]
    elif form in ("held_fut", "held_past"):
        s["who"] = lx.EVENTS_BY_KEY[_pick(rng, lx.HELD_EVENTS)]
        s["date"] = sample_date(rng, 2024, 2035) if form == "held_fut" else sample_date(rng, 1990, 2024)
    elif form == "birthday":
        s["who"] = pick_person(rng, roles=False, coord=False)
        s["date"] = s["date"][1:]
    elif form in ("moved", "born_city_year"):
        s["who"] = pick_person(rng)
        s["date"] = rng.randint(1950, 2024)
    else:
        s["who"] = pick_person(rng)
    return s


def _r_dates(s: Slots) -> tuple[str, str]:
    form, who, d = s["form"], s["who"], s["date"]
    if form == "day_is":
        en_w, zh_w, verb = next(x for x in _DAY_WORDS if x[0] == who)
        return finish(f"{en_w} {verb} {date_en(d)}", f"{zh_w}是{date_zh(d)}")
    if form == "weekday":
        en_w, zh_w, verb = next(x for x in _DAY_WORDS if x[0] == who)
        return finish(f"{en_w} {verb} {d}", f"{zh_w}是{dict(lx.WEEKDAYS)[d]}")
    if form == "born_on":
        return finish(f"{who.en} {be(who, 'past')} born on {date_en(d)}", f"{who.zh}出生于{date_zh(d)}")
    if form == "held_fut":
        return finish(f"the {who.en} will be held on {date_en(d)}", f"{who.zh}将于{date_zh(d)}举行")
    if form == "held_past":
        return finish(f"the {who.en} was held on {date_en(d)}", f"{who.zh}于{date_zh(d)}举行")
    if form == "arrived":
        c = s["city"]
        return finish(f"{who.en} arrived in {c.en} on {date_en(d)}", f"{who.zh}于{date_zh(d)}到达{c.zh}")
    if form == "birthday":
        m, day = d
        return finish(f"{who.en_poss} birthday is on {lx.MONTHS[m - 1]} {day}", f"{who.zh_of}生日是{m}月{day}日")
    c = s["city"]
    if form == "moved":
        return finish(f"{who.en} moved to {c.en} in {d}", f"{who.zh}在{d}年搬到了{c.zh}")
    return finish(f"{who.en} {be(who, 'past')} born in {c.en} in {d}", f"{who.zh}{d}年出生在{c.zh}")


_DAILY = [a for a in lx.ACTIVITIES if a.hours[1] - a.hours[0] <= 16]
_CLOCK_EVENTS = ["meeting", "class", "concert", "game", "party", "exam", "interview", "wedding"]


@_register("clock", 3.0, ("form", "who", "clock"))
def _s_clock(rng: random.Random) -> Slots:
    form = rng.choice(["hab", "hab", "fut", "event", "vehicle", "now", "meet", "what_time"])
    s: Slots = {"form": form, "who": None, "act": None, "day": None, "verb": rng.random() < 0.5}
    if form in ("hab", "fut", "what_time"):
        s["who"] = pick_person(rng)
        s["act"] = _pick(rng, _DAILY)
        s["clock"] = sample_clock(rng, s["act"].hours) if form != "what_time" else None
        s["day"] = _pick(rng, lx.times("fut", day=True)) if form == "fut" else None
    elif form == "event":
        s["who"] = lx.EVENTS_BY_KEY[_pick(rng, _CLOCK_EVENTS)]
        s["clock"] = sample_clock(rng, (8, 21))
        s["day"] = _pick(rng, lx.times("fut", day=True)) if rng.random() < 0.5 else None
    elif form == "vehicle":
        s["who"] = _pick(rng, lx.VEHICLES)
        s["clock"] = sample_clock(rng, (6, 23))
    else:
        s["clock"] = sample_clock(rng, (6, 23))
        s["day"] = _pick(rng, lx.times("fut", day=True)) if form == "meet" else None
    return s


def _r_clock(s: Slots) -> tuple[str, str]:
    form, who, c, day = s["form"], s["who"], s["clock"], s["day"]
    if form == "what_time":
        a = s["act"]
        return finish(f"what time {does(who)} {who.en} {a.phrase('base')}", f"{who.zh}几点{a.zh}", question=True)
    ce, cz = clock_en(c), clock_zh(c)
    if form == "hab":
        a = s["act"]
        return finish(f"{who.en} {act_pres(who, a)} at {ce} every day", f"{who.zh}每天{cz}{a.zh}")
    if form == "fut":
        a = s["act"]
        return finish(f"{who.en} will {a.phrase('base')} at {ce} {day.en}", f"{who.zh}{day.zh}{cz}要{a.zh}")
    if form == "event":
        en_v, zh_v = ("starts", "开始") if s["verb"] else ("ends", "结束")
        if day is not None:
            return finish(f"the {who.en} will {en_v[:-1]} at {ce} {day.en}", f"{who.zh}{day.zh}{cz}{zh_v}")
        return finish(f"the {who.en} {en_v} at {ce}", f"{who.zh}{cz}{zh_v}")
    if form == "vehicle":
        en_v, zh_v = ("leaves", "出发") if s["verb"] else ("arrives", "到达")
        return finish(f"the {who.en} {en_v} at {ce}", f"{who.zh}{cz}{zh_v}")
    if form == "now":
        return finish(f"it is {ce} now", f"现在是{cz}")
    return finish(f"let's meet at {ce} {day.en}", f"我们{day.zh}{cz}见面吧")


_PRICED = [n for n in lx.NOUNS if n.tags & {"buy", "sell"}]


@_register("money", 3.0, ("form", "who", "noun", "money"))
def _s_money(rng: random.Random) -> Slots:
    form = rng.choice(["costs", "costs", "how_much", "spent", "has", "lent", "owes", "earns", "ticket"])
    noun = _pick(rng, _PRICED)
    subj = pick_person(rng)
    s: Slots = {"form": form, "who": subj, "noun": noun, "money": sample_money(rng), "obj": None}
    s.update(_sample_np(rng, noun, ["this", "that"] if form in ("costs", "how_much") else ["a", "num"], 0.2))
    if form in ("costs", "how_much") and rng.random() < 0.25 and not noun.is_container:
        s["det"] = "these" if s["det"] == "this" else "those"
        s["adj"] = None
    if form in ("lent", "owes"):
        s["obj"] = other_person(rng, subj)
    if form == "earns":
        s["money"] = sample_money(rng, 99999)
    s["only"] = rng.random() < 0.4
    s["time"] = _pick(rng, lx.times("past"))
    s["city"] = _pick(rng, lx.CITIES)
    if form in ("costs", "how_much", "ticket"):
        s["who"] = None  # the key slots hold only what the sentence says
    if form not in ("costs", "how_much", "spent"):
        s["noun"] = None
    if form == "how_much":
        s["money"] = None
    return s


def _r_money(s: Slots) -> tuple[str, str]:
    form, p, m = s["form"], s["who"], s["money"]
    if form == "how_much":
        en_np, zh_np, plural = _np(s)
        return finish(f"how much {be_n(plural)} {en_np}", f"{zh_np}多少钱", question=True)
    me, mz = money_en(m), money_zh(m)
    if form == "costs":
        en_np, zh_np, plural = _np(s)
        return finish(f"{en_np} {'cost' if plural else 'costs'} {me}", f"{zh_np}{mz}")
    if form == "spent":
        en_np, zh_np, _ = _np(s)
        t = s["time"]
        return finish(f"{p.en} spent {me} on {en_np} {t.en}", f"{p.zh}{t.zh}花{mz}买了{zh_np}")
    if form == "has":
        if s["only"]:
            return finish(f"{p.en} only {pres(p, 'have')} {me}", f"{p.zh}只有{mz}")
        return finish(f"{p.en} {has(p)} {me}", f"{p.zh}有{mz}")
    if form == "lent":
        o, t = s["obj"], s["time"]
        return finish(f"{p.en} lent {o.en_obj} {me} {t.en}", f"{p.zh}{t.zh}借给{o.zh}{mz}")
    if form == "owes":
        o = s["obj"]
        return finish(f"{p.en} {pres(p, 'owe')} {o.en_obj} {me}", f"{p.zh}欠{o.zh}{mz}")
    if form == "earns":
        return finish(f"{p.en} {pres(p, 'earn')} {me} a month", f"{p.zh}每个月挣{mz}")
    c = s["city"]
    return finish(f"the ticket to {c.en} costs {me}", f"去{c.zh}的票{mz}")


_FAMILY_OWNERS = [p for p in lx.PRONOUNS] + lx.NAMES


@_register("numbers", 2.0, ("form", "who", "n"))
def _s_numbers(rng: random.Random) -> Slots:
    form = rng.choice(["age", "age", "age_q", "family", "waited", "takes"])
    subj = pick_person(rng, plural=False) if form in ("age", "age_q") else pick_person(rng)
    s: Slots = {"form": form, "who": subj, "n": rng.randint(2, 10) if rng.random() < 0.5 else rng.randint(11, 90)}
    if form == "age_q":
        s["n"] = None
    elif form == "family":
        s["who"] = _pick(rng, _FAMILY_OWNERS)
        s["n"] = rng.randint(2, 9)
    elif form == "waited":
        s["obj"] = other_person(rng, subj)
        s["unit"] = _pick(rng, [lx.DURATIONS_BY_KEY[k] for k in ("minute", "minute", "hour", "day")])
        s["n"] = rng.randint(2, 59) if s["unit"].en == "minute" else rng.randint(2, 10)
    elif form == "takes":
        dest = _pick(rng, lx.DESTINATIONS)
        s["who"] = dest
        s["by"] = lx.TRANSPORT_BY_KEY[_pick(rng, lx.LOCAL_TRANSPORT if not dest.city else ["by train", "by plane"])]
        s["unit"] = _pick(rng, [lx.DURATIONS_BY_KEY[k] for k in ("minute", "minute", "hour")])
        s["n"] = rng.choice([5, 10, 15, 20, 25, 30, 40, 45, 50]) if s["unit"].en == "minute" else rng.randint(2, 10)
    return s


def _r_numbers(s: Slots) -> tuple[str, str]:
    form, p, n = s["form"], s["who"], s["n"]
    if form == "age":
        return finish(f"{p.en} {be(p)} {num_en(n)} years old", f"{p.zh}{num_zh(n)}岁")
    if form == "age_q":
        return finish(f"how old {be(p)} {p.en}", f"{p.zh}多大了", question=True)
    if form == "family":
        owner_zh = p.zh_poss[:-1] if p.zh_poss else p.zh
        return finish(f"there are {num_en(n)} people in {p.en_poss} family", f"{owner_zh}家有{num_zh(n)}口人")
    u = s["unit"]
    if form == "waited":
        o = s["obj"]
        return finish(f"{p.en} waited for {o.en_obj} for {num_en(n)} {u.extra}", f"{p.zh}等了{o.zh}{num_zh(n)}{u.zh}")
    by = s["by"]
    return finish(f"it takes {num_en(n)} {u.extra} to get to {p.en} {by.en}", f"{by.zh}去{p.zh}要{num_zh(n)}{u.zh}")


_GIVEABLE = [n for n in lx.NOUNS if n.tags & {"give", "buy"} and not n.tags & {"food"}]


@_register("person_verb", 2.5, ("verb", "obj", "form"))
def _s_person_verb(rng: random.Random) -> Slots:
    verb = _pick(rng, lx.PERSON_VERBS)
    forms = ["past", "past", "fut", "neg", "question", "give"] + (["prog"] if verb.extra == "durative" else [])
    form = rng.choice(forms)
    subj = pick_person(rng)
    noun = _pick(rng, _GIVEABLE)
    s: Slots = {
        "subj": subj,
        "verb": verb if form != "give" else None,
        "obj": other_person(rng, subj),
        "form": form,
        "noun": noun,
    }
    s["time"] = _pick(rng, lx.times("fut" if form == "fut" else "past"))
    s.update(_sample_np(rng, noun, ["a", "a", "num"], 0.3))
    return s


def _r_person_verb(s: Slots) -> tuple[str, str]:
    p, v, o, form, t = s["subj"], s["verb"], s["obj"], s["form"], s["time"]
    if form == "give":
        en_np, zh_np, _ = _np(s)
        return finish(f"{p.en} gave {o.en_obj} {en_np} {t.en}", f"{p.zh}{t.zh}给了{o.zh}{zh_np}")
    plain = v.zh.format(o=o.zh, le="")
    done = v.zh.format(o=o.zh, le="了")
    if form == "past":
        return finish(f"{p.en} {verb_form(v.en, 'past')} {o.en_obj} {t.en}", f"{p.zh}{t.zh}{done}")
    if form == "fut":
        return finish(f"{p.en} will {v.en} {o.en_obj} {t.en}", f"{p.zh}{t.zh}要{plain}")
    if form == "neg":
        return finish(f"{p.en} did not {v.en} {o.en_obj} {t.en}", f"{p.zh}{t.zh}没有{plain}")
    if form == "question":
        return finish(f"did {p.en} {v.en} {o.en_obj} {t.en}", f"{p.zh}{t.zh}{done}吗", question=True)
    return finish(f"{p.en} {be(p)} {verb_form(v.en, 'ing')} {o.en_obj}", f"{p.zh}在{plain}")


_GIVE_ME = [n for n in lx.NOUNS if n.tags & {"hold", "drink", "eat", "take"}]


@_register("request", 1.5, ("form", "thing", "on", "place"))
def _s_request(rng: random.Random) -> Slots:
    form = rng.choice(["give_me", "give_me", "open", "turn", "dont"])
    s: Slots = {
        "form": form,
        "thing": None,
        "on": rng.random() < 0.5 if form in ("open", "turn") else None,
        "place": None,
    }
    if form == "give_me":
        noun = _pick(rng, _GIVE_ME)
        s["thing"] = noun
        s.update(_sample_np(rng, noun, ["a", "a", "num", "this", "that"], 0.2))
    elif form == "open":
        s["thing"] = _pick(rng, [w for w in lx.SWITCHABLE if w.cat == "open"])
    elif form == "turn":
        s["thing"] = _pick(rng, [w for w in lx.SWITCHABLE if w.cat == "switch"])
    else:
        act = _pick(rng, [a for a in lx.ACTIVITIES if not a.tags & _ROUTINE])
        s["thing"] = act
        s["place"] = _place_for(rng, act, 0.5)
    return s


def _r_request(s: Slots) -> tuple[str, str]:
    form, x, on = s["form"], s["thing"], s["on"]
    if form == "give_me":
        en_np, zh_np, _ = _np(s, "thing")
        return finish(f"please give me {en_np}", f"请给我{zh_np}")
    if form == "open":
        return finish(f"please {'open' if on else 'close'} the {x.en}", f"请{'打开' if on else '关上'}{x.zh}")
    if form == "turn":
        return finish(f"please turn {'on' if on else 'off'} the {x.en}", f"请{'打开' if on else '关掉'}{x.zh}")
    pl = s["place"]
    if pl is None:
        return finish(f"please do not {x.phrase('base')}", f"请不要{x.zh}")
    return finish(f"please do not {x.phrase('base')} {pl.at}", f"请不要在{pl.zh}{x.zh}")


# --------------------------------------------------------------------------------------------------
# Registry, splits, generation, TSV
# --------------------------------------------------------------------------------------------------

for _name, _weight, _key_slots, _sampler in _PENDING:
    TEMPLATES[_name] = Template(_name, _weight, _key_slots, _sampler, globals()[f"_r_{_name}"])
_NAMES = list(TEMPLATES)
_WEIGHTS = [TEMPLATES[n].weight for n in _NAMES]


def split_of(template: str, slots: Slots) -> str:
    """ "train" or "test": a stable hash of the template and its key slots decides."""
    t = TEMPLATES[template]
    key = "|".join([template] + [_key(slots.get(k)) for k in t.key_slots])
    h = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:4], "big")
    return "test" if h % 100 < TEST_PERCENT else "train"


def render(template: str, slots: Slots) -> tuple[str, str]:
    """(English, Chinese) of one template with explicit slot values."""
    return TEMPLATES[template].render(slots)


@dataclass(frozen=True)
class Sample:
    template: str
    slots: Slots
    en: str
    zh: str


def generate_samples(n: int, seed: int, split: str = "train", *, unique: bool = False) -> list[Sample]:
    """n samples of the split ("train", "test" or "all"), deterministic for (seed, split)."""
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    rng = random.Random(f"enzh-demo:{split}:{seed}")
    out: list[Sample] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise RuntimeError(f"could not draw {n} {'unique ' if unique else ''}{split} samples")
        name = rng.choices(_NAMES, _WEIGHTS)[0]
        slots = TEMPLATES[name].sample(rng)
        if split != "all" and split_of(name, slots) != split:
            continue
        en, zh = TEMPLATES[name].render(slots)
        if unique:
            if en in seen:
                continue
            seen.add(en)
        out.append(Sample(name, slots, en, zh))
    return out


def generate_pairs(
    n: int, seed: int = DEFAULT_TRAIN_SEED, split: str = "train", *, unique: bool = False
) -> list[tuple[str, str]]:
    """n (English, Chinese) pairs of the split, deterministic for (seed, split)."""
    return [(s.en, s.zh) for s in generate_samples(n, seed, split, unique=unique)]


def write_tsv(path: str | Path, pairs: Iterable[tuple[str, str]]) -> Path:
    """One "source<TAB>target" line per pair (English<TAB>Chinese unless reversed), UTF-8, no header."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for en, zh in pairs:
            if "\t" in en or "\t" in zh or "\n" in en or "\n" in zh:
                raise ValueError(f"pair contains a tab or newline: {en!r} / {zh!r}")
            f.write(f"{en}\t{zh}\n")
    return path


def read_tsv(path: str | Path) -> list[tuple[str, str]]:
    pairs = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            en, zh = line.split("\t")
            pairs.append((en, zh))
    return pairs


def write_test_set(path: str | Path, n: int = 1000, seed: int = DEFAULT_TEST_SEED, *, reverse: bool = False) -> Path:
    """The held-out test set: n distinct test-split pairs (sources never seen in training); ``reverse``: Chinese
    first, the test set of the Chinese->English demo model."""
    pairs = generate_pairs(n, seed, "test", unique=True)
    return write_tsv(path, [(zh, en) for en, zh in pairs] if reverse else pairs)
