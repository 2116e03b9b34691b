"""The service's paths, listed once: which API each belongs to (the shape of its errors), which ones the key and
limit checks guard, and which field holds what a guarded route translates (what the char limits count).

Read by the error answers (:mod:`enzh.serve.errors`), the key and limit checks (:mod:`enzh.serve.access`) and
the metrics (:mod:`enzh.serve.middleware`); tests/serve/test_server_routing.py checks it against the app's own
routes.
"""

from __future__ import annotations

from dataclasses import dataclass

V1 = "v1"  # the service's own API: errors are {"error": {"code", "message"}}
LIBRE = "libre"  # the LibreTranslate API: errors are {"error": message}, a bad request is a 400


@dataclass(frozen=True)
class Route:
    path: str
    api: str = V1
    guarded: bool = False  # POSTs need a key (with keys on) and count against the limits
    texts: str | None = None  # the field whose texts the route translates (a string or a list of strings)
    file: str | None = None  # the field of the uploaded file it translates


ROUTES = (
    Route("/v1/translate", guarded=True, texts="text"),
    Route("/livez"),
    Route("/readyz"),
    Route("/metrics"),
    Route("/"),
    Route("/docs"),
    Route("/docs/oauth2-redirect"),  # FastAPI's, with the docs page
    Route("/openapi.json"),
    Route("/translate", LIBRE, guarded=True, texts="q"),
    Route("/translate_file", LIBRE, guarded=True, file="file"),
    Route("/detect", LIBRE, guarded=True, texts="q"),
    Route("/suggest", LIBRE, guarded=True),
    Route("/languages", LIBRE),
    Route("/frontend/settings", LIBRE),
    Route("/spec", LIBRE),
    Route("/health", LIBRE),
)
BY_PATH = {route.path: route for route in ROUTES}
# Paths under these prefixes (their last parts are parameters) belong to the LibreTranslate API.
LIBRE_PREFIXES = ("/download_file/",)

PATHS = frozenset(BY_PATH)  # counted under their own name in the metrics (any other path as "other")
GUARDED_PATHS = frozenset(route.path for route in ROUTES if route.guarded)
LIBRE_PATHS = frozenset(route.path for route in ROUTES if route.api == LIBRE)


def is_libre_path(path: str) -> bool:
    """True for the paths of the LibreTranslate API, whose errors have LibreTranslate's shape."""
    return path in LIBRE_PATHS or path.startswith(LIBRE_PREFIXES)
