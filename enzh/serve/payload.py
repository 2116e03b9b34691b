"""Request bodies: read (within the body limit), parse as JSON or a form, and validate into a request model.

Every failure is an :class:`ApiError` with a readable message that never echoes the input.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request

from enzh.runtime.segment import clean_text
from enzh.serve.errors import ApiError
from enzh.serve.options import ServeOptions


async def read_payload(request: Request, *, form: bool) -> Any:
    """The parsed body: JSON (``application/json`` or ``+json``), or a url-encoded form where ``form``."""
    media = _media_type(request)
    if _is_json(media):
        return _parse_json(await _read_body(request))
    if form and media == "application/x-www-form-urlencoded":
        return _parse_form(await _read_body(request))
    accepted = "application/json" + (" or application/x-www-form-urlencoded" if form else "")
    raise ApiError(415, "unsupported_media_type", f"Content-Type must be {accepted}, got {media or 'none'!r}")


def validate(model: type[BaseModel], data: Any, options: ServeOptions) -> Any:
    """``data`` as an instance of ``model``, or a 422 naming the field and the limit."""
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", f"the body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(_clean_strings(data))
    except RecursionError:
        raise ApiError(422, "invalid_request", "the body is nested too deeply") from None
    except ValidationError as exc:
        raise _validation_error(exc, options) from None


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _is_json(media: str) -> bool:
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def _read_body(request: Request) -> bytes:
    chunks = []
    try:
        async for chunk in request.stream():  # BodyLimitMiddleware raises BodyTooLarge past the limit
            chunks.append(chunk)
    except ClientDisconnect:  # it left, or the read timeout (enzh.serve.protocol) closed it: nobody to answer
        raise ApiError(499, "client_gone", "the client closed the connection") from None
    return b"".join(chunks)


def _parse_json(body: bytes) -> Any:
    if not body.strip():
        raise ApiError(400, "invalid_json", "the request body is empty; send a JSON object")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, absurd nesting
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise ApiError(400, "invalid_json", f"the request body is not valid JSON: {message}") from None


def _parse_form(body: bytes) -> dict[str, Any]:
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise ApiError(400, "invalid_form", "the form body is not valid UTF-8 url-encoded data") from None
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key == "alternatives":
            data[key] = int(value) if value.strip().lstrip("-").isdigit() else value
        elif key in data and key == "q":
            data[key] = [*data[key], value] if isinstance(data[key], list) else [data[key], value]
        else:
            data[key] = value
    return data


def _validation_error(exc: ValidationError, options: ServeOptions) -> ApiError:
    """A readable 422 from pydantic errors (never echoing the input)."""
    errors = exc.errors(include_url=False, include_input=False)
    types = {e.get("type") for e in errors}
    fields = {str(e["loc"][0]) for e in errors if e.get("loc")}
    if fields & {"text", "q"} and "string_too_long" in types:
        return ApiError(422, "text_too_long", f"a text may hold at most {options.max_chars_per_text} characters")
    if fields & {"text", "q"} and "too_long" in types:
        return ApiError(422, "too_many_texts", f"a request may hold at most {options.max_texts_per_request} texts")
    parts = []
    for field in sorted(fields) or ["body"]:
        own = [e for e in errors if (str(e["loc"][0]) if e.get("loc") else "body") == field]
        if field in ("text", "q") and any(e.get("type") != "missing" for e in own):
            parts.append(f"{field}: must be a string or a list of strings")
        elif any(e.get("type") == "extra_forbidden" for e in own):
            parts.append(f"{field}: unknown field")
        else:
            indices = "".join(f"[{x}]" for x in own[0].get("loc", ())[1:] if isinstance(x, int))
            parts.append(f"{field}{indices}: {own[0].get('msg', 'invalid')}")
    return ApiError(422, "invalid_request", "; ".join(parts))


def _clean_strings(value: Any) -> Any:
    """Lone surrogates (legal in JSON escapes, not in UTF-8) become U+FFFD everywhere in a parsed body."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean_strings(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): _clean_strings(v) for k, v in value.items()}
    return value
