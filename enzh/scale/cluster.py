"""Starting or joining Ray: ``local`` starts a one-machine Ray for the job, ``auto`` or an address joins a cluster.

A local Ray runs without the dashboard, with its session files (logs, sockets) in a fresh temporary directory
that is removed when the job succeeds and kept (and named in the log) when it fails, and with an object store
sized for the job and the machine (:func:`object_store_bytes`). When the process is already connected to Ray
(``ray.init`` called by the caller: a notebook, a test, a Ray job submitted with ``ray job submit``), that
connection is used as it is and left open.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from enzh.runtime.optional import import_optional
from enzh.scale.errors import ScaleError
from enzh.scale.options import ClusterOptions

logger = logging.getLogger("enzh")

MIN_OBJECT_STORE = 128 << 20
HEADROOM = 256 << 20  # object store room beyond the job's input and output (Ray's own objects, spilling slack)


def total_memory() -> int:
    """This machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def object_store_bytes(input_bytes: int) -> int:
    """The object store for a local job: 4x the input (every shard is put in the store when the job starts, and
    the translations, about as many bytes in UTF-8, pass through it on their way to the driver) plus headroom;
    at most 30% of memory (Ray's own default) and 90% of what /dev/shm has free."""
    wanted = 4 * input_bytes + HEADROOM
    ceiling = int(0.3 * total_memory())
    shm = Path("/dev/shm")
    if shm.is_dir():
        ceiling = min(ceiling, int(0.9 * shutil.disk_usage(shm).free))
    return max(MIN_OBJECT_STORE, min(wanted, ceiling))


@contextmanager
def connected(options: ClusterOptions, *, input_bytes: int = 0, cpus_needed: int = 1) -> Iterator[ModuleType]:
    """Yield the ``ray`` module connected as ``options`` says; disconnect (and stop a local Ray) afterwards."""
    ray = import_optional("ray", "running on Ray")
    if ray.is_initialized():
        yield ray
        return
    temp: str | None = None
    if options.is_local:
        cpus = options.num_cpus or os.cpu_count() or 1
        if cpus_needed > cpus:
            logger.warning(
                "the workers ask for %d CPUs and this machine has %d: they will share them", cpus_needed, cpus
            )
            cpus = cpus_needed
        temp = tempfile.mkdtemp(prefix="enzh-ray-")
        ray.init(
            num_cpus=cpus,
            include_dashboard=False,
            object_store_memory=options.object_store_bytes or object_store_bytes(input_bytes),
            _temp_dir=temp,
            logging_level=logging.WARNING,
        )
        logger.info("started a local Ray with %d CPUs (session files in %s)", cpus, temp)
    else:
        try:
            ray.init(address=options.address, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ScaleError(
                f"cannot join the Ray cluster at {options.address!r} ({type(exc).__name__}: {exc}); start one with "
                "`ray start --head` (and `ray start --address HEAD:6379` on the other machines), or use --ray local"
            ) from exc
        available = ray.cluster_resources().get("CPU", 0)
        logger.info("joined the Ray cluster at %s (%g CPUs)", options.address, available)
        if available < cpus_needed:
            logger.warning(
                "the workers ask for %d CPUs and the cluster has %g now: they start as nodes join",
                cpus_needed,
                available,
            )
    succeeded = False
    try:
        yield ray
        succeeded = True
    finally:
        ray.shutdown()
        if temp is not None:
            if succeeded:
                shutil.rmtree(temp, ignore_errors=True)
            else:
                logger.warning("Ray's logs of this run are kept in %s", temp)
