"""Errors as the service answers them, always JSON and always valid UTF-8: ``{"error": {"code", "message"}}`` on
the service's own API (/v1, health), and LibreTranslate's ``{"error": "<message>"}`` on the LibreTranslate API
(:func:`is_libre_path`), where a bad request is 400 (never 415 or 422), a bad key 403 and a limit 429."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from enzh.runtime.errors import EnzhError
from enzh.serve.routes import is_libre_path

# The error code of a status that the router or Starlette answers itself (no route, wrong method, ...).
STATUS_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "queue_full",
    500: "internal_error",
    503: "unavailable",
    504: "timeout",
}


class ApiError(EnzhError):
    """An error answered as ``{"error": {"code", "message"}}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


class BodyTooLarge(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(413, "body_too_large", f"the request body is larger than {limit} bytes")


def _json_bytes(content: Any) -> bytes:
    text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: escape instead of failing
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """JSON that is always valid UTF-8, whatever strings it holds."""
    return Response(_json_bytes(content), status_code=status, headers=headers, media_type="application/json")


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": {"code": code, "message": message}}, status, headers)


# -- the LibreTranslate API's shape ------------------------------------------------------------------------

# Statuses of the service that LibreTranslate answers with another one: every bad request is a 400 there.
LIBRE_STATUS = {415: 400, 422: 400}


class LibreError(ApiError):
    """An error of the LibreTranslate API, answered as ``{"error": message}`` with ``status`` (400, 403, 429...)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status, STATUS_CODES.get(status, "http_error"), message, headers)


def libre_error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """LibreTranslate's error answer: ``{"error": message}``."""
    return json_response({"error": message}, LIBRE_STATUS.get(status, status), headers)


def error_for_path(path: str, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    """The error answer in the shape of the API ``path`` belongs to (LibreTranslate's, or the service's own)."""
    if is_libre_path(path):
        return libre_error_response(status, message, headers)
    return error_response(status, code, message, headers)
