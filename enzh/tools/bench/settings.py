"""What one bench run measures: the engines, the settings, the cases, and the model each group runs on."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "enzh-bench/1"
LANGUAGE_TOKEN = ">>cmn_Hans<<"


@dataclass(frozen=True)
class Engine:
    id: str
    label: str
    kind: str  # enzh | torch | ct2
    precision: str
    shortlist: int = 0  # enzh: quantized with a target-vocabulary shortlist of this many tokens
    source_shortlist: bool = False  # enzh: quantized with a source-aware shortlist (enzh.tools.bench.prepare)


SHORTLIST = 8000
ENGINES: tuple[Engine, ...] = (
    Engine("enzh-fp32", "enzh fp32", "enzh", "fp32"),
    Engine("enzh-int8", "enzh int8", "enzh", "int8"),
    Engine("enzh-int4", "enzh int4", "enzh", "int4"),
    Engine("enzh-int8-shortlist", f"enzh int8, {SHORTLIST:,}-token shortlist", "enzh", "int8", SHORTLIST),
    Engine("enzh-int8-source-shortlist", "enzh int8, source-aware shortlist", "enzh", "int8", source_shortlist=True),
    Engine("torch-fp32", "transformers (PyTorch fp32)", "torch", "fp32"),
    Engine("ct2-float32", "CTranslate2 float32", "ct2", "float32"),
    Engine("ct2-int8", "CTranslate2 int8", "ct2", "int8"),
)
ENGINE_BY_ID = {e.id: e for e in ENGINES}
CT2_BASELINE = "ct2-int8"
TORCH_BASELINE = "torch-fp32"
# fixed: fixed-length cells on the opus-mt-en-zh-shaped model; natural: the demo test set on the demo model;
# nllb: fixed-length cells on the nllb-200-distilled-600M-shaped model (issue 23; opt-in: a 2.5 GB model).
GROUPS = ("fixed", "natural", "nllb")
DEFAULT_GROUPS = ("fixed", "natural")
FIXED_GROUPS = ("fixed", "nllb")
SHAPED_NAME = "opus-mt-en-zh-shaped"
NLLB_SHAPED_NAME = "nllb-200-distilled-600M-shaped"
# The engines the nllb group compares (issue 23: fp32 and int8 against CTranslate2's and PyTorch).
NLLB_ENGINES = ("enzh-fp32", "enzh-int8", "torch-fp32", "ct2-float32", "ct2-int8")
# The nllb group's sources start with this language code and every engine generates this one first.
NLLB_SOURCE, NLLB_TARGET = "eng_Latn", "zho_Hans"

# What a worker reports about its start: load times, RSS after loading, the load average around it.
LOAD_KEYS = ("load_s", "first_translation_s", "rss_after_load_mib", "load_peak_rss_mib", "load_average")


class BenchError(Exception):
    """The benchmark could not run; the message says why."""


class LengthError(AssertionError):
    """A fixed-length case produced a hypothesis of another length."""


@dataclass(frozen=True)
class BenchSettings:
    quick: bool = False
    threads: int = 2
    repeats: int = 5
    warmup: int = 1
    batch_sizes: tuple[int, ...] = (1, 16)
    beams: tuple[int, ...] = (1, 4)
    source_tokens: int = 24
    new_tokens: int = 32
    natural_sentences: int = 64
    natural_max_new_tokens: int = 128
    engines: tuple[str, ...] = tuple(e.id for e in ENGINES)
    groups: tuple[str, ...] = DEFAULT_GROUPS
    isolate: str = "engine"  # engine: one process per engine and model; cell: one per engine and case
    rounds: int = 1  # sweeps over all engines; each cell pools the timed runs of every round
    seed: int = 0
    timeout_s: float = 3600.0

    @classmethod
    def quick_defaults(cls) -> BenchSettings:
        return cls(
            quick=True,
            repeats=2,
            batch_sizes=(1, 4),
            beams=(1, 2),
            source_tokens=12,
            new_tokens=8,
            natural_sentences=4,
            natural_max_new_tokens=32,
            timeout_s=300.0,
        )


@dataclass(frozen=True)
class Case:
    id: str
    group: str  # fixed | natural | nllb
    batch: int
    beams: int
    fixed: bool
    new_tokens: int  # fixed: exactly this many generated tokens; natural: the upper bound
    calls: tuple[tuple[tuple[int, ...], ...], ...]  # each call: one batch of source id lists (eos-terminated)
    # The target-language code forced as the first generated token (the nllb group: (code, id)), else None.
    target: tuple[str, int] | None = None
    # Natural cases: each call's sentences. Every engine then translates text to text (its tokenizer and
    # detokenizer inside the timed call); None: ids in, ids out.
    texts: tuple[tuple[str, ...], ...] | None = None

    @property
    def label(self) -> str:
        search = "greedy" if self.beams == 1 else f"beam {self.beams}"
        return f"batch {self.batch} {search}"

    def describe(self) -> dict[str, Any]:
        lengths = [len(s) for call in self.calls for s in call]
        return {
            "id": self.id,
            "group": self.group,
            "label": self.label,
            "batch": self.batch,
            "beams": self.beams,
            "fixed_length": self.fixed,
            "new_tokens": self.new_tokens,
            "calls": len(self.calls),
            "sentences": len(lengths),
            "source_tokens_min": min(lengths),
            "source_tokens_max": max(lengths),
            "text": self.texts is not None,  # text in, text out (tokenizing counted), else ids in, ids out
        }


@dataclass(frozen=True)
class ModelGroup:
    """The model one group of cases runs on, and the directory every engine loads for it."""

    group: str
    name: str
    description: str
    hf_dir: Path
    dirs: dict[str, Path]  # engine id -> directory it loads
    unavailable: dict[str, str]  # engine id -> why it does not run
    cases: tuple[Case, ...]


def log(message: str) -> None:
    """A progress line on stderr (stdout carries the markdown report)."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)
