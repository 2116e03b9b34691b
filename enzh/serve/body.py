"""The one reader of request bodies: every route and the key and limit checks (:mod:`enzh.serve.access`) read a
request through :func:`read_body`, so what the limits count is what the routes translate.

A body is read once per request (within the body limit, :class:`enzh.serve.middleware.BodyLimitMiddleware`) and
kept in the request's state: the checks read it first, the route then gets the same :class:`Body`. Its fields:

* a JSON body (``application/json`` or ``+json``): the parsed value; an object's members are its fields (the
  query string is ignored, as LibreTranslate ignores it then);
* any other request: the query string's fields, then the form's (url-encoded or multipart) where the query
  string has none of that name, each name's first value, as LibreTranslate's ``request.values``; a body of
  another type is read and dropped.

Lone surrogates (legal in JSON escapes, not in UTF-8) become U+FFFD in every string. A body that cannot be
parsed is a :class:`BodyError` (kept too, so that the route raises the same one), which each API words its
own way; a client that leaves while sending is a 499.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request

from enzh.runtime.segment import clean_text
from enzh.serve.errors import ApiError

URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
MAX_FIELDS = 32  # fields of a multipart body (LibreTranslate's requests have at most a dozen)
MAX_FILES = 1  # files of a multipart body (/translate_file takes one)
EMPTY = "the request body is empty"
_STATE = "enzh_body"  # the request state's attribute that keeps the body read


class BodyError(ApiError):
    """A body that cannot be parsed: ``kind`` is ``json`` or ``form``, ``reason`` says what is wrong (never
    echoing the input)."""

    def __init__(self, kind: str, reason: str) -> None:
        code = "invalid_json" if kind == "json" else "invalid_form"
        super().__init__(400, code, f"the request body is not valid {'JSON' if kind == 'json' else 'form data'}")
        self.kind = kind
        self.reason = reason


@dataclass
class Body:
    """A request's body, read and parsed (see the module's docstring)."""

    media: str  # the Content-Type's media type, lower-cased ("" when none)
    json: bool  # a JSON body
    data: Any  # the parsed JSON value (JSON bodies), else the fields
    fields: dict[str, Any] = field(default_factory=dict)  # an object's members, or the query's and form's fields
    error: BodyError | None = None  # set when the body could not be parsed (then fields are {})
    # Uploaded documents read already (by the limit checks, to count their text), by how they were read
    # (enzh.serve.uploads): the route translates the very same reading.
    documents: dict[Any, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.fields.get(name)

    def uploads(self) -> list[UploadFile]:
        return [value for value in self.fields.values() if isinstance(value, UploadFile)]

    async def close(self) -> None:
        """Close the uploaded files (their spooled copies); the body's fields stay readable otherwise."""
        for upload in self.uploads():
            await upload.close()


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def is_json(media: str) -> bool:
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def read_body(request: Request) -> Body:
    """The request's :class:`Body`, read and parsed on the first call and kept in its state (later calls, by the
    route after the checks, get the same); raises its :class:`BodyError` when it cannot be parsed."""
    body: Body | None = getattr(request.state, _STATE, None)
    if body is None:
        try:
            body = await _read(request)
        except ClientDisconnect:  # it left, or the read timeout (enzh.serve.protocol) closed it: nobody to answer
            raise ApiError(499, "client_gone", "the client closed the connection") from None
        setattr(request.state, _STATE, body)
    if body.error is not None:
        raise body.error
    return body


async def _read(request: Request) -> Body:
    media = media_type(request)
    if is_json(media):
        raw = await request.body()  # BodyLimitMiddleware raises BodyTooLarge past the limit
        try:
            data = clean(_parse_json(raw))
        except RecursionError:  # nesting within json's limit, but deeper than the cleaner's stack
            return Body(media, True, None, error=BodyError("json", "the body is nested too deeply"))
        except BodyError as exc:
            return Body(media, True, None, error=exc)
        return Body(media, True, data, dict(data) if isinstance(data, dict) else {})
    fields: dict[str, Any] = {}
    for key, value in request.query_params.multi_items():
        fields.setdefault(key, value)
    try:
        if media == URLENCODED:
            for key, value in _parse_form(await request.body()):
                fields.setdefault(key, value)
        elif media == MULTIPART:
            for key, part in (await _multipart(request)).items():
                fields.setdefault(key, part)
        else:
            await request.body()  # read and dropped, as LibreTranslate ignores a body it cannot parse
    except BodyError as exc:
        return Body(media, False, {}, error=exc)
    cleaned = {clean_text(k): clean(v) for k, v in fields.items()}
    return Body(media, False, cleaned, cleaned)


def _parse_json(raw: bytes) -> Any:
    if not raw.strip():
        raise BodyError("json", EMPTY)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, absurd nesting
        raise BodyError("json", exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__) from None


def _parse_form(raw: bytes) -> list[tuple[str, str]]:
    try:
        return parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BodyError("form", "the form is not valid UTF-8 url-encoded data") from None


async def _multipart(request: Request) -> dict[str, Any]:
    try:
        form = await request.form(max_files=MAX_FILES, max_fields=MAX_FIELDS)
    except (MultiPartException, HTTPException) as exc:  # a broken multipart body (starlette raises either)
        detail = getattr(exc, "detail", None) or getattr(exc, "message", None) or type(exc).__name__
        raise BodyError("form", str(detail)) from None
    parts: dict[str, Any] = {}
    for name, part in form.multi_items():
        parts.setdefault(name, part)
    return parts


def clean(value: Any) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD in every string (keys too), at any depth."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(str(k)): clean(v) for k, v in value.items()}
    return value
