"""Errors as the service answers them: always JSON ``{"error": {"code", "message"}}``, always valid UTF-8."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from enzh.runtime.errors import EnzhError

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
