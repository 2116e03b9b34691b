"""The source ids every engine translates: random fixed-length ids, or the demo test set's sentences."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from enzh.tools.bench.settings import LANGUAGE_TOKEN, BenchError, BenchSettings, Case


def hf_ids(hf_dir: Path) -> tuple[dict[str, int], int, int]:
    """(vocab.json, pad id, eos id) of a HF Marian directory."""
    vocab: dict[str, int] = json.loads((hf_dir / "vocab.json").read_text(encoding="utf-8"))
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    return vocab, int(config["pad_token_id"]), int(config["eos_token_id"])


def fixed_sources(hf_dir: Path, count: int, length: int, seed: int) -> list[tuple[int, ...]]:
    """``count`` random source id lists of exactly ``length`` tokens: language token, ordinary ids, eos.

    The ids of docs/benchmarks.md: ``random.Random(seed).choice`` over vocab.json's ordinary ids (no pad, eos,
    unk or language token), drawn sentence by sentence. Changing how they are drawn changes that table.
    """
    vocab, pad, eos = hf_ids(hf_dir)
    special = {pad, eos, vocab.get("<unk>", -1)}
    ordinary = sorted(i for t, i in vocab.items() if i not in special and not (t.startswith(">>") and t.endswith("<<")))
    prefix = [vocab[LANGUAGE_TOKEN]] if LANGUAGE_TOKEN in vocab else []
    body = length - 1 - len(prefix)
    if body < 1:
        raise BenchError(f"--source-tokens must be at least {len(prefix) + 2}, got {length}")
    rng = random.Random(seed)
    return [tuple([*prefix, *(rng.choice(ordinary) for _ in range(body)), eos]) for _ in range(count)]


def natural_sources(hf_dir: Path, test_tsv: Path, count: int) -> list[tuple[int, ...]]:
    """Source ids of the first ``count`` English sentences of a ``english<TAB>chinese`` test file."""
    from enzh.runtime.tokenizer import MarianTokenizer

    tokenizer = MarianTokenizer.from_dir(hf_dir)
    english = []
    with open(test_tsv, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                english.append(line.split("\t", 1)[0].strip())
            if len(english) == count:
                break
    if len(english) < count:
        raise BenchError(f"{test_tsv} has {len(english)} sentences, fewer than the {count} asked for")
    return [tuple(tokenizer.encode(f"{LANGUAGE_TOKEN} {text}")) for text in english]


def make_cases(group: str, sources: Sequence[tuple[int, ...]], settings: BenchSettings) -> tuple[Case, ...]:
    """Batch sizes x beam widths. Fixed: one call of the first ``batch`` sources; natural: all, ``batch`` a call."""
    cases = []
    for batch in settings.batch_sizes:
        for beams in settings.beams:
            search = "greedy" if beams == 1 else f"beam{beams}"
            if group == "fixed":
                calls: tuple[tuple[tuple[int, ...], ...], ...] = (tuple(sources[:batch]),)
                new_tokens = settings.new_tokens
            else:
                calls = tuple(tuple(sources[i : i + batch]) for i in range(0, len(sources), batch))
                new_tokens = settings.natural_max_new_tokens
            cases.append(Case(f"{group}-b{batch}-{search}", group, batch, beams, group == "fixed", new_tokens, calls))
    return tuple(cases)
