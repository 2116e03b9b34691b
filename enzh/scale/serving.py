"""``enzh serve --ray local|auto|ADDRESS [--replicas N] [--max-replicas M]``: the service on Ray Serve.

Starts (``local``) or joins a Ray cluster, starts Serve's HTTP proxy on ``--host``/``--port``, deploys
:mod:`enzh.scale.serve_app` and serves until SIGINT or SIGTERM; then the application is deleted (its replicas
drain) and a local Ray is stopped. On a cluster, Serve runs a proxy on every node with a replica, each on the
same port; a load balancer in front spreads clients over them.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from enzh.runtime.default_model import default_model_dir
from enzh.runtime.errors import require
from enzh.runtime.manifest import Manifest
from enzh.runtime.optional import import_optional
from enzh.scale.cluster import connected
from enzh.scale.options import ReplicaOptions
from enzh.serve.keys import KeyStore
from enzh.serve.options import ServeOptions

logger = logging.getLogger("enzh")

APPLICATION = "enzh"


def prepared_options(options: ServeOptions, replicas: ReplicaOptions) -> tuple[ServeOptions, str | None]:
    """``options`` checked for Serve (model and key store present, one process per replica), with absolute paths
    and a directory for translated files that every replica on this machine shares (local Ray; on a cluster give
    ``files_dir`` on shared storage, else a download must reach the replica that translated it).
    Returns them and the temporary directory to remove afterwards (None when there is none)."""
    require(options.workers == 1, "--workers starts uvicorn processes; with --ray give --replicas N instead")
    directories = [Path(d).resolve() for d in options.models] or [default_model_dir()]
    for directory in directories:  # a bad --model fails now, not later
        Manifest.load(directory).verify_files(directory, check_hashes=False)
    if options.model_dir is not None:
        options = dataclasses.replace(options, model_dir=str(directories[0]))
    elif options.model_dirs:  # replicas do not start in this directory: paths are made absolute
        options = dataclasses.replace(options, model_dirs=tuple(str(d) for d in directories))
    if options.api_keys is not None:
        KeyStore(options.api_keys).close()  # likewise a missing key store
        options = dataclasses.replace(options, api_keys=str(Path(options.api_keys).resolve()))
    if options.files_dir is not None:  # replicas do not start in this directory: paths are made absolute
        options = dataclasses.replace(options, files_dir=str(Path(options.files_dir).resolve()))
    temporary = None
    if options.files_dir is None and replicas.cluster.is_local:
        temporary = tempfile.mkdtemp(prefix="enzh-files-")
        options = dataclasses.replace(options, files_dir=temporary)
    elif options.files_dir is None:
        logger.warning("on a cluster each replica keeps /translate_file results itself (no shared files_dir)")
    return options, temporary


def serve_on_ray(options: ServeOptions, replicas: ReplicaOptions, log_level: str = "info") -> None:
    """Serve until SIGINT/SIGTERM (blocks); a signal during start-up stops as soon as the deployment is up."""
    options, temporary = prepared_options(options, replicas)
    cpus = replicas.replicas * max(1, options.threads)
    try:
        with connected(replicas.cluster, cpus_needed=cpus), _stop_on_signal() as stop:
            serve = import_optional("ray.serve", "serving on Ray")
            from enzh.scale.serve_app import build

            serve.start(http_options={"host": options.host, "port": options.port})
            try:
                serve.run(
                    build(options, replicas),
                    name=APPLICATION,
                    route_prefix="/",
                    logging_config={"log_level": log_level.upper()},
                )
                if not stop.is_set():
                    logger.warning(
                        "serving on http://%s:%d with %s on Ray (Ctrl-C to stop)",
                        options.host,
                        options.port,
                        _replicas_text(replicas),
                    )
                while not stop.wait(1.0):
                    pass
            finally:
                serve.delete(APPLICATION)  # the replicas drain: in-flight requests finish
                if replicas.cluster.is_local:
                    serve.shutdown()
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def _replicas_text(replicas: ReplicaOptions) -> str:
    if replicas.max_replicas is None or replicas.max_replicas == replicas.replicas:
        return f"{replicas.replicas} replica(s)"
    return f"{replicas.replicas} to {replicas.max_replicas} replicas (autoscaling)"


@contextmanager
def _stop_on_signal() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM while inside (Ray's own handlers, installed by ``ray.init``, are
    replaced meanwhile and put back afterwards)."""
    stop = threading.Event()

    def on_signal(sig: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
