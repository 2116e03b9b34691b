"""The segmentation table: hard English cases, how each candidate splitter does, as markdown.

``python -m enzh.tools.segmentation_report --out docs/segmentation.md`` regenerates docs/segmentation.md with
every candidate that is importable (nupunkt is enzh's own dependency; install pysbd, sentencex, blingfire to
compare them). The cases are enzh's own, written for this table; tests/runtime/test_segment.py checks enzh's
splitter against them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from enzh.runtime.segment import split_sentences


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    expected: tuple[str, ...]


CASES = (
    Case(
        "mr-decimal",
        "Mr. Wang is taller than me. The price is 3.5 dollars.",
        ("Mr. Wang is taller than me.", "The price is 3.5 dollars."),
    ),
    Case("dr-pm-mid", "Dr. Smith arrived at 5 p.m. on Friday.", ("Dr. Smith arrived at 5 p.m. on Friday.",)),
    Case("am-mid", "They arrived at 10 a.m. and left at noon.", ("They arrived at 10 a.m. and left at noon.",)),
    Case(
        "am-end-question",
        "The game ends at 11:20 a.m. Where is my wife from?",
        ("The game ends at 11:20 a.m.", "Where is my wife from?"),
    ),
    Case("pm-end", "We met at 5 p.m. Then we went home.", ("We met at 5 p.m.", "Then we went home.")),
    Case(
        "eg",
        "Bring fruit, e.g. apples and pears. Do not bring nuts.",
        ("Bring fruit, e.g. apples and pears.", "Do not bring nuts."),
    ),
    Case(
        "ie",
        "Use a short name, i.e. one word. Then save the file.",
        ("Use a short name, i.e. one word.", "Then save the file."),
    ),
    Case("us-mid", "She moved to the U.S. in 2010.", ("She moved to the U.S. in 2010.",)),
    Case(
        "us-adj",
        "The U.S. economy grew by 2.1% last year. Analysts were surprised.",
        ("The U.S. economy grew by 2.1% last year.", "Analysts were surprised."),
    ),
    Case(
        "us-end",
        "He lives in the U.S. His sister lives in Canada.",
        ("He lives in the U.S.", "His sister lives in Canada."),
    ),
    Case(
        "url",
        "Visit https://example.com/docs/v1.2/index.html?x=1.5 for details. It is free.",
        ("Visit https://example.com/docs/v1.2/index.html?x=1.5 for details.", "It is free."),
    ),
    Case(
        "email",
        "Write to jane.doe@mail.example.org today. We reply fast.",
        ("Write to jane.doe@mail.example.org today.", "We reply fast."),
    ),
    Case("email-end", "Contact info@example.com. Thanks!", ("Contact info@example.com.", "Thanks!")),
    Case(
        "ellipsis-end",
        "I thought about it for a long time... Then I left.",
        ("I thought about it for a long time...", "Then I left."),
    ),
    Case("ellipsis-mid", "He paused... and then continued.", ("He paused... and then continued.",)),
    Case("unicode-ellipsis", "It was over… We went home.", ("It was over…", "We went home.")),
    Case("quote-end", 'He said, "I am done." Then he left.', ('He said, "I am done."', "Then he left.")),
    Case("quote-question", '"Are you coming?" she asked.', ('"Are you coming?" she asked.',)),
    Case("curly-quotes", "She whispered, “Run!” Everyone ran.", ("She whispered, “Run!”", "Everyone ran.")),
    Case(
        "bracket-fig",
        "The result (see Fig. 3) was clear. We stopped.",
        ("The result (see Fig. 3) was clear.", "We stopped."),
    ),
    Case(
        "bracket-sentence",
        "(This part is in brackets.) This part is not.",
        ("(This part is in brackets.)", "This part is not."),
    ),
    Case(
        "initials",
        "J. R. R. Tolkien wrote many books. They sold well.",
        ("J. R. R. Tolkien wrote many books.", "They sold well."),
    ),
    Case(
        "middle-initial",
        "President John F. Kennedy visited Berlin. Crowds cheered.",
        ("President John F. Kennedy visited Berlin.", "Crowds cheered."),
    ),
    Case(
        "numbered-list",
        "1. Open the box.\n2. Remove the cover.\n3. Plug it in.",
        ("1. Open the box.", "2. Remove the cover.", "3. Plug it in."),
    ),
    Case(
        "heading-no-punct",
        "Introduction\nThis chapter explains the method.",
        ("Introduction", "This chapter explains the method."),
    ),
    Case("no-punct", "Hello world", ("Hello world",)),
    Case("mixed-terminators", "Is it ready? Yes! Let's go.", ("Is it ready?", "Yes!", "Let's go.")),
    Case("version", "Version 2.0.1 is stable. Upgrade now.", ("Version 2.0.1 is stable.", "Upgrade now.")),
    Case("money-end", "It costs $4.99, not $5. Buy it today.", ("It costs $4.99, not $5.", "Buy it today.")),
    Case(
        "titles",
        "Prof. Lee and Mrs. Chen met at St. Mary's Hospital.",
        ("Prof. Lee and Mrs. Chen met at St. Mary's Hospital.",),
    ),
    Case(
        "inc-mid",
        "The company, Acme Inc., was founded in 1999. It grew fast.",
        ("The company, Acme Inc., was founded in 1999.", "It grew fast."),
    ),
    Case(
        "no-number",
        "No. 7 won the race. Approx. 50 people watched.",
        ("No. 7 won the race.", "Approx. 50 people watched."),
    ),
    Case(
        "month-abbrev",
        "The meeting is on Jan. 5. Please be on time.",
        ("The meeting is on Jan. 5.", "Please be on time."),
    ),
    Case("semicolon", "ONNX Runtime is fast; it runs on CPU.", ("ONNX Runtime is fast; it runs on CPU.",)),
    Case("interrobang", "What?! Really? I cannot believe it.", ("What?!", "Really?", "I cannot believe it.")),
)

# enzh's splitter before this table existed: end punctuation (optionally a closing quote) then whitespace.
_OLD_REGEX = re.compile(r"(?:(?<=[.!?;…])|(?<=[.!?;…][\"'”’)\]]))\s+")


def _old_regex(text: str) -> list[str]:
    return [s.strip() for line in text.splitlines() for s in _OLD_REGEX.split(line) if s.strip()]


def _by_lines(split: Callable[[str], Sequence[str]]) -> Callable[[str], list[str]]:
    # Every candidate gets lines cut first, as enzh does (a heading without punctuation is its own unit).
    return lambda text: [s.strip() for line in text.splitlines() for s in split(line) if s.strip()]


def _pysbd() -> Callable[[str], list[str]]:
    segmenter = importlib.import_module("pysbd").Segmenter(language="en", clean=False)
    return _by_lines(segmenter.segment)


def _sentencex() -> Callable[[str], list[str]]:
    module = importlib.import_module("sentencex")
    return _by_lines(lambda line: list(module.segment("en", line)))


def _blingfire() -> Callable[[str], list[str]]:
    module = importlib.import_module("blingfire")
    return _by_lines(lambda line: module.text_to_sentences(line).split("\n"))


CANDIDATES: dict[str, tuple[str | None, Callable[[], Callable[[str], list[str]]]]] = {
    "enzh (nupunkt)": ("nupunkt", lambda: split_sentences),
    "old regex": (None, lambda: _old_regex),
    "pysbd": ("pysbd", _pysbd),
    "sentencex": ("sentencex", _sentencex),
    "blingfire": ("blingfire", _blingfire),
}


def available() -> dict[str, Callable[[str], list[str]]]:
    """The candidates that can run here, labelled with their version."""
    found = {}
    for label, (package, make) in CANDIDATES.items():
        try:
            split = make()
        except ImportError:
            continue
        version = importlib.metadata.version(package) if package else ""
        found[f"{label} {version}".strip()] = split
    return found


def _cell(got: list[str], expected: tuple[str, ...]) -> str:
    if tuple(got) == expected:
        return f"ok ({len(got)})"
    return " ‖ ".join(s.replace("|", "\\|").replace("\n", " ") for s in got)


def render(candidates: dict[str, Callable[[str], list[str]]]) -> str:
    names = list(candidates)
    results = {name: [split(case.text) for case in CASES] for name, split in candidates.items()}
    speed = {}
    corpus = [case.text for case in CASES] * 50
    for name, split in candidates.items():
        start = time.perf_counter()
        count = sum(len(split(text)) for text in corpus)
        speed[name] = count / (time.perf_counter() - start)
    lines = [
        "# Sentence segmentation: hard cases",
        "",
        "Generated by `python -m enzh.tools.segmentation_report --out docs/segmentation.md` (every candidate",
        "importable where it ran; ‖ marks a boundary where a candidate's split differs from the expected one).",
        "Each candidate gets the text with lines cut first, as enzh does.",
        "",
        "| candidate | cases right | sentences/s (this table x 50) |",
        "|---|---|---|",
    ]
    for name in names:
        right = sum(tuple(got) == case.expected for got, case in zip(results[name], CASES, strict=True))
        lines.append(f"| {name} | {right}/{len(CASES)} | {speed[name]:,.0f} |")
    lines += ["", "| case | text | expected | " + " | ".join(names) + " |", "|---" * (3 + len(names)) + "|"]
    for i, case in enumerate(CASES):
        text = case.text.replace("\n", "⏎").replace("|", "\\|")
        cells = [_cell(results[name][i], case.expected) for name in names]
        lines.append(f"| `{case.name}` | {text} | {len(case.expected)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.tools.segmentation_report", description=__doc__)
    parser.add_argument("--out", type=Path, help="write the markdown here (default: print it)")
    args = parser.parse_args(argv)
    report = render(available())
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    else:
        print(report, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
