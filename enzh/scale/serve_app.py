"""The HTTP service as a Ray Serve application: the same FastAPI app, one per replica, behind Serve's router.

Run it with ``enzh serve --ray local|auto|ADDRESS [--replicas N] [--max-replicas M]`` (which starts Serve's
HTTP proxy on ``--host``/``--port``), or with Ray's own command line on a running cluster::

    serve run enzh.scale.serve_app:app                                 # one replica of the demo model
    serve run enzh.scale.serve_app:build_app replicas=2 model=/models/opus-mt-en-zh max_replicas=8

Each replica builds the app with :func:`enzh.serve.app.create_app` when it starts (``__serve_build_asgi_app__``:
nothing of the app is pickled), so it has its own model, its own cross-request batching scheduler, limits and
metrics: every route, error and limit is the one of ``enzh serve``. A replica takes traffic only once its model
is loaded and warmed up (its ASGI start-up waits for that), and Serve's health check replaces a replica whose
model failed to load or whose batching worker died. SIGTERM is Ray's: a replica being stopped drains through
the app's own shutdown (in-flight requests finish, ``graceful_shutdown_timeout_s`` = ``--drain-timeout-s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from ray import serve

from enzh.scale.errors import ScaleError
from enzh.scale.options import ReplicaOptions
from enzh.serve.options import ServeOptions

DEPLOYMENT = "enzh"
HEALTH_CHECK_PERIOD_S = 10.0
STATES_TO_REPLACE = ("load_failed", "worker_dead")  # a replica in one of these never recovers by itself


@serve.ingress()
class TranslationReplica:
    """One replica: the ``enzh serve`` app of ``options`` (its host, port and workers are Serve's business)."""

    def __init__(self, options: ServeOptions) -> None:
        self._options = dataclasses.replace(options, workers=1, handle_sigterm=False)
        self._service: Any = None

    def __serve_build_asgi_app__(self) -> Any:
        from enzh.serve.app import create_app

        app = create_app(self._options)
        self._service = app.state.service
        _ready_before_traffic(app)
        return app

    def check_health(self) -> None:
        """Serve's health check: raise (and have the replica replaced) when the app cannot serve any more."""
        if self._service is not None:
            status, detail = self._service.state()
            if status in STATES_TO_REPLACE:
                raise ScaleError(f"replica unhealthy: {status}: {detail}")


def _ready_before_traffic(app: Any) -> None:
    """Make the app's start-up wait until the model is loaded and warmed up (the service loads it in the
    background and answers 503 meanwhile; under Serve, the router should not send it traffic until then)."""
    inner = app.router.lifespan_context
    service = app.state.service

    @contextlib.asynccontextmanager
    async def lifespan(asgi_app: Any) -> AsyncIterator[Any]:
        async with inner(asgi_app) as state:
            while service.state()[0] == "loading":
                await asyncio.sleep(0.05)
            status, detail = service.state()
            if status != "ready":
                raise ScaleError(f"the replica could not start: {status}: {detail}")
            yield state

    app.router.lifespan_context = lifespan


def deployment_options(options: ServeOptions, replicas: ReplicaOptions) -> dict[str, Any]:
    """The ``serve.deployment`` settings: fixed ``replicas``, or autoscaling up to ``max_replicas``."""
    settings: dict[str, Any] = {
        "name": DEPLOYMENT,
        # Each replica reserves the CPUs its ONNX Runtime threads use (--threads; 0 = all cores reserves 1).
        "ray_actor_options": {"num_cpus": replicas.cpus_per_replica or max(1, options.threads)},
        "max_ongoing_requests": replicas.max_ongoing_requests,
        "graceful_shutdown_timeout_s": options.drain_timeout_s,
        "health_check_period_s": HEALTH_CHECK_PERIOD_S,
    }
    if replicas.max_replicas is None or replicas.max_replicas == replicas.replicas:
        settings["num_replicas"] = replicas.replicas
    else:
        settings["autoscaling_config"] = {
            "min_replicas": replicas.replicas,
            "initial_replicas": replicas.replicas,
            "max_replicas": replicas.max_replicas,
            "target_ongoing_requests": replicas.target_ongoing_requests,
            "upscale_delay_s": 10.0,
            "downscale_delay_s": 300.0,  # a replica costs a model load: keep it through short lulls
        }
    return settings


def build(options: ServeOptions, replicas: ReplicaOptions | None = None) -> Any:
    """The Serve application (``serve.run`` it) of ``options`` with ``replicas``."""
    replicas = replicas or ReplicaOptions()
    deployment = serve.deployment(**deployment_options(options, replicas))(TranslationReplica)
    return deployment.bind(options)


def build_app(args: dict[str, Any]) -> Any:
    """The application builder of ``serve run enzh.scale.serve_app:build_app KEY=VALUE ...``: ``model``,
    ``replicas``, ``max_replicas`` and any :class:`~enzh.serve.options.ServeOptions` field with a number or
    text value (``threads=2``, ``max_batch_tokens=1024``, ``default_beam_size=1``)."""
    values = {name: str(value) for name, value in args.items()}  # a config file may give numbers
    replica_settings: dict[str, Any] = {}
    for name in ("replicas", "max_replicas"):
        if name in values:
            replica_settings[name] = int(values.pop(name))
    if "model" in values:
        values["model_dir"] = values.pop("model")
    fields = {field.name: field for field in dataclasses.fields(ServeOptions)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ScaleError(f"unknown arguments {unknown}; accepted: model, replicas, max_replicas, {', '.join(fields)}")
    settings: dict[str, Any] = {name: _typed(value, str(fields[name].type)) for name, value in values.items()}
    return build(ServeOptions(**settings), ReplicaOptions(**replica_settings))


def _typed(value: str, annotation: str) -> object:
    """``value`` as the field's type (its annotation: bool, int, float, else text); ``none`` for an optional."""
    kinds = {part.strip() for part in annotation.split("|")}
    if "None" in kinds and value.lower() == "none":
        return None
    if "bool" in kinds:
        return value.lower() in ("1", "true", "yes", "on")
    if "int" in kinds:
        return int(value)
    if "float" in kinds:
        return float(value)
    return value


app = build_app({})  # `serve run enzh.scale.serve_app:app`: one replica of the embedded demo model
