"""The source-aware shortlist's table, counted on a parallel corpus (English TAB Chinese per line).

Both sides are split by the model directory's tokenizer; for every sentence pair each distinct source piece s
and distinct target piece t co-occur once. A source piece keeps the ``per_source`` target pieces t with the
highest p(t|s) = c(s, t) / c(s) among those positively associated with it (p(t|s) > p(t), the share of
sentences holding t: pieces that only come along because they are everywhere are left to the frequent list),
ties broken by the smaller id. The ``frequent`` pieces most frequent in the targets are kept for every batch
(and left out of the per-source entries, which would repeat them). The runtime side is
:mod:`enzh.runtime.candidates`; docs/shortlist.md measures the choices.

``source_shortlist`` may also name a table file (``LexicalTable.to_bytes``, e.g. the ``shortlist.bin`` of
another variant): it is then used as it is. With ``source_shortlist_corpus="english"`` it holds English sentences
alone, and the pairs are those sentences with the model's own greedy translations (:func:`translated_corpus`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from enzh.quantize.settings import QuantizeSettings
from enzh.runtime.candidates import MAGIC, LexicalTable
from enzh.runtime.errors import QuantizeError
from enzh.runtime.manifest import Manifest

logger = logging.getLogger("enzh")
CHUNK = 20_000  # sentence pairs whose co-occurrences are counted in one numpy pass


@dataclass(frozen=True)
class Corpus:
    """The parallel corpus a table is counted on (or the table file given), as the manifest records it."""

    name: str
    sha256: str
    pairs: list[tuple[str, str]]
    table_file: bool = False

    def record(self) -> dict[str, object]:
        if self.table_file:
            return {"name": self.name, "sha256": self.sha256, "given": "table file"}
        return {"name": self.name, "sha256": self.sha256, "pairs": len(self.pairs)}


def load_source_shortlist(model_dir: str | os.PathLike[str], settings: QuantizeSettings) -> tuple[Corpus, LexicalTable]:
    """The corpus (or table file) ``settings.source_shortlist`` names and the table for the model."""
    path = Path(settings.source_shortlist)
    if path.is_file() and path.read_bytes()[: len(MAGIC)] == MAGIC:
        data = path.read_bytes()
        try:
            table = LexicalTable.from_bytes(data, str(path))
        except ValueError as exc:
            raise QuantizeError(str(exc)) from exc
        arch = Manifest.load(model_dir).architecture
        vocab = int(arch["target_vocab_size"])
        if table.sources != int(arch["source_vocab_size"]) or not np.all(np.concatenate(table.arrays()[1:]) < vocab):
            raise QuantizeError(
                f"the table {path} does not fit this model ({table.sources} source rows, target ids up to "
                f"{int(np.max(np.concatenate(table.arrays()[1:]), initial=0))}; the model has "
                f"{arch['source_vocab_size']} source and {vocab} target tokens); build it for this model"
            )
        return Corpus(path.name, hashlib.sha256(data).hexdigest(), [], table_file=True), table
    corpus = read_pairs(path) if settings.source_shortlist_corpus == "pairs" else translated_corpus(model_dir, path)
    table = lexical_table(
        model_dir, corpus.pairs, frequent=settings.shortlist_frequent, per_source=settings.shortlist_per_source
    )
    return corpus, table


def read_pairs(path: str | os.PathLike[str]) -> Corpus:
    """``English<TAB>Chinese`` lines (blank lines skipped); any other line is an error naming it."""
    file = Path(path)
    if not file.is_file():
        raise QuantizeError(f"source shortlist corpus {file} does not exist; give a TSV of English<TAB>Chinese lines")
    data = file.read_bytes()
    pairs = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise QuantizeError(
                f"{file} line {number} has {len(fields)} TAB-separated fields; the source shortlist corpus needs "
                "exactly two per line: English<TAB>Chinese"
            )
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise QuantizeError(f"{file} holds no sentence pairs; give a TSV of English<TAB>Chinese lines")
    return Corpus(name=file.name, sha256=hashlib.sha256(data).hexdigest(), pairs=pairs)


def translated_corpus(model_dir: str | os.PathLike[str], path: str | os.PathLike[str], chunk: int = 256) -> Corpus:
    """Pairs from English sentences alone (one per line, blank lines skipped): each with the model's own greedy
    translation, for a table when no parallel corpus is at hand. The table then follows what the model already
    writes, so the shortlist changes its translations less than a table from other people's translations."""
    from tqdm import tqdm

    from enzh.runtime.translator import Translator

    file = Path(path)
    if not file.is_file():
        raise QuantizeError(f"source shortlist corpus {file} does not exist; give English sentences, one per line")
    data = file.read_bytes()
    english = [line.strip() for line in data.decode("utf-8").splitlines() if line.strip()]
    if not english:
        raise QuantizeError(f"{file} holds no English sentences; give one per line")
    translator = Translator.load(model_dir)
    chinese: list[str] = []
    bar = tqdm(
        total=len(english), desc="translating", unit=" sentences", file=sys.stderr, delay=1.0, dynamic_ncols=True
    )
    with bar:
        for start in range(0, len(english), chunk):
            part = english[start : start + chunk]
            chinese += translator.translate(part, beam_size=1)
            bar.update(len(part))
    name = f"{file.name} (English, translated by the model, greedy)"
    return Corpus(name=name, sha256=hashlib.sha256(data).hexdigest(), pairs=list(zip(english, chinese, strict=True)))


@dataclass(frozen=True)
class Tokenized:
    """A parallel corpus split by a model's tokenizer, with what :func:`count_table` needs to know of the model."""

    sources: Sequence[Sequence[int]]
    targets: Sequence[Sequence[int]]
    source_vocab: int
    target_vocab: int
    skip_sources: tuple[int, ...]
    skip_targets: tuple[int, ...]

    def table(self, *, frequent: int, per_source: int) -> LexicalTable:
        return count_table(self, frequent=frequent, per_source=per_source)


def tokenize_pairs(model_dir: str | os.PathLike[str], pairs: Sequence[tuple[str, str]]) -> Tokenized:
    """Both sides of ``pairs`` split by the model directory's tokenizer (sources end in eos, as translated)."""
    from enzh.runtime.tokenizer import MarianTokenizer

    directory = Path(model_dir)
    manifest = Manifest.load(directory)
    tokenizer = MarianTokenizer.from_model_dir(directory, manifest.tokenizer)
    special, arch = manifest.special_ids, manifest.architecture
    return Tokenized(
        sources=tokenizer.encode_batch([en for en, _ in pairs]),
        targets=tokenizer.target_ids([zh for _, zh in pairs]),
        source_vocab=int(arch["source_vocab_size"]),
        target_vocab=int(arch["target_vocab_size"]),
        skip_sources=(special["eos"], special["pad"]),
        skip_targets=(special["eos"], special["pad"], special["unk"]),
    )


def lexical_table(
    model_dir: str | os.PathLike[str], pairs: Sequence[tuple[str, str]], *, frequent: int, per_source: int
) -> LexicalTable:
    """The table of ``pairs`` with the model directory's tokenizer and vocabulary sizes."""
    return tokenize_pairs(model_dir, pairs).table(frequent=frequent, per_source=per_source)


def count_table(corpus: Tokenized, *, frequent: int, per_source: int) -> LexicalTable:
    """The table of tokenized sentence pairs (see the module docstring for what is kept)."""
    source_vocab, target_vocab = corpus.source_vocab, corpus.target_vocab
    token_counts = np.zeros(target_vocab, dtype=np.int64)
    for line in corpus.targets:
        np.add.at(token_counts, np.asarray(line, dtype=np.int64), 1)
    token_counts[list(corpus.skip_targets)] = 0
    ranked = np.lexsort((np.arange(target_vocab), -token_counts))
    top = ranked[: min(frequent, int(np.count_nonzero(token_counts)))]
    kept = np.sort(top).astype(np.int32)

    pair_keys, pair_counts, source_counts, target_counts = _cooccurrences(corpus)
    s, t = pair_keys // target_vocab, pair_keys % target_vocab
    p_given = pair_counts / source_counts[s]
    prior = target_counts[t] / max(1, len(corpus.sources))
    useful = (p_given > prior) & ~np.isin(t, kept)
    s, t, p_given = s[useful], t[useful], p_given[useful]
    order = np.lexsort((t, -p_given, s))  # by source, best first, smaller id on ties
    s, t = s[order], t[order]
    starts = np.searchsorted(s, np.arange(source_vocab + 1))
    rank = np.arange(len(s)) - starts[s]
    keep = rank < per_source
    s, t = s[keep], t[keep]
    by_id = np.lexsort((t, s))  # every row's entries in id order
    offsets = np.searchsorted(s, np.arange(source_vocab + 1)).astype(np.int32)
    return LexicalTable(offsets=offsets, targets=t[by_id].astype(np.int32), frequent=kept)


def _cooccurrences(corpus: Tokenized) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(keys s * target_vocab + t, their sentence counts, sentences per source piece, per target piece)."""
    sources, targets, target_vocab = corpus.sources, corpus.targets, corpus.target_vocab
    if len(sources) != len(targets):
        raise QuantizeError(f"{len(sources)} source sentences but {len(targets)} target sentences")
    source_counts = np.zeros(corpus.source_vocab, dtype=np.int64)
    target_counts = np.zeros(target_vocab, dtype=np.int64)
    keys: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    skip_s, skip_t = np.asarray(corpus.skip_sources), np.asarray(corpus.skip_targets)
    for begin in range(0, len(sources), CHUNK):
        chunk: list[np.ndarray] = []
        for src, tgt in zip(sources[begin : begin + CHUNK], targets[begin : begin + CHUNK], strict=True):
            s = np.setdiff1d(np.asarray(src, dtype=np.int64), skip_s)
            t = np.setdiff1d(np.asarray(tgt, dtype=np.int64), skip_t)
            source_counts[s] += 1
            target_counts[t] += 1
            chunk.append((s[:, None] * target_vocab + t[None, :]).ravel())
        merged, merged_counts = np.unique(np.concatenate(chunk or [np.zeros(0, np.int64)]), return_counts=True)
        keys.append(merged)
        counts.append(merged_counts)
    all_keys = np.concatenate(keys)
    unique, inverse = np.unique(all_keys, return_inverse=True)
    totals = np.bincount(inverse, weights=np.concatenate(counts), minlength=len(unique)).astype(np.int64)
    return unique, totals, source_counts, target_counts


__all__ = [
    "Corpus",
    "Tokenized",
    "count_table",
    "lexical_table",
    "load_source_shortlist",
    "read_pairs",
    "tokenize_pairs",
]
