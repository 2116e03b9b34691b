"""RowsOnDemand: a stored table read page by page, only the pages of the rows asked for."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from enzh.runtime.errors import ModelDirError
from enzh.runtime.rows import RowsOnDemand

WIDTH = mmap.PAGESIZE // 2  # two int8 rows per page


def _table(tmp_path, rows=10, width=WIDTH, offset=64):
    table = (np.arange(rows * width) % 251 - 125).astype(np.int8).reshape(rows, width)
    (tmp_path / "weights.bin").write_bytes(b"\1" * offset + table.tobytes())
    layout = {"file": "weights.bin", "offset": offset, "shape": [rows, width], "dtype": "int8", "rows_of": "input_ids"}
    return table, layout


def test_fills_only_the_pages_of_the_rows_asked_for(tmp_path):
    table, layout = _table(tmp_path)
    rows = RowsOnDemand(tmp_path, layout)
    assert rows.filled_rows == 0 and not rows.array.any()
    rows.fill(np.array([[2, 7, 2]], dtype=np.int64))
    # Rows 2 and 7 live on pages 1 and 3 (rows 2-3 and 6-7): those pages are read whole, nothing else.
    assert rows.filled_rows == 4
    np.testing.assert_array_equal(rows.array[[2, 3, 6, 7]], table[[2, 3, 6, 7]])
    assert not rows.array[[0, 1, 4, 5, 8, 9]].any()
    # Negative ids count from the end (ONNX Gather); ids outside the table are left to the graph to reject.
    rows.fill(np.array([-1, 10, -11, 99], dtype=np.int64))
    assert rows.filled_rows == 6
    np.testing.assert_array_equal(rows.array[8:], table[8:])
    # Consecutive pages are one read; everything asked for at once equals the table.
    rows.fill(np.arange(10))
    assert rows.filled_rows == 10
    np.testing.assert_array_equal(rows.array, table)


def test_truncated_file_is_a_model_dir_error(tmp_path):
    _, layout = _table(tmp_path)
    layout["shape"] = [12, WIDTH]
    rows = RowsOnDemand(tmp_path, layout)
    rows.fill(np.array([9]))
    with pytest.raises(ModelDirError, match="truncated"):
        rows.fill(np.array([11]))
