"""/v1 request bodies: JSON read by the one body reader (:mod:`enzh.serve.body`), validated into a request model.

Every failure is an :class:`ApiError` with a readable message that never echoes the input.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from enzh.serve.body import EMPTY, BodyError, is_json, media_type, read_body
from enzh.serve.errors import ApiError
from enzh.serve.options import ServeOptions


async def read_json(request: Request) -> Any:
    """The parsed JSON body (``application/json`` or ``+json``), read by the one body reader
    (:func:`enzh.serve.body.read_body`); 415 for another media type, 400 for a body that is not JSON."""
    media = media_type(request)
    if not is_json(media):
        raise ApiError(415, "unsupported_media_type", f"Content-Type must be application/json, got {media or 'none'!r}")
    try:
        return (await read_body(request)).data
    except BodyError as exc:
        if exc.reason == EMPTY:
            raise ApiError(400, "invalid_json", "the request body is empty; send a JSON object") from None
        raise ApiError(400, "invalid_json", f"the request body is not valid JSON: {exc.reason}") from None


def validate(model: type[BaseModel], data: Any, options: ServeOptions) -> Any:
    """``data`` as an instance of ``model``, or a 422 naming the field and the limit."""
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", f"the body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)  # its strings are clean already (enzh.serve.body.clean)
    except RecursionError:
        raise ApiError(422, "invalid_request", "the body is nested too deeply") from None
    except ValidationError as exc:
        raise _validation_error(exc, options) from None


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
