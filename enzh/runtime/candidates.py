"""The source-aware (lexical) shortlist at run time: which target pieces a batch's decoder scores.

A variant quantized with ``source_shortlist`` (:mod:`enzh.quantize.lexical`) stores a table in its model
directory (``shortlist.bin``, described in ``manifest.quantization["source_shortlist"]``): for every source
piece the target pieces associated with it, and the most frequent target pieces. Per batch the candidates are
the sorted union of the frequent pieces, the entries of every source piece in the batch, eos and unk (never
pad). Its decoder's output projection reads its weight, scales (and bias) as inputs: the candidates' columns,
bound once per batch (:class:`SourceShortlist`). The int8 default's weight is the transpose of the embedding's
rows ``[V, d]`` (stored once for the lookups and the projection): the candidates' rows are gathered from the
table the sessions read on demand (:mod:`enzh.runtime.rows`) and transposed; older variants store a ``[d, V]``
weight whose columns are gathered from weights.bin. When
the decoder takes a bias, the columns are padded to a multiple of :data:`COLUMN_ALIGN` with columns of bias
-inf: the bound weight's rows then start on cache lines, which ONNX Runtime reads faster every step, and a -inf
score changes neither the log-softmax of the others nor the top k (exactly: the padding's exp() adds 0).

numpy only: the table and the projection are memory-mapped (or read on demand), nothing else is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.errors import ModelDirError
from enzh.runtime.manifest import Manifest, map_stored
from enzh.runtime.rows import RowsOnDemand

TABLE_FILE = "shortlist.bin"
TABLE_DTYPE = np.dtype("<i4")
# The file: this magic, the three counts (sources + 1, entries, frequent ids), then the three arrays; all int32
# little-endian. Self-describing, so a table built once can be given to `enzh quantize --source-shortlist`.
MAGIC = b"ENZHLEX1"
HEADER = len(MAGIC) + 3 * TABLE_DTYPE.itemsize
# The decoder inputs of a source-aware variant, bound once per batch.
WEIGHT_INPUT = "shortlist_weight"  # int8 [d, candidates]: the projection's columns of the candidates
SCALES_INPUT = "shortlist_scales"  # float32 [candidates]
BIAS_INPUT = "shortlist_bias"  # float32 [candidates]: the bias (0 without one), -inf for the padding columns;
# variants quantized before it was always an input have it only when the projection has a bias
IDS_INPUT = "shortlist_ids"  # int64 [candidates]: vocabulary id of every scored position
# Where each stored projection tensor's token dimension is (DynamicQuantizeMatMul reads B [d, V], scales [V],
# bias [V]); the int8 default stores B as the embedding's rows [V, d] instead ("weight_rows", transposed per batch).
TOKEN_AXES = {"weight": 1, "scales": 0, "bias": 0}
INPUTS = {"weight": WEIGHT_INPUT, "scales": SCALES_INPUT, "bias": BIAS_INPUT}
# Bound columns padded to a multiple of this (a decoder with a bias input only): int8 weight rows of whole cache
# lines. On the shared 2-core AMD EPYC, 16 rows onto 7,607 columns: 0.80-0.92 ms unaligned, 0.58-0.64 ms at 7,616.
COLUMN_ALIGN = 64
TRANSPOSE_BLOCK = 64  # rows per block of the per-batch weight transpose (_transposed)


@dataclass(frozen=True)
class LexicalTable:
    """Target pieces per source piece, CSR: the entries of source id s are ``targets[offsets[s]:offsets[s+1]]``;
    ``frequent``: the pieces every batch scores."""

    offsets: np.ndarray  # int32 [sources + 1]
    targets: np.ndarray  # int32 [entries]
    frequent: np.ndarray  # int32 [frequent_ids]

    @property
    def sources(self) -> int:
        return len(self.offsets) - 1

    def to_bytes(self) -> bytes:
        """The file's bytes: :data:`MAGIC`, the three lengths, then offsets, targets and frequent."""
        counts = np.array([len(a) for a in self.arrays()], dtype=TABLE_DTYPE)
        arrays = (np.ascontiguousarray(a, dtype=TABLE_DTYPE).tobytes() for a in self.arrays())
        return MAGIC + counts.tobytes() + b"".join(arrays)

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> LexicalTable:
        """The table of :meth:`to_bytes`; ``ValueError`` naming ``where`` for anything else."""
        counts = np.frombuffer(data[len(MAGIC) : HEADER], dtype=TABLE_DTYPE).astype(np.int64)
        if data[: len(MAGIC)] != MAGIC or len(counts) != 3 or len(data) != HEADER + int(counts.sum()) * 4:
            raise ValueError(f"{where} is not a source shortlist table (written by enzh.quantize.lexical)")
        values = np.frombuffer(data, dtype=TABLE_DTYPE, offset=HEADER)
        offsets, targets, frequent = np.split(values, np.cumsum(counts)[:-1])
        table = cls(offsets=offsets, targets=targets, frequent=frequent)
        if len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(targets) or np.any(np.diff(offsets) < 0):
            raise ValueError(f"{where} has inconsistent row offsets; build the table again")
        return table

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.offsets, self.targets, self.frequent

    def sizes(self) -> dict[str, int]:
        """What ``manifest.quantization["source_shortlist"]`` records to read the file back."""
        return {"sources": self.sources, "entries": len(self.targets), "frequent_ids": len(self.frequent)}

    @classmethod
    def read(cls, path: Path, info: dict[str, Any]) -> LexicalTable:
        """The table of a model directory; its sizes must be those ``info`` (the manifest) records."""
        fix = "quantize the variant again (`enzh quantize ... --source-shortlist PAIRS.tsv`)"
        try:
            table = cls.from_bytes(path.read_bytes(), str(path))
        except (OSError, ValueError) as exc:
            raise ModelDirError(f"{exc}; {fix}") from exc
        recorded = {key: int(info[key]) for key in ("sources", "entries", "frequent_ids")}
        if table.sizes() != recorded:
            raise ModelDirError(f"{path} holds a table of {table.sizes()}, manifest.json says {recorded}; {fix}")
        return table

    def entries(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The entries (repeats included, in no useful order) of every unmasked source id of a batch; source ids
        outside the table contribute nothing."""
        sources = np.unique(np.asarray(input_ids)[np.asarray(attention_mask) != 0])
        sources = sources[(sources >= 0) & (sources < self.sources)]
        starts, ends = self.offsets[sources].astype(np.int64), self.offsets[sources + 1].astype(np.int64)
        lengths = ends - starts
        # Every entry position of those rows: start of its row + its rank within the row.
        firsts = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        return self.targets[firsts + np.arange(int(lengths.sum()))]


@dataclass(frozen=True)
class Selection:
    """One batch's candidates and the decoder inputs that make its projection score only them."""

    ids: np.ndarray  # int64 [candidates], sorted
    feeds: dict[str, np.ndarray]

    @property
    def columns(self) -> np.ndarray:
        """The vocabulary id of every column the decoder scores: ``ids``, then pad for each padding column (bias
        -inf; :data:`COLUMN_ALIGN`)."""
        return self.feeds[IDS_INPUT]


class SourceShortlist:
    """The table and the full output projection (memory-mapped from weights.bin) of a source-aware variant;
    ``bias_input``: the decoder's projection reads a bias input (then the bound columns are padded)."""

    def __init__(
        self,
        directory: Path,
        manifest: Manifest,
        *,
        bias_input: bool = False,
        rows: dict[str, RowsOnDemand] | None = None,
    ) -> None:
        info = manifest.quantization["source_shortlist"]
        self.table = LexicalTable.read(directory / info["file"], info)
        # The weight: stored as the embedding's rows [V, d] ("weight_rows"; gathered from the table the sessions
        # read on demand when they have it, so it is in memory once) or as [d, V] ("weight", older variants).
        layouts = dict(info["projection"])
        rows_layout = layouts.pop("weight_rows", None)
        self._rows_table = (rows or {}).get(rows_layout["name"]) if rows_layout else None
        self._mapped_rows = map_stored(directory, rows_layout) if rows_layout and self._rows_table is None else None
        self.projection = {key: map_stored(directory, layout) for key, layout in layouts.items()}
        special = manifest.special_ids
        self.always = np.array(sorted({special["eos"], special["unk"]}), dtype=np.int64)
        self.pad = int(special["pad"])
        self.padded = bias_input or "bias" in self.projection
        # What every batch scores, as a mask over the vocabulary: a batch's union is this mask with its entries
        # set (no sort of the repeated entries; the set ids come out sorted).
        self._every = np.zeros(len(self.projection["scales"]), dtype=bool)
        self._every[self.table.frequent] = True
        self._every[self.always] = True

    def candidates(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Sorted int64 ids: the frequent pieces, eos, unk and the entries of every (unmasked) source id of the
        batch; never pad."""
        chosen = self._every.copy()
        chosen[self.table.entries(input_ids, attention_mask)] = True
        chosen[self.pad] = False
        return np.flatnonzero(chosen).astype(np.int64, copy=False)

    def select(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> Selection:
        """The candidates of a batch and the projection's columns for them (padded when :attr:`padded`)."""
        ids = self.candidates(input_ids, attention_mask)
        columns = ids
        if self.padded:
            width = -(-len(ids) // COLUMN_ALIGN) * COLUMN_ALIGN
            columns = np.concatenate([ids, np.full(width - len(ids), self.pad, dtype=np.int64)])
        feeds = {INPUTS[key]: np.take(array, columns, axis=TOKEN_AXES[key]) for key, array in self.projection.items()}
        if self._rows_table is not None:  # the candidates' rows, read into the on-demand table first
            self._rows_table.fill(columns)
            feeds[WEIGHT_INPUT] = _transposed(np.take(self._rows_table.array, columns, axis=0))
        elif self._mapped_rows is not None:
            feeds[WEIGHT_INPUT] = _transposed(np.take(self._mapped_rows, columns, axis=0))
        if self.padded:
            bias = np.zeros(len(columns), dtype=np.float32)
            if BIAS_INPUT in feeds:
                bias[:] = feeds[BIAS_INPUT]
            bias[len(ids) :] = -np.inf
            feeds[BIAS_INPUT] = bias
        feeds[IDS_INPUT] = columns
        return Selection(ids=ids, feeds=feeds)


def _transposed(rows: np.ndarray, block: int = TRANSPOSE_BLOCK) -> np.ndarray:
    """``rows.T`` as a contiguous array, copied ``block`` rows at a time (numpy's own strided copy of a
    ``[7,616, 512]`` int8 array takes ~4.5 ms, in blocks of 64 rows ~1 ms: the source block stays in cache)."""
    out = np.empty(rows.shape[::-1], dtype=rows.dtype)
    for start in range(0, len(rows), block):
        out[:, start : start + block] = rows[start : start + block].T
    return out


__all__ = ["COLUMN_ALIGN", "MAGIC", "TABLE_FILE", "LexicalTable", "Selection", "SourceShortlist"]
