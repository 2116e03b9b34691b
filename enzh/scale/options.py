"""What a Ray job or deployment can be told: the cluster, the corpus job's workers and shards, Serve's replicas.

Imports nothing of Ray, so the command line builds and checks these before Ray is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from enzh.runtime.errors import OptionsError, require

DEFAULT_SHARD_SIZE = 256  # units (lines, records, subtitle blocks) per shard; docs/scale.md has the arithmetic
MAX_SHARD_RETRIES = 3  # a shard whose worker dies more often than this fails the job (it would loop forever)


@dataclass(frozen=True, kw_only=True)
class ClusterOptions:
    """``address``: ``local`` (start Ray on this machine for the job), ``auto`` (join the cluster this machine
    belongs to, as ``ray start`` made it) or a cluster address (``HOST:6379``, ``ray://HOST:10001``).
    ``num_cpus`` and ``object_store_bytes``: for ``local`` only (None: this machine's CPUs; an object store sized
    for the job and the machine, see :func:`enzh.scale.cluster.object_store_bytes`)."""

    address: str = "local"
    num_cpus: int | None = None
    object_store_bytes: int | None = None

    def __post_init__(self) -> None:
        require(
            isinstance(self.address, str) and self.address.strip() != "",
            "the Ray address must be local, auto or a cluster address (HOST:PORT or ray://HOST:PORT)",
        )
        require(self.num_cpus is None or self.num_cpus >= 1, f"num_cpus must be >= 1, got {self.num_cpus}")
        require(
            self.object_store_bytes is None or self.object_store_bytes >= 80 << 20,
            f"object_store_bytes must be at least 80 MiB (Ray's minimum), got {self.object_store_bytes}",
        )
        require(
            self.is_local or (self.num_cpus is None and self.object_store_bytes is None),
            "num_cpus and object_store_bytes apply to a local Ray only; a cluster has its own",
        )

    @property
    def is_local(self) -> bool:
        return self.address == "local"


@dataclass(frozen=True, kw_only=True)
class CorpusOptions:
    """A corpus job: ``workers`` Ray Data actors (one model each) with ``threads_per_worker`` CPUs (ONNX Runtime
    intra-op threads) each; the input cut into shards of ``shard_size`` units."""

    cluster: ClusterOptions = ClusterOptions()
    workers: int = 1
    threads_per_worker: int = 1
    shard_size: int = DEFAULT_SHARD_SIZE
    max_shard_retries: int = MAX_SHARD_RETRIES

    def __post_init__(self) -> None:
        for name in ("workers", "threads_per_worker", "shard_size"):
            value = getattr(self, name)
            require(isinstance(value, int) and value >= 1, f"{name} must be an integer >= 1, got {value!r}")
        require(self.max_shard_retries >= 0, f"max_shard_retries must be >= 0, got {self.max_shard_retries}")


@dataclass(frozen=True, kw_only=True)
class ReplicaOptions:
    """The service on Ray Serve: ``replicas`` copies (each with its own model and cross-request batching);
    with ``max_replicas``, Serve autoscales between the two on ongoing requests per replica."""

    cluster: ClusterOptions = ClusterOptions()
    replicas: int = 1
    max_replicas: int | None = None
    cpus_per_replica: float | None = None  # CPUs each replica reserves (None: its --threads, 1 when 0)
    max_ongoing_requests: int = 128  # per replica: enough concurrent requests for its batcher to pool
    target_ongoing_requests: float = 32.0  # autoscaling target per replica (Serve's default 2 starves batching)

    def __post_init__(self) -> None:
        require(self.replicas >= 1, f"replicas must be >= 1, got {self.replicas}")
        require(
            self.max_replicas is None or self.max_replicas >= self.replicas,
            f"max_replicas must be >= replicas ({self.replicas}), got {self.max_replicas}",
        )
        require(
            self.cpus_per_replica is None or self.cpus_per_replica > 0,
            f"cpus_per_replica must be > 0, got {self.cpus_per_replica}",
        )
        require(self.max_ongoing_requests >= 1, f"max_ongoing_requests must be >= 1, got {self.max_ongoing_requests}")
        require(
            0 < self.target_ongoing_requests <= self.max_ongoing_requests,
            f"target_ongoing_requests must be in (0, max_ongoing_requests], got {self.target_ongoing_requests}",
        )


def corpus_options(
    ray: str | None, workers: int | None, threads_per_worker: int | None, shard_size: int | None
) -> CorpusOptions | None:
    """The options of ``translate-file --ray ...`` (None without ``--ray``; its flags alone are an error)."""
    _only_with_ray(ray, {"--workers": workers, "--threads-per-worker": threads_per_worker, "--shard-size": shard_size})
    if ray is None:
        return None
    return CorpusOptions(
        cluster=ClusterOptions(address=ray),
        workers=workers or 1,
        threads_per_worker=threads_per_worker or 1,
        shard_size=shard_size or DEFAULT_SHARD_SIZE,
    )


def replica_options(ray: str | None, replicas: int | None, max_replicas: int | None) -> ReplicaOptions | None:
    """The options of ``serve --ray ...`` (None without ``--ray``; its flags alone are an error)."""
    _only_with_ray(ray, {"--replicas": replicas, "--max-replicas": max_replicas})
    if ray is None:
        return None
    return ReplicaOptions(cluster=ClusterOptions(address=ray), replicas=replicas or 1, max_replicas=max_replicas)


def _only_with_ray(ray: str | None, flags: dict[str, int | None]) -> None:
    given = [flag for flag, value in flags.items() if value is not None]
    if ray is None and given:
        raise OptionsError(f"{', '.join(given)} apply to --ray only; add --ray local|auto|ADDRESS")
