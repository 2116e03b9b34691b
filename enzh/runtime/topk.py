"""Top-k in ``torch.topk``'s exact (CPU) order, so beam search breaks exact ties as ``transformers`` does."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

# Column block size used by torch_top_k to skip most of a long (num_beams * vocab) row.
_TOP_K_BLOCK = 128


# ----------------------------------------------------------------------------------------------------------
# Top-k in torch.topk's exact order. torch documents no order for equal values; its CPU kernel leaves them
# wherever libstdc++'s std::partial_sort (when k * 64 <= row length) or std::nth_element + std::sort put them.
# Exact ties do happen (log-probs far below the best token round to the same float32; all -1e9 placeholders
# are equal), so rows with ties replay those algorithms; rows without ties take a fast numpy path.
# (torch.topk on CUDA orders ties differently; matching HF on GPU bit for bit is out of reach anyway.)
# ----------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def row_index(rows: int) -> np.ndarray:
    """``np.arange(rows)[:, None]`` (read-only, shared): the row index of 2-D fancy indexing such as
    ``values[row_index(len(values)), columns]``, i.e. ``np.take_along_axis(values, columns, axis=1)``."""
    index = np.arange(rows)[:, None]
    index.flags.writeable = False
    return index


def torch_top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k largest values of every row, largest first, in ``torch.topk``'s (CPU) order.

    Rows may be long (num_beams * vocab), so each row is first narrowed to the blocks of columns that can hold
    its top k. Values must not be NaN.
    """
    rows, width = values.shape
    if width <= 4 * _TOP_K_BLOCK:
        return _short_rows_top_k(values, k)
    block = _TOP_K_BLOCK
    block_max = np.maximum.reduceat(values, np.arange(0, width, block), axis=1)
    result = np.empty((rows, k), dtype=np.int64)
    for row in range(rows):
        # The k-th largest value is at least the k-th largest block maximum (the floor): skip blocks below it.
        maxima = block_max[row]
        floor = np.partition(maxima, -k)[-k] if len(maxima) >= k else np.float32(-np.inf)
        columns = (np.flatnonzero(maxima >= floor)[:, None] * block + np.arange(block)).ravel()
        columns = columns[columns < width]
        candidates = values[row, columns]
        # The k-th largest value itself: found above the floor if k values are there, else it is the floor.
        above = np.flatnonzero(candidates > floor)
        kth = np.partition(candidates[above], -k)[-k] if len(above) >= k else floor
        above = above[candidates[above] > kth]
        above = above[np.argsort(-candidates[above], kind="stable")]
        equal = np.flatnonzero(candidates == kth)
        sorted_above = candidates[above]
        if len(equal) > 1 or np.any(sorted_above[1:] == sorted_above[:-1]):
            result[row] = _torch_topk_row(values[row], k)  # ties: their order is up to torch's algorithm
        else:
            result[row] = columns[np.concatenate([above, equal])]
    return result


def _short_rows_top_k(values: np.ndarray, k: int) -> np.ndarray:
    """:func:`torch_top_k` for short rows (the beam bookkeeping's 2k or 3k candidates), all rows at once. A row
    whose k largest values are distinct and above all others has one answer. torch's algorithms only compare
    values, so a row with ties gets the answer of its pattern of ranks, replayed once per pattern (the usual
    patterns repeat: placeholder scores of -1e9 tie until a sentence has num_beams finished hypotheses)."""
    order = (-values).argsort(axis=1, kind="stable")
    ranked = values[row_index(len(values)), order]  # np.take_along_axis without its overhead
    last = min(k + 1, values.shape[1])  # the k-th value is compared with the next one
    tied = (ranked[:, 1:last] >= ranked[:, : last - 1]).any(axis=1).nonzero()[0]
    result = order[:, :k]
    if len(tied):
        result = result.copy()
        # The pattern of ranks of a row is given by its stable order and where the sorted values change: both
        # go into one key, order * 2 + (value differs from the previous one).
        keys = order[tied] * 2
        keys[:, 1:] += ranked[tied, 1:] != ranked[tied, :-1]
        keys[:, 0] += 1
        for i, row in enumerate(tied.tolist()):
            result[row] = _pattern_top_k(keys[i].tobytes(), k, _torch_topk_row)
    return result


@functools.lru_cache(maxsize=1024)  # keys: at most 4 KB (512 entries)
def _pattern_top_k(key: bytes, k: int, replay: Callable[[np.ndarray, int], list[int]]) -> tuple[int, ...]:
    """torch.topk's indices for a row given by its pattern of ranks (int64 bytes of order * 2 + starts a new
    value, see :func:`_short_rows_top_k`), from ``replay`` (part of the cache key, so that a replacement, e.g.
    in a test, is not answered from the cache)."""
    encoded = np.frombuffer(key, dtype=np.int64)
    ranks = np.empty(len(encoded), dtype=np.int64)  # 0 = largest, equal values equal ranks
    ranks[encoded >> 1] = np.cumsum(encoded & 1) - 1
    return tuple(replay(-ranks.astype(np.float64), k))


def _torch_topk_row(row: np.ndarray, k: int) -> list[int]:
    """torch.topk(row, k).indices on CPU: libstdc++'s algorithms on (value, index) pairs compared by value."""
    if k * 64 <= len(row):
        # std::partial_sort = heap select over the whole row, then sort_heap. Only values above the current
        # heap top change the heap, so positions that cannot are skipped in bulk.
        heap = [(float(row[j]), j) for j in range(k)]
        _make_heap(heap, 0, k)
        pending = np.flatnonzero(row[k:] > heap[0][0]) + k
        while len(pending):
            for j in pending[:64].tolist():
                if float(row[j]) > heap[0][0]:
                    _adjust_heap(heap, 0, 0, k, (float(row[j]), j))
            pending = pending[64:]
            pending = pending[row[pending] > heap[0][0]]
        _sort_heap(heap, 0, k)
        return [j for _, j in heap]
    queue = [(float(value), j) for j, value in enumerate(row.tolist())]
    _introselect(queue, 0, k - 1, len(queue), 2 * (len(queue).bit_length() - 1))
    _sort(queue, 0, k - 1)
    return [j for _, j in queue[:k]]


# libstdc++ (bits/stl_heap.h, bits/stl_algo.h) with the comparison "a before b iff a.value > b.value".
_Pair = tuple[float, int]


def _adjust_heap(q: list[_Pair], first: int, hole: int, length: int, value: _Pair) -> None:
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if q[first + child][0] > q[first + child - 1][0]:
            child -= 1
        q[first + hole] = q[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        q[first + hole] = q[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and q[first + parent][0] > value[0]:
        q[first + hole] = q[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[first + hole] = value


def _make_heap(q: list[_Pair], first: int, last: int) -> None:
    length = last - first
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(q, first, parent, length, q[first + parent])


def _pop_heap(q: list[_Pair], first: int, last: int, result: int) -> None:
    value = q[result]
    q[result] = q[first]
    _adjust_heap(q, first, 0, last - first, value)


def _sort_heap(q: list[_Pair], first: int, last: int) -> None:
    while last - first > 1:
        last -= 1
        _pop_heap(q, first, last, last)


def _heap_select(q: list[_Pair], first: int, middle: int, last: int) -> None:
    _make_heap(q, first, middle)
    for i in range(middle, last):
        if q[i][0] > q[first][0]:
            _pop_heap(q, first, middle, i)


def _move_median_to_first(q: list[_Pair], result: int, a: int, b: int, c: int) -> None:
    if q[a][0] > q[b][0]:
        if q[b][0] > q[c][0]:
            median = b
        elif q[a][0] > q[c][0]:
            median = c
        else:
            median = a
    elif q[a][0] > q[c][0]:
        median = a
    elif q[b][0] > q[c][0]:
        median = c
    else:
        median = b
    q[result], q[median] = q[median], q[result]


def _unguarded_partition_pivot(q: list[_Pair], first: int, last: int) -> int:
    _move_median_to_first(q, first, first + 1, first + (last - first) // 2, last - 1)
    pivot, low, high = q[first][0], first + 1, last
    while True:
        while q[low][0] > pivot:
            low += 1
        high -= 1
        while pivot > q[high][0]:
            high -= 1
        if low >= high:
            return low
        q[low], q[high] = q[high], q[low]
        low += 1


def _unguarded_linear_insert(q: list[_Pair], last: int) -> None:
    value = q[last]
    while value[0] > q[last - 1][0]:
        q[last] = q[last - 1]
        last -= 1
    q[last] = value


def _insertion_sort(q: list[_Pair], first: int, last: int) -> None:
    for i in range(first + 1, last):
        if q[i][0] > q[first][0]:
            q[first : i + 1] = [q[i], *q[first:i]]
        else:
            _unguarded_linear_insert(q, i)


def _introselect(q: list[_Pair], first: int, nth: int, last: int, depth: int) -> None:
    """std::nth_element."""
    if first == last or nth == last:
        return
    while last - first > 3:
        if depth == 0:
            _heap_select(q, first, nth + 1, last)
            q[first], q[nth] = q[nth], q[first]
            return
        depth -= 1
        cut = _unguarded_partition_pivot(q, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last)


def _introsort_loop(q: list[_Pair], first: int, last: int, depth: int) -> None:
    while last - first > 16:
        if depth == 0:
            _heap_select(q, first, last, last)
            _sort_heap(q, first, last)
            return
        depth -= 1
        cut = _unguarded_partition_pivot(q, first, last)
        _introsort_loop(q, cut, last, depth)
        last = cut


def _sort(q: list[_Pair], first: int, last: int) -> None:
    """std::sort."""
    if last - first < 2:
        return
    _introsort_loop(q, first, last, 2 * ((last - first).bit_length() - 1))
    if last - first > 16:
        _insertion_sort(q, first, first + 16)
        for i in range(first + 16, last):
            _unguarded_linear_insert(q, i)
    else:
        _insertion_sort(q, first, last)
