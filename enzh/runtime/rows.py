"""A stored table that the graphs only gather rows of, held in memory that fills row by row on demand.

An int8 variant's embedding lookup gathers rows of a ``[V, d]`` table by the token ids it is fed
(``manifest.shared_initializers[name]["rows_of"] == "input_ids"``). Memory-mapping the table would make every
page a lookup touches resident, and the kernel maps pages around the one touched (whole large folios of the
page cache: about half a MB per token on Linux 6.x), so after a few hundred tokens the whole table is resident.
Here the table lives in anonymous memory that starts with no resident page; before each run the rows of the
ids that run gathers are read from the file into it (:meth:`RowsOnDemand.fill`), so only the pages of rows
ever gathered become resident (8 rows of 512 bytes a page). Same bytes, same outputs.
"""

from __future__ import annotations

import mmap
import threading
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.errors import ModelDirError

# The graph input whose ids index such a table (the only value of a layout's "rows_of" so far).
ROWS_OF_INPUT_IDS = "input_ids"


class RowsOnDemand:
    """The table ``layout`` (a ``shared_initializers`` record) of ``directory``, empty until rows are filled."""

    def __init__(self, directory: Path, layout: dict[str, Any]) -> None:
        self.path = directory / layout["file"]
        self.offset = int(layout["offset"])
        rows, width = (int(n) for n in layout["shape"])
        dtype = np.dtype(layout["dtype"])
        self.row_bytes = width * dtype.itemsize
        # Anonymous, private, zero pages until written; no transparent huge pages (a 2 MB page per row written).
        self._memory = mmap.mmap(-1, max(1, rows * self.row_bytes))
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            self._memory.madvise(mmap.MADV_NOHUGEPAGE)
        self.array: np.ndarray = np.frombuffer(self._memory, dtype=dtype, count=rows * width).reshape(rows, width)
        self._filled = np.zeros(rows, dtype=bool)
        self._bytes = memoryview(self._memory)
        self._lock = threading.Lock()

    @property
    def filled_rows(self) -> int:
        """How many rows have been read so far."""
        return int(self._filled.sum())

    def fill(self, ids: np.ndarray) -> None:
        """Read the rows ``ids`` index (negative ids count from the end, as ONNX Gather does) that are not read
        yet. Ids outside the table are skipped: the graph's Gather rejects them with its own error."""
        rows = len(self._filled)
        ids = np.asarray(ids).ravel()
        ids = ids[(ids >= -rows) & (ids < rows)]
        missing = ids[~self._filled[ids]]
        if not len(missing):
            return
        # Whole pages at a time, runs of consecutive pages in one read: the rows sharing a page with a missing one
        # become resident with it anyway, and one read per run instead of one per row (a batch of a source-aware
        # shortlist asks for thousands of rows).
        per_page = max(1, mmap.PAGESIZE // self.row_bytes)
        pages = np.unique(missing % rows // per_page)
        runs = np.split(pages, np.flatnonzero(np.diff(pages) != 1) + 1)
        with self._lock, open(self.path, "rb", buffering=0) as file:
            for run in runs:
                first, last = int(run[0]) * per_page, min(rows, (int(run[-1]) + 1) * per_page)
                if self._filled[first:last].all():
                    continue  # another thread read them meanwhile
                start, end = first * self.row_bytes, last * self.row_bytes
                file.seek(self.offset + start)
                # Rows already filled are rewritten with the same bytes: a concurrent run reading them sees no change.
                if file.readinto(self._bytes[start:end]) != end - start:
                    raise ModelDirError(
                        f"{self.path} ends before row {last - 1} of a stored table (offset {self.offset}); the file "
                        "is truncated: re-export or re-quantize the model directory"
                    )
                self._filled[first:last] = True


__all__ = ["ROWS_OF_INPUT_IDS", "RowsOnDemand"]
