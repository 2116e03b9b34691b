"""Translation quality of an exported model directory on a test set (exact match, chrF, BLEU via sacrebleu).

``enzh eval [--model DIR] [--test TSV] [--beam-size N ...]``: with no ``--test`` the held-out set of the demo
model is used. Needs sacrebleu (the ``[demo]`` extra).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from enzh.runtime.engine import Engine


@dataclass(frozen=True)
class EvalResult:
    label: str
    sentences: int
    exact: float
    chrf: float
    bleu: float
    seconds: float

    def row(self) -> str:
        return (
            f"| {self.label} | {self.sentences} | {self.exact:.1f} | {self.chrf:.2f} | {self.bleu:.2f} |"
            f" {self.seconds:.1f} |"
        )


HEADER = "| model | sentences | exact match % | chrF | BLEU | seconds |\n|---|---|---|---|---|---|"


def evaluate(
    translator: Engine, pairs: list[tuple[str, str]], *, beam_size: int | None = None, label: str = ""
) -> EvalResult:
    from enzh.demo.evaluate_torch import score

    start = time.perf_counter()
    hyps = translator.translate([source for source, _ in pairs], beam_size=beam_size)
    seconds = time.perf_counter() - start
    directions = translator.info.directions
    scores = score(hyps, [ref for _, ref in pairs], directions[0][1] if directions else "zh")
    return EvalResult(label, len(pairs), scores["exact"], scores["chrf"], scores["bleu"], seconds)


def load_pairs(test: str | Path | None, limit: int | None = None) -> list[tuple[str, str]]:
    from enzh.demo.evaluate_torch import test_pairs

    pairs = test_pairs(test)
    return pairs[:limit] if limit else pairs
