"""The ASGI app: ``create_app(ServeOptions(), translator)``, and ``app_from_env`` for uvicorn's worker processes.

* The model is loaded and warmed up in the background after start-up; ``/readyz`` answers 503 until then,
  while draining (SIGTERM) and if the batching worker has died (see :mod:`enzh.serve.service`).
* Every error is JSON ``{"error": {"code", "message"}}``; bad input never gets a 5xx. Limits (body size,
  texts, characters, queue, deadline) are all in :class:`enzh.serve.options.ServeOptions`. See docs/server.md.

Needs the ``serve`` extra (fastapi, uvicorn, prometheus-client); :func:`enzh.serve.run.serve` runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles

from enzh.runtime.router import base_language, detect_script
from enzh.serve.access import add_cors, add_key_checks
from enzh.serve.errors import STATUS_CODES, ApiError, error_for_path, json_response
from enzh.serve.libretranslate import add_libretranslate_routes, read_languages
from enzh.serve.middleware import BodyLimitMiddleware, MetricsMiddleware
from enzh.serve.modes import Modes
from enzh.serve.options import ENV_OPTIONS, ServeOptions
from enzh.serve.payload import read_json, validate
from enzh.serve.quality import alignment_payload, score_payload
from enzh.serve.routes import PATHS
from enzh.serve.schemas import (
    Health,
    RequestModels,
    TranslateResponse,
    error_responses,
    json_body,
    request_glossary,
    request_models,
)
from enzh.serve.service import Service, Target
from enzh.serve.sigterm import install_sigterm
from enzh.version import __version__

logger = logging.getLogger("enzh")

STATIC_DIR = Path(__file__).resolve().parent / "static"


def create_app(options: ServeOptions | None = None, translator: Any = None) -> FastAPI:
    """The ASGI app. ``translator``: an already loaded :class:`enzh.runtime.translator.Translator`, or a list of
    them (else the models of ``options.models``, or the embedded pair, are loaded in the background after
    start-up; /readyz says when they are all ready)."""
    options = options or ServeOptions()
    service = Service(options, translator)
    app = FastAPI(
        title="enzh translation service",
        version=__version__,
        description="English<->Chinese translation, each text routed to the model of its direction, with dynamic "
        "batching across requests. See docs/server.md.",
        lifespan=_lifespan(service),
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.service = service
    _add_error_handlers(app, service)
    modes = Modes(service)
    _add_translate_routes(app, service, modes, request_models(options))
    add_libretranslate_routes(app, service, modes)
    _add_health_routes(app, service)

    def reject(reason: str) -> None:
        service.metrics.rejections.labels(reason=reason).inc()

    # Innermost first: metrics see every response, including the body limit's 413 and the key checks' 403/429;
    # the key checks read bodies within the body limit; CORS headers go on their answers too.
    add_key_checks(app, options, reject)
    app.add_middleware(BodyLimitMiddleware, max_bytes=options.max_body_bytes, on_reject=reject)
    add_cors(app, options)
    app.add_middleware(MetricsMiddleware, metrics=service.metrics, routes=PATHS)
    return app


def app_from_env() -> FastAPI:
    """uvicorn factory for worker processes: options come as JSON in $ENZH_SERVE_OPTIONS."""
    return create_app(ServeOptions(**json.loads(os.environ.get(ENV_OPTIONS, "{}"))))


def _lifespan(service: Service) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading = asyncio.create_task(service.start())  # the server listens (and says "loading") meanwhile
        if service.options.handle_sigterm:
            install_sigterm(service, asyncio.get_running_loop())
        try:
            yield
        finally:
            service.draining = True
            loading.cancel()
            await service.stop()

    return lifespan


def _add_error_handlers(app: FastAPI, service: Service) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        if exc.status in (400, 413, 415, 422) or exc.code in ("draining", "not_ready", "worker_dead"):
            service.metrics.rejections.labels(reason=exc.code).inc()
        return error_for_path(request.url.path, exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = STATUS_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return error_for_path(request.url.path, exc.status_code, code, message, dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return error_for_path(request.url.path, 422, "invalid_request", "invalid request parameters")

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        logger.exception("unhandled error on %s", request.url.path)
        return error_for_path(request.url.path, 500, "internal_error", f"internal error: {type(exc).__name__}")


def _add_translate_routes(app: FastAPI, service: Service, modes: Modes, models: RequestModels) -> None:
    options = service.options

    @app.post(
        "/v1/translate",
        response_model=TranslateResponse,
        responses=error_responses(400, 413, 415, 422, 429, 500, 503, 504),
        openapi_extra=json_body(models.translate),
        summary="Translate text (or a list of texts); each goes to the model of its direction (source auto: detected)",
        tags=["translate"],
    )
    async def translate_v1(request: Request) -> Response:
        arrived = time.monotonic()
        body = validate(models.translate, await read_json(request), options)
        texts = [body.text] if isinstance(body.text, str) else list(body.text)
        service.admit()  # 503 unless ready, even for texts that need no model
        routes = [_route_v1(service, text, body.source, body.target) for text in texts]
        answer = await modes.translate_routed(
            request,
            texts,
            routes,
            beam_size=body.beam_size,
            arrived=arrived,
            html=body.format == "html",
            alternatives=body.alternatives or 0,
            scores=body.scores,
            alignments=body.alignments,
            glossary=request_glossary(body.glossary),
        )
        payload: dict[str, Any] = {
            "translations": answer.translations,
            "model": ", ".join(answer.models) or service.model_name,
            "source": body.source,
            "target": body.target,
            "beam_size": answer.beam_size,
            "sentences": answer.sentences,
            "timing_ms": answer.timing_ms,
        }
        if body.alternatives:
            payload["alternatives"] = answer.alternatives
        details = answer.details or []
        if body.scores:
            payload["scores"] = [score_payload(t) for t in details]
        if body.alignments:
            payload["alignments"] = [alignment_payload(text, t) for text, t in zip(texts, details, strict=True)]
        return json_response(payload)


def _route_v1(service: Service, text: str, source: str, target: str) -> Target | None:
    """The model for one text of /v1 (``source`` auto: its script tells its language, as the router's
    :func:`enzh.runtime.router.detect_script`); None: nothing to translate, or already in the target language."""
    language = detect_script(text) if source == "auto" else source
    if language is None or base_language(language) == base_language(target):
        return None
    if source == "auto" and not service.serves(language, target) and language not in read_languages(service):
        return None  # in no language a model reads: as it is (only English and Chinese are told apart)
    return service.route(language, target)


def _add_health_routes(app: FastAPI, service: Service) -> None:
    @app.get("/livez", response_model=Health, responses=error_responses(503), tags=["health"])
    async def livez() -> Response:
        status, detail = service.state()
        if status in ("load_failed", "worker_dead"):
            return json_response({"status": status, "detail": detail}, 503)
        return json_response({"status": "alive"})

    @app.get("/readyz", response_model=Health, responses=error_responses(503), tags=["health"])
    async def readyz() -> Response:
        status, detail = service.state()
        if status != "ready":
            headers = {"Retry-After": "1" if status == "loading" else "5"}
            return json_response({"status": status, "detail": detail}, 503, headers)
        return json_response({"status": "ready", "model": service.model_name, "models": service.model_names})

    @app.get(
        "/metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
        tags=["health"],
    )
    async def metrics() -> Response:
        return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> Response:
        return HTMLResponse((STATIC_DIR / "index.html").read_text(encoding="utf-8"))

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")  # the web page's scripts and style
