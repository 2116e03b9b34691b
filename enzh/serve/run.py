"""Run the service with uvicorn: one process, or ``workers`` processes each with its own model and scheduler."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from enzh.runtime.default_model import default_model_dirs
from enzh.runtime.manifest import Manifest
from enzh.runtime.optional import import_optional
from enzh.serve.keys import KeyStore
from enzh.serve.options import ENV_OPTIONS, ServeOptions

# What uvicorn imports in each worker process when ``workers > 1`` (it reads ENV_OPTIONS).
APP_FACTORY = "enzh.serve.app:app_from_env"


def proxy_settings(options: ServeOptions) -> dict[str, Any]:
    """uvicorn's settings for ``options.trusted_proxies``: its proxy headers off when no proxy is trusted."""
    proxies = [str(network) for network in options.trusted_networks()]
    return {"proxy_headers": bool(proxies), "forwarded_allow_ips": proxies}


def serve(options: ServeOptions, log_level: str = "info") -> None:
    """Run the service with uvicorn (blocks until SIGTERM/SIGINT and the drain are over)."""
    for module in ("fastapi", "prometheus_client"):
        import_optional(module, "the HTTP service")
    uvicorn = import_optional("uvicorn", "the HTTP service")
    from enzh.serve.app import create_app  # the web stack: imported once the serve extra is known to be there
    from enzh.serve.protocol import http_protocol

    if not options.models:  # the embedded pair, named so that every worker process loads the same models
        options = dataclasses.replace(options, model_dirs=tuple(str(d) for d in default_model_dirs()))
    for model_dir in map(Path, options.models):
        Manifest.load(model_dir).verify_files(model_dir, check_hashes=False)  # a bad --model fails now, not later
    if options.api_keys is not None:
        KeyStore(options.api_keys).close()  # likewise a missing key store
    common: dict[str, Any] = dict(
        host=options.host,
        port=options.port,
        log_level=log_level,
        timeout_graceful_shutdown=int(options.drain_timeout_s) + 5,
        access_log=False,
        http=http_protocol(options.header_timeout_s),  # closes stalled connections (uvicorn has no such timeout)
        # X-Forwarded-For/-Proto only from the trusted proxies (uvicorn's default would trust 127.0.0.1 and ::1)
        **proxy_settings(options),
    )
    if options.workers > 1:
        shared = None
        if options.files_dir is None:  # every worker must find the files that any of them translated
            shared = tempfile.mkdtemp(prefix="enzh-files-")
            options = dataclasses.replace(options, files_dir=shared)
        os.environ[ENV_OPTIONS] = json.dumps(dataclasses.asdict(options))
        try:
            uvicorn.run(APP_FACTORY, factory=True, workers=options.workers, **common)
        finally:
            if shared is not None:
                shutil.rmtree(shared, ignore_errors=True)
    else:
        uvicorn.run(create_app(options), **common)
