"""A batch decoded on several threads at once: its sentences split into shards, one decoder each.

A small model's decoder step is too short for ONNX Runtime's thread pool to pay (its second thread wakes up for
every small matrix product), so those steps run on one thread (``RuntimeOptions.serial_decoder_rows``). Shards
put the other cores to work instead: each thread decodes its share of the sentences on the one-thread session
while the others decode theirs (ONNX Runtime releases the GIL while it runs a step). Each shard is encoded on its
thread too, its rows padded to the whole batch's width, so that attention sees the same keys as in the whole
batch; every other layer computes each token and each row on its own in fp32, so a sentence gets the tokens and
scores it gets in the whole batch, bit for bit (``RuntimeOptions.shards_for`` shards nothing else).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def shard_sentences(lengths: Sequence[int], shards: int) -> list[np.ndarray]:
    """The sentences (indices into ``lengths``) of at most ``shards`` shards of similar work: longest source
    first, dealt in turn (a shard runs until its longest sentence ends, and longer sources tend to have longer
    translations); each shard's indices in ascending order."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    count = max(1, min(shards, len(order)))
    return [np.sort(order[i::count]) for i in range(count)]


class ShardRunner:
    """Runs a function on every shard at once: the first on the calling thread, the others on worker threads
    (started on first use, kept for later batches)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0  # the process that started the workers (a forked child has none of them)
        self._lock = threading.Lock()

    def map(self, function: Callable[[np.ndarray], T], shards: Sequence[np.ndarray]) -> list[T]:
        """``[function(shard) for shard in shards]``, the shards run concurrently. An exception is raised once
        every shard has ended (no decoder is left running)."""
        if len(shards) == 1:
            return [function(shards[0])]
        pool = self._executor()
        others = [pool.submit(function, shard) for shard in shards[1:]]
        try:
            first = function(shards[0])
        finally:
            wait(others)
        return [first, *(future.result() for future in others)]

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ThreadPoolExecutor(max(1, self.threads - 1), thread_name_prefix="enzh-shard")
                self._pid = os.getpid()
            return self._pool
