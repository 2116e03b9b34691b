"""Measure the confidence scores and the word alignments on the embedded demo models (docs/quality.md).

``python -m enzh.tools.quality_report --out docs/quality.md`` writes the measured part of docs/quality.md
(between its ``<!-- quality-report -->`` markers; the page is created when missing):

* **confidence**, each direction: in-domain = the demo's held-out sentences (the model directory's test.tsv,
  first column), out-of-domain = the news-like sentences written for this project in ``enzh/tools/data``
  (ood_en.txt, ood_zh.txt). The ROC AUC of the score at telling them apart (1.0: every out-of-domain sentence
  scores below every in-domain one), the rate each flag fires on each set at the configured threshold
  (:data:`enzh.runtime.confidence.DEFAULT_THRESHOLD`), and the threshold that maximises Youden's J (true
  positive rate minus false positive rate) over both directions, which is how the default was chosen.
* **alignments**, each direction: gold pairs from the demo corpus generator (:mod:`enzh.demo.corpus`), which
  knows every slot's English and Chinese: for each single-word person name, place and noun slot found exactly
  once on both sides of a held-out sentence (the model's translation), the English word is paired with every
  character of its Chinese. Precision counts the predicted pairs that touch a gold word (its source word or one
  of its characters), recall the gold pairs predicted. *Strict* judges every such pair; *judged* leaves out the
  pairs no gold can decide: a noun's measure word (这**盏**灯: chosen by the noun) and punctuation, which in
  this project's words is part of the English word before it (``key.``).
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.confidence import DEFAULT_THRESHOLD, FLAGS, Confidence
from enzh.runtime.cpu import cpu_features
from enzh.runtime.engine import Engine
from enzh.runtime.words import MIN_SCORE, MIN_SCORE_AGREEMENT, WordAlignment

DATA = Path(__file__).resolve().parent / "data"
MARK_BEGIN = "<!-- quality-report: begin (python -m enzh.tools.quality_report --out docs/quality.md) -->"
MARK_END = "<!-- quality-report: end -->"


def read_sentences(path: Path) -> list[str]:
    """The sentences of a data file: one a line, blank lines and ``#`` comments left out."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def roc_auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """The probability that a positive scores above a negative (ties count half): the area under the ROC curve
    of telling positives (in-domain) from negatives (out-of-domain) by score."""
    pos = np.asarray(positives, dtype=np.float64)
    neg = np.asarray(negatives, dtype=np.float64)
    if not len(pos) or not len(neg):
        raise ValueError("roc_auc needs at least one score of each kind")
    above = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(above / (len(pos) * len(neg)))


def youden(thresholds: Sequence[float], sets: Sequence[tuple[Sequence[float], Sequence[float]]]) -> float:
    """The threshold (flag: score < threshold) with the highest mean J over ``sets`` of (in, out) scores."""

    def j(threshold: float) -> float:
        return float(
            np.mean([np.mean(np.asarray(o) < threshold) - np.mean(np.asarray(i) < threshold) for i, o in sets])
        )

    return max(thresholds, key=j)


@dataclass(frozen=True, kw_only=True)
class ConfidenceRun:
    direction: str
    inside: list[Confidence]
    outside: list[Confidence]
    exact: list[bool]  # per in-domain sentence: whether the translation equals the reference


def confidence_run(engine: Engine, direction: str, inside: list[tuple[str, str]], outside: list[str]) -> ConfidenceRun:
    found = engine.translate_detailed([*(source for source, _ in inside), *outside])
    scored = [t.confidence for t in found]
    if any(c is None for c in scored):
        raise ValueError(f"{engine.info.label} returned translations without a confidence")
    kept = [c for c in scored if c is not None]
    exact = [t.text == reference for t, (_, reference) in zip(found, inside, strict=False)]
    return ConfidenceRun(direction=direction, inside=kept[: len(inside)], outside=kept[len(inside) :], exact=exact)


def _rate(found: Sequence[Confidence], test: object) -> str:
    hits = sum(1 for c in found if (c.low if test is None else test in c.flags))
    return f"{100 * hits / len(found):.1f} %"


def confidence_section(runs: Sequence[ConfidenceRun]) -> list[str]:
    lines = [
        "### Confidence: in-domain against out-of-domain",
        "",
        f"Threshold configured: `DEFAULT_THRESHOLD = {DEFAULT_THRESHOLD}` (enzh/runtime/confidence.py).",
        "",
        "| direction | in-domain | out-of-domain | ROC AUC of the score | mean score in / out | "
        + " | ".join(f"`{f}` in / out" for f in FLAGS)
        + " | any flag in / out |",
        "|---|---|---|---|---|" + "---|" * len(FLAGS) + "---|",
    ]
    for run in runs:
        inside = [c.score for c in run.inside]
        outside = [c.score for c in run.outside]
        cells = [
            run.direction,
            str(len(inside)),
            str(len(outside)),
            f"{roc_auc(inside, outside):.3f}",
            f"{np.mean(inside):.3f} / {np.mean(outside):.3f}",
            *(f"{_rate(run.inside, f)} / {_rate(run.outside, f)}" for f in FLAGS),
            f"{_rate(run.inside, None)} / {_rate(run.outside, None)}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Within the in-domain set, the score against the model's own mistakes (translations that differ from the "
        "reference):",
        "",
        "| direction | exact | not exact | ROC AUC of the score | not exact flagged | exact flagged |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        right = [c for c, ok in zip(run.inside, run.exact, strict=True) if ok]
        wrong = [c for c, ok in zip(run.inside, run.exact, strict=True) if not ok]
        auc = f"{roc_auc([c.score for c in right], [c.score for c in wrong]):.3f}" if right and wrong else "-"
        flagged = _rate(wrong, None) if wrong else "-"
        lines.append(f"| {run.direction} | {len(right)} | {len(wrong)} | {auc} | {flagged} | {_rate(right, None)} |")
    grid = [round(-x, 2) for x in np.arange(0.05, 1.51, 0.01)]
    best = youden(grid, [([c.score for c in r.inside], [c.score for c in r.outside]) for r in runs])
    lines += [
        "",
        f"The threshold of the highest mean Youden's J over these directions (a grid of -0.05 .. -1.50 by 0.01): "
        f"**{best}**.",
    ]
    return lines


# -- alignments ----------------------------------------------------------------------------------------------


@dataclass
class Counts:
    true: int = 0
    false: int = 0
    missed: int = 0
    sentences: int = 0
    slots: int = 0

    def precision(self) -> float:
        return self.true / max(1, self.true + self.false)

    def recall(self) -> float:
        return self.true / max(1, self.true + self.missed)


def _plain(word: str) -> str:
    return re.sub(r"[^\w']", "", word).lower()


def alignment_counts(
    engine: Engine, samples: Sequence[object], english_source: bool, reverse: Engine | None = None
) -> tuple[Counts, Counts]:
    """(strict, judged) counts over ``samples`` (enzh.demo.corpus.Sample), translated by ``engine``: English
    to Chinese when ``english_source``, else the other way; ``reverse``: the model of the other direction, which
    aligns both ways (``translate_detailed(reverse=...)``)."""
    sources = [s.en if english_source else s.zh for s in samples]  # type: ignore[attr-defined]
    extra: dict[str, Any] = {"reverse": reverse, "reverse_target": "en" if english_source else "zh"}
    found = engine.translate_detailed(sources, alignments=True, **(extra if reverse is not None else {}))
    strict, judged = Counts(), Counts()
    for sample, source, translation in zip(samples, sources, found, strict=True):
        if translation.alignment is not None:
            _count(sample, source, translation.text, translation.alignment, english_source, strict, judged)
    judged.sentences, judged.slots = strict.sentences, strict.slots
    return strict, judged


def alignment_sweep(
    engine: Engine,
    samples: Sequence[object],
    english_source: bool,
    thresholds: Sequence[float],
    reverse: Engine | None = None,
) -> list[tuple[Counts, Counts]]:
    """(strict, judged) counts for each ``min_score`` of ``thresholds``: the samples (one sentence each) are
    translated and aligned once (as :meth:`enzh.runtime.translator.Translator.translate_detailed` aligns a
    sentence), the pairs chosen again for each threshold."""
    from enzh.runtime.words import SentencePair, align_words

    sources = [s.en if english_source else s.zh for s in samples]  # type: ignore[attr-defined]
    texts = [t.text for t in engine.translate_detailed(sources)]
    forward = engine.align_texts(list(zip(sources, texts, strict=True)), engine.resolve_target(None))
    backs = (
        reverse.align_texts(list(zip(texts, sources, strict=True)), reverse.resolve_target(None))
        if reverse is not None
        else [None] * len(sources)
    )
    out = []
    for threshold in thresholds:
        strict, judged = Counts(), Counts()
        for sample, source, text, ahead, back in zip(samples, sources, texts, forward, backs, strict=True):
            if ahead is None:
                continue
            pair = SentencePair(ahead.source, ahead.target, ahead.weights, 0, 0)
            other = None if back is None else SentencePair(back.source, back.target, back.weights, 0, 0)
            found = align_words(
                source, text, [pair], min_score=threshold, reverse=[other] if reverse is not None else None
            )
            _count(sample, source, text, found, english_source, strict, judged)
        judged.sentences, judged.slots = strict.sentences, strict.slots
        out.append((strict, judged))
    return out


def _count(
    sample: object,
    source: str,
    text: str,
    alignment: WordAlignment,
    english_source: bool,
    strict: Counts,
    judged: Counts,
) -> None:
    """Add one sentence's pairs to the counts (see the module docstring)."""
    from enzh.demo.lexicon import Noun

    english, chinese = (source, text) if english_source else (text, source)
    en_words = alignment.source_words if english_source else alignment.target_words
    zh_words = alignment.target_words if english_source else alignment.source_words
    en_plain = [_plain(english[slice(*w)]) for w in en_words]
    zh_text = [chinese[slice(*w)] for w in zh_words]
    gold: set[tuple[int, int]] = set()  # (English word, Chinese word)
    undecided: set[tuple[int, int]] = set()
    slots = sample.slots  # type: ignore[attr-defined]
    for value in slots.values():
        pair = _slot_pair(value)
        if pair is None:
            continue
        forms, zh = pair
        english_at = [i for i, w in enumerate(en_plain) if w in forms]
        starts = [m.start() for m in re.finditer(re.escape(zh), chinese)]
        if len(english_at) != 1 or len(starts) != 1:
            continue
        strict.slots += 1
        chars = [j for j, (lo, _) in enumerate(zh_words) if starts[0] <= lo < starts[0] + len(zh)]
        gold |= {(english_at[0], j) for j in chars}
        for j, word in enumerate(zh_text):
            measure = isinstance(value, Noun) and word == value.mw
            if measure or unicodedata.category(word[0]).startswith("P"):
                undecided.add((english_at[0], j))
    if not gold:
        return
    strict.sentences += 1
    pairs = {(s, t) if english_source else (t, s) for s, t in alignment.pairs}
    gold_en = {e for e, _ in gold}
    gold_zh = {z for _, z in gold}
    touching = {p for p in pairs if p[0] in gold_en or p[1] in gold_zh}
    for counts, predicted in ((strict, touching), (judged, touching - undecided)):
        counts.true += len(predicted & gold)
        counts.false += len(predicted - gold)
        counts.missed += len(gold - predicted)


def _slot_pair(value: object) -> tuple[set[str], str] | None:
    """The English forms and the Chinese of a gold slot value (None: not a single-word name, place or noun)."""
    from enzh.demo.lexicon import Noun, Person, Place

    if isinstance(value, Person) and value.kind != "name":
        return None
    if not isinstance(value, Person | Place | Noun):
        return None
    forms = {value.en.lower().removeprefix("the ")}
    if isinstance(value, Noun):
        forms.add(value.plural.lower())
    if any(" " in form for form in forms):
        return None
    return forms, value.zh


def alignment_section(rows: Sequence[tuple[str, str, Counts, Counts]]) -> list[str]:
    lines = [
        "### Word alignments: slot words of the held-out sentences",
        "",
        f"`MIN_SCORE = {MIN_SCORE}` (one model), `MIN_SCORE_AGREEMENT = {MIN_SCORE_AGREEMENT}` (both directions' "
        "attention averaged: `Translators`, or `translate_detailed(reverse=...)`); enzh/runtime/words.py. CPU: "
        f"{cpu_features().summary()}.",
        "",
        "| direction | aligned by | sentences with gold | slots | precision strict | recall strict | "
        "precision judged | recall judged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for direction, models, strict, judged in rows:
        lines.append(
            f"| {direction} | {models} | {strict.sentences} | {strict.slots} | {strict.precision():.3f} | "
            f"{strict.recall():.3f} | {judged.precision():.3f} | {judged.recall():.3f} |"
        )
    return lines


DEV_SEED = 3  # the dev sentences' seed (the held-out set is DEFAULT_TEST_SEED's)


def dev_samples(count: int) -> list[Any]:
    """``count`` sentences of the corpus's test split drawn with :data:`DEV_SEED`, none of them one of the 1000
    held-out sentences the report measures on: the sentences the thresholds are tuned on."""
    from enzh.demo.corpus import DEFAULT_TEST_SEED, generate_samples

    held_out = {s.en for s in generate_samples(1000, DEFAULT_TEST_SEED, "test", unique=True)}
    drawn = generate_samples(2 * count, DEV_SEED, "test", unique=True)
    return [s for s in drawn if s.en not in held_out][:count]


def sweep_table(count: int, thresholds: Sequence[float]) -> str:
    """The dev sentences' precision and recall for each ``min_score`` (markdown)."""
    from enzh.runtime.default_model import default_model_dirs
    from enzh.runtime.translator import Translator

    en_zh_dir, zh_en_dir = list(default_model_dirs())[:2]
    en_zh, zh_en = Translator.load(en_zh_dir), Translator.load(zh_en_dir)
    samples = dev_samples(count)
    lines = [
        f"{len(samples)} dev sentences (`dev_samples`, seed {DEV_SEED}): precision strict / judged, recall; CPU: "
        f"{cpu_features().summary()}",
        "",
        "| `min_score` | " + " | ".join(f"{t:g}" for t in thresholds) + " |",
        "|---|" + "---|" * len(thresholds),
    ]
    for direction, engine, back, english in (
        ("en->zh", en_zh, zh_en, True),
        ("zh->en", zh_en, en_zh, False),
    ):
        for models, reverse in (("one model", None), ("both", back)):
            found = alignment_sweep(engine, samples, english, thresholds, reverse=reverse)
            cells = [f"{s.precision():.3f} / {j.precision():.3f}, {j.recall():.3f}" for s, j in found]
            lines.append(f"| {direction} {models} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(limit: int | None = None) -> str:
    from enzh.demo.corpus import DEFAULT_TEST_SEED, generate_samples, read_tsv
    from enzh.runtime.default_model import default_model_dirs
    from enzh.runtime.translator import Translator

    en_zh_dir, zh_en_dir = list(default_model_dirs())[:2]
    en_zh, zh_en = Translator.load(en_zh_dir), Translator.load(zh_en_dir)
    runs = []
    for engine, directory, ood, direction in (
        (en_zh, en_zh_dir, "ood_en.txt", "en->zh"),
        (zh_en, zh_en_dir, "ood_zh.txt", "zh->en"),
    ):
        inside = read_tsv(Path(directory) / "test.tsv")[:limit]
        runs.append(confidence_run(engine, direction, inside, read_sentences(DATA / ood)[:limit]))
    samples = generate_samples(limit or 1000, DEFAULT_TEST_SEED, "test", unique=True)
    aligned = [
        ("en->zh", "en->zh model", *alignment_counts(en_zh, samples, english_source=True)),
        ("en->zh", "both models", *alignment_counts(en_zh, samples, english_source=True, reverse=zh_en)),
        ("zh->en", "zh->en model", *alignment_counts(zh_en, samples, english_source=False)),
        ("zh->en", "both models", *alignment_counts(zh_en, samples, english_source=False, reverse=en_zh)),
    ]
    beams = f"beam {en_zh.info.default_beam_size} (the models' default)"
    return "\n".join(
        [
            MARK_BEGIN,
            "",
            f"Measured on the embedded demo models, {beams}, by `python -m enzh.tools.quality_report --out "
            "docs/quality.md`.",
            "",
            *confidence_section(runs),
            "",
            *alignment_section(aligned),
            "",
            MARK_END,
        ]
    )


def write(out: Path, text: str) -> None:
    """Replace the measured part of ``out`` (between the markers), or write it alone when the page is new."""
    if out.exists():
        page = out.read_text(encoding="utf-8")
        if MARK_BEGIN in page and MARK_END in page:
            head, rest = page.split(MARK_BEGIN, 1)
            tail = rest.split(MARK_END, 1)[1]
            out.write_text(head + text + tail, encoding="utf-8")
            return
        out.write_text(page.rstrip("\n") + "\n\n" + text + "\n", encoding="utf-8")
        return
    out.write_text("# Translation quality signals\n\n" + text + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the page to write into (default: print the tables)")
    parser.add_argument("--limit", type=int, help="at most this many sentences of each set (a quick look)")
    parser.add_argument(
        "--sweep",
        type=float,
        nargs="+",
        metavar="MIN_SCORE",
        help="print the alignments' precision and recall on the dev sentences (not the held-out ones) for each of "
        "these thresholds instead (--limit: how many dev sentences, default 500)",
    )
    args = parser.parse_args(argv)
    if args.sweep:
        if any(not 0 <= t <= 1 for t in args.sweep):
            parser.error(f"--sweep thresholds must be between 0 and 1, got {args.sweep}")
        print(sweep_table(args.limit or 500, args.sweep))
        return 0
    text = report(args.limit)
    if args.out is None:
        print(text)
    else:
        write(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
