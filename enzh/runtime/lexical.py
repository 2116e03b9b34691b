"""The source-aware (lexical) shortlist at run time: which target pieces a batch's decoder scores.

A variant quantized with ``source_shortlist`` (:mod:`enzh.quantize.lexical`) stores a table in its model
directory (``shortlist.bin``, described in ``manifest.quantization["source_shortlist"]``): for every source
piece the target pieces associated with it, and the most frequent target pieces. Per batch the candidates are
the sorted union of the frequent pieces, the entries of every source piece in the batch, eos and unk (never
pad). Its decoder's output projection reads its weight, scales (and bias) as inputs: the candidates' columns,
gathered here from the full projection in weights.bin, bound once per batch (:class:`SourceShortlist`).

numpy only: the table and the projection are memory-mapped, nothing else is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.errors import ModelDirError
from enzh.runtime.manifest import Manifest, map_stored

TABLE_FILE = "shortlist.bin"
TABLE_DTYPE = np.dtype("<i4")
# The file: this magic, the three counts (sources + 1, entries, frequent ids), then the three arrays; all int32
# little-endian. Self-describing, so a table built once can be given to `enzh quantize --source-shortlist`.
MAGIC = b"ENZHLEX1"
HEADER = len(MAGIC) + 3 * TABLE_DTYPE.itemsize
# The decoder inputs of a source-aware variant, bound once per batch.
WEIGHT_INPUT = "shortlist_weight"  # int8 [d, candidates]: the projection's columns of the candidates
SCALES_INPUT = "shortlist_scales"  # float32 [candidates]
BIAS_INPUT = "shortlist_bias"  # float32 [candidates], only when the projection has a bias
IDS_INPUT = "shortlist_ids"  # int64 [candidates]: vocabulary id of every scored position
# Where each projection tensor's token dimension is (DynamicQuantizeMatMul: B [d, V], scales [V], bias [V]).
TOKEN_AXES = {"weight": 1, "scales": 0, "bias": 0}
INPUTS = {"weight": WEIGHT_INPUT, "scales": SCALES_INPUT, "bias": BIAS_INPUT}


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

    def candidates(self, input_ids: np.ndarray, attention_mask: np.ndarray, always: np.ndarray) -> np.ndarray:
        """Sorted int64 ids: the frequent pieces, ``always`` and the entries of every (unmasked) source id of the
        batch; source ids outside the table contribute nothing."""
        sources = np.unique(np.asarray(input_ids)[np.asarray(attention_mask) != 0])
        sources = sources[(sources >= 0) & (sources < self.sources)]
        starts, ends = self.offsets[sources].astype(np.int64), self.offsets[sources + 1].astype(np.int64)
        lengths = ends - starts
        # Every entry position of those rows: start of its row + its rank within the row.
        firsts = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        picked = self.targets[firsts + np.arange(int(lengths.sum()))]
        return np.unique(np.concatenate([self.frequent, picked, always]).astype(np.int64))


@dataclass(frozen=True)
class Selection:
    """One batch's candidates and the decoder inputs that make its projection score only them."""

    ids: np.ndarray  # int64 [candidates], sorted
    feeds: dict[str, np.ndarray]


class SourceShortlist:
    """The table and the full output projection (memory-mapped from weights.bin) of a source-aware variant."""

    def __init__(self, directory: Path, manifest: Manifest) -> None:
        info = manifest.quantization["source_shortlist"]
        self.table = LexicalTable.read(directory / info["file"], info)
        self.projection = {key: map_stored(directory, layout) for key, layout in info["projection"].items()}
        special = manifest.special_ids
        self.always = np.array(sorted({special["eos"], special["unk"]}), dtype=np.int64)
        self.pad = int(special["pad"])

    def select(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> Selection:
        """The candidates of a batch (pad never among them) and the projection's columns for them."""
        ids = self.table.candidates(input_ids, attention_mask, self.always)
        ids = ids[ids != self.pad]
        feeds = {INPUTS[key]: np.take(array, ids, axis=TOKEN_AXES[key]) for key, array in self.projection.items()}
        feeds[IDS_INPUT] = ids
        return Selection(ids=ids, feeds=feeds)


__all__ = ["MAGIC", "TABLE_FILE", "LexicalTable", "Selection", "SourceShortlist"]
