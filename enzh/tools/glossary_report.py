"""Measure glossary enforcement on the embedded demo models (docs/quality.md, "Glossaries").

``python -m enzh.tools.glossary_report --out docs/quality.md`` writes the measured part of the page's glossary
section (between its ``<!-- glossary-report -->`` markers).

The test set is built from the demo corpus: the held-out sentences (each model directory's test.tsv) that hold
a person's name or a city of the corpus lexicon (:mod:`enzh.demo.lexicon`), with a glossary mapping each of
those source words to a fixed rendering the model does not write (:data:`EN_ZH` and :data:`ZH_EN`, e.g. Tom →
汤马斯 where the model writes 汤姆, Beijing → 北京市), every rendering written with pieces of the demo target
vocabulary. The reference of a sentence is its corpus translation with the lexicon's rendering replaced by the
glossary's. Figures:

* **term accuracy**: the share of (sentence, term) pairs whose translation holds the term's target exactly as
  many times as the source holds its source term; with and without the glossary (without: how often the model
  writes the fixed rendering by itself);
* **chrF of the rest**: corpus chrF (sacrebleu) of the translations against the references with every term's
  target (with the glossary) or the lexicon's rendering (without) deleted from both sides, so that only the
  words around the terms are compared;
* **time**: the set translated with and without the glossary, the two alternating, best of ``--rounds`` runs
  each (wall clock and the process's CPU time), at beam 1 (greedy; with the glossary the constrained search's
  beam of ``GREEDY_BEAMS``) and beam 4, on the CPU named.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from enzh.runtime.constrained import GREEDY_BEAMS
from enzh.runtime.engine import Engine
from enzh.runtime.glossary import Entry, Glossary

MARK_BEGIN = "<!-- glossary-report: begin (python -m enzh.tools.glossary_report --out docs/quality.md) -->"
MARK_END = "<!-- glossary-report: end -->"

# English source word -> (the lexicon's rendering, the glossary's fixed rendering). The fixed ones are other
# transliterations or the official long forms, written with characters of the demo target vocabulary.
EN_ZH: dict[str, tuple[str, str]] = {
    "Tom": ("汤姆", "汤马斯"),
    "Mary": ("玛丽", "玛莉"),
    "John": ("约翰", "强尼"),
    "Lucy": ("露西", "露丝"),
    "Anna": ("安娜", "阿娜"),
    "David": ("大卫", "大伟"),
    "Peter": ("彼得", "彼特"),
    "Emma": ("艾玛", "爱玛"),
    "Mike": ("迈克", "米克"),
    "Linda": ("琳达", "林达"),
    "Kevin": ("凯文", "开文"),
    "Alice": ("爱丽丝", "艾丽丝"),
    "Susan": ("苏珊", "苏山"),
    "Paul": ("保罗", "保尔"),
    "Beijing": ("北京", "北京市"),
    "Shanghai": ("上海", "上海市"),
    "Guangzhou": ("广州", "广州市"),
    "Shenzhen": ("深圳", "深圳市"),
    "Hangzhou": ("杭州", "杭州市"),
    "Tianjin": ("天津", "天津市"),
    "Tokyo": ("东京", "东京都"),
    "New York": ("纽约", "纽约市"),
    "London": ("伦敦", "伦敦市"),
}
# Chinese source word -> (the lexicon's English, the glossary's fixed English).
ZH_EN: dict[str, tuple[str, str]] = {
    "汤姆": ("Tom", "Thomas"),
    "彼得": ("Peter", "Pete"),
    "露西": ("Lucy", "Lucie"),
    "北京": ("Beijing", "Peking"),
    "广州": ("Guangzhou", "Canton"),
    "东京": ("Tokyo", "Tokio"),
}


@dataclass(frozen=True)
class Case:
    source: str
    reference: str  # with the glossary's renderings
    plain_reference: str  # the corpus's own
    terms: tuple[tuple[str, str, str, int], ...]  # (source term, natural rendering, fixed rendering, occurrences)


def build_cases(pairs: Sequence[tuple[str, str]], table: Mapping[str, tuple[str, str]]) -> list[Case]:
    """The sentences of ``pairs`` (source, reference) holding a term of ``table`` whose natural rendering the
    reference holds as often, with the references rewritten to the fixed renderings."""
    glossary = Glossary.from_mapping({source: fixed for source, (_, fixed) in table.items()})
    cases = []
    for source, reference in pairs:
        found: dict[str, int] = {}
        for _, _, entry in glossary.matches(source):
            found[entry.source] = found.get(entry.source, 0) + 1
        if not found:
            continue
        if any(reference.count(table[term][0]) != count for term, count in found.items()):
            continue  # the reference words the term another way: no gold for it
        rewritten = reference
        for term in found:
            rewritten = rewritten.replace(table[term][0], table[term][1])
        terms = tuple((term, table[term][0], table[term][1], count) for term, count in found.items())
        cases.append(Case(source, rewritten, reference, terms))
    return cases


def _without(text: str, words: Sequence[str]) -> str:
    for word in sorted(words, key=len, reverse=True):
        text = text.replace(word, " ")
    return " ".join(text.split())


def chrf(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    from sacrebleu.metrics import CHRF

    return float(CHRF().corpus_score(list(hypotheses), [list(references)]).score)


def kind(case: Case) -> str:
    """``variant`` when every fixed rendering of the sentence begins as the model's own does (汤马斯 for 汤姆,
    北京市 for 北京), ``other`` when one does not (阿娜 for 安娜)."""
    return "variant" if all(fixed[0] == natural[0] for _, natural, fixed, _ in case.terms) else "other"


def occurrences(text: str, term: str) -> int:
    """How many times ``text`` holds ``term`` (as a word of its own where the term is written with spaces:
    Pete is not in Peter)."""
    return sum(1 for _ in Entry(source=term, target=term, case_sensitive=True).pattern().finditer(text))


@dataclass(frozen=True)
class Run:
    direction: str
    beam: int
    subset: str
    sentences: int
    terms: int
    accuracy: float  # with the glossary
    accuracy_without: float
    chrf_rest: float
    chrf_rest_without: float
    flagged: int  # translations with the glossary flag


@dataclass(frozen=True)
class Timed:
    texts: list[str]
    flagged: list[bool]  # which have the glossary flag
    wall: float  # the best wall-clock seconds of the rounds
    cpu: float  # the best CPU seconds of this process (all its threads) of the rounds


def translate_both(
    engine: Engine, sources: Sequence[str], glossary: Glossary, beam: int, rounds: int
) -> tuple[Timed, Timed]:
    """``sources`` translated without and with ``glossary``, the two runs alternating ``rounds`` times (so that
    both see the same load on a shared machine); the best times of each."""
    walls: dict[bool, list[float]] = {False: [], True: []}
    cpus: dict[bool, list[float]] = {False: [], True: []}
    found: dict[bool, list[Any]] = {}
    for _ in range(rounds):
        for use in (False, True):
            wall, cpu = time.perf_counter(), time.process_time()
            found[use] = engine.translate_detailed(sources, beam_size=beam, glossary=glossary if use else None)
            walls[use].append(time.perf_counter() - wall)
            cpus[use].append(time.process_time() - cpu)

    def timed(use: bool) -> Timed:
        flagged = [t.confidence is not None and "glossary" in t.confidence.flags for t in found[use]]
        return Timed([t.text for t in found[use]], flagged, min(walls[use]), min(cpus[use]))

    return timed(False), timed(True)


def score(
    direction: str,
    beam: int,
    subset: str,
    cases: Sequence[Case],
    with_texts: Sequence[str],
    without_texts: Sequence[str],
    flagged: int,
) -> Run:
    pairs = [(i, term) for i, case in enumerate(cases) for term in case.terms]

    def accuracy(texts: Sequence[str]) -> float:
        hits = sum(1 for i, (_, _, fixed, count) in pairs if occurrences(texts[i], fixed) == count)
        return 100.0 * hits / max(1, len(pairs))

    fixed_words = [[t[2] for t in c.terms] for c in cases]
    natural_words = [[t[1] for t in c.terms] for c in cases]
    rest = chrf(
        [_without(h, w) for h, w in zip(with_texts, fixed_words, strict=True)],
        [_without(c.reference, w) for c, w in zip(cases, fixed_words, strict=True)],
    )
    rest_without = chrf(
        [_without(h, w) for h, w in zip(without_texts, natural_words, strict=True)],
        [_without(c.plain_reference, w) for c, w in zip(cases, natural_words, strict=True)],
    )
    return Run(
        direction,
        beam,
        subset,
        len(cases),
        len(pairs),
        accuracy(with_texts),
        accuracy(without_texts),
        rest,
        rest_without,
        flagged,
    )


def report(limit: int | None = None, rounds: int = 5) -> str:
    from enzh.demo.corpus import read_tsv
    from enzh.runtime.cpu import cpu_features
    from enzh.runtime.default_model import default_model_dirs
    from enzh.runtime.translator import Translator

    en_zh_dir, zh_en_dir = list(default_model_dirs())[:2]
    runs: list[Run] = []
    times: list[tuple[str, int, Timed, Timed]] = []
    sizes = []
    for directory, table, direction in ((en_zh_dir, EN_ZH, "en->zh"), (zh_en_dir, ZH_EN, "zh->en")):
        engine = Translator.load(directory)
        cases = build_cases(read_tsv(Path(directory) / "test.tsv"), table)[:limit]
        glossary = Glossary.from_mapping({source: fixed for source, (_, fixed) in table.items()})
        sizes.append((direction, len(table)))
        sources = [c.source for c in cases]
        for beam in (1, 4):
            without, with_ = translate_both(engine, sources, glossary, beam, rounds)
            times.append((direction, beam, with_, without))
            plain, held, flagged = without.texts, with_.texts, with_.flagged
            for subset in ("all", "variant", "other"):
                chosen = [i for i, c in enumerate(cases) if subset == "all" or kind(c) == subset]
                if chosen:
                    runs.append(
                        score(
                            direction,
                            beam,
                            subset,
                            [cases[i] for i in chosen],
                            [held[i] for i in chosen],
                            [plain[i] for i in chosen],
                            sum(1 for i in chosen if flagged[i]),
                        )
                    )
    rows = [
        f"| {r.direction} | {r.beam}{f' ({GREEDY_BEAMS} with the glossary)' if r.beam == 1 else ''} | {r.subset} "
        f"| {r.sentences} | {r.terms} | **{r.accuracy:.1f} %** | {r.accuracy_without:.1f} % | {r.chrf_rest:.2f} | "
        f"{r.chrf_rest_without:.2f} | **{r.chrf_rest - r.chrf_rest_without:+.2f}** |"
        for r in runs
    ]
    time_rows = [
        f"| {d} | {b}{f' ({GREEDY_BEAMS} with the glossary)' if b == 1 else ''} | {held.wall:.2f} | {plain.wall:.2f} "
        f"| **{held.wall / plain.wall:.2f}x** | {held.cpu:.2f} | {plain.cpu:.2f} | **{held.cpu / plain.cpu:.2f}x** |"
        for d, b, held, plain in times
    ]
    glossaries = ", ".join(f"{d}: {n} terms" for d, n in sizes)
    return "\n".join(
        [
            MARK_BEGIN,
            "",
            f"Measured by `python -m enzh.tools.glossary_report --out docs/quality.md` (best of {rounds} rounds; "
            f"glossaries {glossaries}: `EN_ZH` and `ZH_EN` in enzh/tools/glossary_report.py), CPU: "
            f"{cpu_features().summary()}.",
            "",
            "| direction | beam | renderings | sentences | terms | term accuracy with glossary | without"
            " | chrF of the rest with | without | difference |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Time of the whole set (every sentence holds a term), with and without the glossary, the two runs"
            f" alternating; best of {rounds} each, wall clock and this process's CPU time (all its threads: steadier"
            " than the wall clock when other work shares the machine):",
            "",
            "| direction | beam | wall s with | wall s without | wall ratio | CPU s with | CPU s without | CPU ratio |",
            "|---|---|---|---|---|---|---|---|",
            *time_rows,
            "",
            MARK_END,
        ]
    )


def write(out: Path, text: str) -> None:
    """Replace the measured part of ``out`` (between the markers), or add it at the end."""
    page = out.read_text(encoding="utf-8") if out.exists() else ""
    if MARK_BEGIN in page and MARK_END in page:
        head, rest = page.split(MARK_BEGIN, 1)
        out.write_text(head + text + rest.split(MARK_END, 1)[1], encoding="utf-8")
        return
    out.write_text(page.rstrip("\n") + "\n\n" + text + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the page to write into (default: print the table)")
    parser.add_argument("--limit", type=int, help="at most this many sentences per direction (a quick look)")
    parser.add_argument("--rounds", type=int, default=5, help="timed runs of each setting; the best counts")
    args = parser.parse_args(argv)
    text = report(args.limit, args.rounds)
    if args.out is None:
        print(text)
    else:
        write(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
