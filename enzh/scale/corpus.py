"""``enzh translate-file INPUT OUTPUT --ray ...``: one document translated by a pool of Ray Data workers.

The driver (this process) parses and checks the input (:func:`enzh.documents.files.prepare`, already done by
the caller), cuts it into shards on unit boundaries (:mod:`enzh.scale.shards`), and hands the shards that are
not finished yet to Ray Data: ``from_items`` (one block per shard) and ``map_batches`` with the stateful
:class:`~enzh.scale.worker.ShardTranslator` on a fixed pool of ``workers`` actors with ``threads_per_worker``
CPUs each. Results stream back in completion order; the driver writes each to ``OUTPUT.enzh-shards/`` as it
arrives (:mod:`enzh.scale.store`) and assembles OUTPUT, in shard order, when all are there.

Losing nothing: a worker that dies (SIGKILL, OOM, a lost node) is restarted by Ray (``max_restarts=-1``) and
the shards it held are retried on a live actor (``max_task_retries``, finite, so a shard that kills its worker
every time fails the job instead of looping). An exception raised by the translation itself is not retried: it
would fail the same way again (Ray Data's ``actor_task_retry_on_errors`` stays off). A driver that dies loses
only the shards in flight: the next run with the same arguments skips the finished ones.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from enzh.documents.files import Prepared
from enzh.documents.sentences import CHUNK
from enzh.runtime.adapter import resolve_target
from enzh.runtime.default_model import default_model_dir
from enzh.runtime.manifest import Manifest
from enzh.runtime.optional import import_optional
from enzh.scale.cluster import connected
from enzh.scale.errors import ScaleError
from enzh.scale.options import CorpusOptions
from enzh.scale.shards import Shard, cut
from enzh.scale.store import ShardStore
from enzh.scale.worker import ShardTranslator

logger = logging.getLogger("enzh")


@dataclass(frozen=True)
class CorpusReport:
    """What a job did: shards in all, those found finished from an earlier run, sentences translated now."""

    shards: int
    reused: int
    sentences: int
    seconds: float  # from the first shard handed to Ray to the output written (Ray's start-up excluded)
    workers: dict[str, int]  # worker (host:pid) -> shards it translated

    @property
    def sentences_per_s(self) -> float:
        return self.sentences / self.seconds if self.seconds > 0 else 0.0


def translate_on_ray(
    prepared: Prepared,
    options: CorpusOptions,
    *,
    model_dir: str | None = None,
    progress: bool = True,
    worker: type = ShardTranslator,
) -> CorpusReport:
    """Translate ``prepared`` on Ray and write its output; ``worker``: the ``map_batches`` class (its
    constructor takes ``model_dir``, ``options`` and ``threads``)."""
    import_optional("ray.data", "translating on Ray")  # a missing extra fails before anything is written
    manifest, worker_model_dir = _check_model(model_dir, prepared.options.target)
    shards = cut(prepared, options.shard_size)
    store = ShardStore.open(prepared.output, job_key(prepared, manifest, shards), len(shards))
    done = store.done()
    pending = [shard for shard in shards if shard.index not in done]
    if done:
        logger.info("resuming from %s: %d of %d shards already translated", store.directory, len(done), len(shards))
    sentences = 0
    workers: dict[str, int] = {}
    started = time.monotonic()
    try:
        if pending:
            cpus = options.workers * options.threads_per_worker
            with connected(options.cluster, input_bytes=len(prepared.data), cpus_needed=cpus):
                started = time.monotonic()
                with _bar(len(shards), len(done), enabled=progress) as bar:
                    for row in _results(pending, options, worker, worker_model_dir, prepared):
                        store.write(int(row["shard"]), bytes(row["output"]))
                        sentences += int(row["sentences"])
                        workers[str(row["worker"])] = workers.get(str(row["worker"]), 0) + 1
                        bar.update(1)
    except BaseException:
        if not store.done():  # nothing to resume from: leave no directory behind
            store.remove()
        raise
    store.assemble(prepared.output)
    store.remove()
    report = CorpusReport(len(shards), len(done), sentences, time.monotonic() - started, workers)
    logger.info(
        "wrote %s: %d shards (%d from an earlier run) on %d worker(s), %d sentences in %.1f s (%.1f sentences/s)",
        prepared.output,
        report.shards,
        report.reused,
        len(workers),
        report.sentences,
        report.seconds,
        report.sentences_per_s,
    )
    return report


def job_key(prepared: Prepared, manifest: Manifest, shards: Sequence[Shard]) -> str:
    """What finished shards are valid for: the input, the options, the model, the chunking and the cut."""
    return hashlib.sha256(
        json.dumps(
            {
                "input": hashlib.sha256(prepared.data).hexdigest(),
                "options": prepared.options.key(),
                "model": hashlib.sha256(manifest.to_json().encode()).hexdigest(),
                "chunk": CHUNK,
                "shards": [shard.digest() for shard in shards],
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()


def _check_model(model_dir: str | None, target: str | None) -> tuple[Manifest, str | None]:
    """The model's manifest, checked here before Ray starts (files present, target known), and the directory
    the workers load: None for the embedded demo model (each worker has its own), else an absolute path."""
    directory = Path(model_dir).resolve() if model_dir is not None else default_model_dir()
    manifest = Manifest.load(directory)
    manifest.verify_files(directory, check_hashes=False)
    resolve_target(manifest, target)
    return manifest, None if model_dir is None else str(directory)


def _results(
    pending: Sequence[Shard],
    options: CorpusOptions,
    worker: type,
    model_dir: str | None,
    prepared: Prepared,
) -> Iterator[dict[str, Any]]:
    """Run the shards through Ray Data; yield each result row as it arrives (completion order)."""
    data = import_optional("ray.data", "translating on Ray")
    context = data.DataContext.get_current()
    saved = {name: getattr(context, name) for name in _CONTEXT}
    for name, value in _CONTEXT.items():
        setattr(context, name, value if value is not None else options.max_shard_retries)
    items = [{"shard": s.index, "data": s.data, "header": s.header} for s in pending]
    try:
        dataset = data.from_items(items, override_num_blocks=len(items))
        with warnings.catch_warnings():
            # Ray 2.60 has no named parameter for an actor's restarts and retries and deprecates passing them as
            # remote args (removal planned for 2.64); its defaults are -1/-1 (ActorPoolMapOperator).
            warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
            dataset = dataset.map_batches(
                worker,
                fn_constructor_kwargs={
                    "model_dir": model_dir,
                    "options": prepared.options,
                    "threads": options.threads_per_worker,
                },
                batch_size=1,
                batch_format="numpy",
                compute=data.ActorPoolStrategy(size=options.workers),
                num_cpus=options.threads_per_worker,
                max_restarts=-1,
                max_task_retries=options.max_shard_retries,
            )
        yield from dataset.iter_rows()
    except Exception as exc:  # a task's error comes back as Ray's exception type, with the worker's traceback
        raise ScaleError(
            f"the Ray job failed ({_reason(exc)}); the finished shards are kept: "
            "run the same command again to translate the rest"
        ) from exc
    finally:
        for name, value in saved.items():
            setattr(context, name, value)


# Ray Data settings for the job (restored afterwards); None: the job's max_shard_retries.
_CONTEXT: dict[str, object] = {
    "enable_progress_bars": False,  # the driver shows its own bar of shards
    # A worker killed while it loads its model is replaced this many times in a row before the job fails
    # (Ray Data's default is 0: the first such death fails the job).
    "max_consecutive_actor_init_deaths": None,
}


def _reason(exc: BaseException) -> str:
    """The worker's own error when Ray's message carries its traceback (the last ``Name: message`` line that is
    not one of Ray's wrappers), else the exception's first line."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))  # Ray colours its messages
    lines = re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", text, re.MULTILINE)
    own = [(name, message) for name, message in lines if not name.startswith("ray.") and "RayTaskError" not in name]
    if own:
        return "{}: {}".format(*own[-1])
    first = text.strip().splitlines()[0] if text.strip() else "no message"
    return f"{type(exc).__name__}: {first}"


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _bar(total: int, initial: int, *, enabled: bool) -> Any:
    """A tqdm bar of shards on stderr, shown when the job lasts more than a second."""
    if not enabled:
        return _NoBar()
    import sys

    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit=" shards", file=sys.stderr, delay=1.0, dynamic_ncols=True)
