"""Who may translate, and how much: API keys and per-minute limits on the translation endpoints, and CORS.

Off by default (a local service needs neither). With ``api_keys`` (a :class:`enzh.serve.keys.KeyStore` file),
every POST to a translation endpoint (:data:`GUARDED_PATHS`) must carry a key of the store: ``api_key`` or
``apiKey`` in the JSON, form or multipart body or the query string, or ``Authorization: Bearer KEY`` (the way
for /v1/translate, whose body takes no unknown fields); else 403. With ``req_limit``/``char_limit`` (or a key's
own limits), a client over its limit gets 429 + Retry-After (:mod:`enzh.serve.limits`); without keys the client
is its address. Errors have the shape of the endpoint's API (LibreTranslate's ``{"error": message}`` or /v1's).

A raw ASGI middleware inside the body limit: it reads the (capped) body once, decides, and replays the body to
the route, so the routes need to know nothing of keys. Keys are looked up by hash and never logged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from enzh.serve.errors import BodyTooLarge, error_for_path
from enzh.serve.keys import KeyStore
from enzh.serve.limits import Limiter, Limits
from enzh.serve.middleware import ASGIApp, Message, Receive, Scope, Send
from enzh.serve.options import ServeOptions

GUARDED_PATHS = frozenset({"/translate", "/translate_file", "/detect", "/suggest", "/v1/translate"})
KEY_FIELDS = ("api_key", "apiKey")
TEXT_FIELDS = ("q", "text")  # LibreTranslate's and /v1's; their characters count against char limits

# LibreTranslate's own messages (what its clients may show to people).
NO_KEY = "Please contact the server operator to get an API key"
BAD_KEY = "Invalid API key"


@dataclass(frozen=True)
class Denial:
    status: int
    code: str
    message: str
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class Call:
    """What the guard needs to know of one request."""

    key: str | None  # None: no key sent
    address: str  # the client's address (uvicorn takes it from X-Forwarded-For of a trusted proxy)
    chars: int  # characters to translate (a file counts its bytes)


class Guard:
    """Keys (when ``store``), then limits: ``admit(call)`` is None or the :class:`Denial`."""

    def __init__(self, options: ServeOptions, store: KeyStore | None, limiter: Limiter | None = None) -> None:
        self.store = store
        self.defaults = Limits(requests=options.req_limit, chars=options.char_limit)
        self.limiter = limiter or Limiter()

    def admit(self, call: Call) -> Denial | None:
        client, limits = "address:" + call.address, self.defaults
        if self.store is not None:
            if not call.key:
                return Denial(403, "api_key_required", NO_KEY)
            record = self.store.lookup(call.key)
            if record is None:
                return Denial(403, "invalid_api_key", BAD_KEY)
            client = "key:" + record.key_hash
            limits = Limits(
                requests=self.defaults.requests if record.req_limit is None else record.req_limit,
                chars=self.defaults.chars if record.char_limit is None else record.char_limit,
            )
        refusal = self.limiter.check(client, limits, call.chars)
        if refusal is None:
            return None
        if refusal.never_fits:
            message = f"Invalid request: request ({call.chars}) exceeds text limit ({refusal.allowed})"
            return Denial(422, "too_many_chars", message)
        unit = " characters" if refusal.limit == "chars" else ""
        headers = {"Retry-After": str(refusal.retry_after_s)}
        return Denial(429, "rate_limited", f"Slowdown: {refusal.allowed}{unit} per 1 minute", headers)


class AccessMiddleware:
    """Apply ``guard`` to every POST on :data:`GUARDED_PATHS`; other requests pass untouched."""

    def __init__(self, app: ASGIApp, guard: Guard, on_reject: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.guard = guard
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") not in GUARDED_PATHS:
            await self.app(scope, receive, send)
            return
        try:
            body = await _read_body(receive)
        except BodyTooLarge as exc:  # the route answers the 413, in its API's shape
            await self.app(scope, _raising(exc), send)
            return
        if body is None:  # the client left while sending (or the read timeout closed it): answered for the metrics
            await error_for_path(scope["path"], 499, "client_gone", "the client closed the connection")(
                scope, receive, send
            )
            return
        denial = self.guard.admit(_call(scope, body))
        replay = _replaying(body, receive)
        if denial is None:
            await self.app(scope, replay, send)
            return
        if self.on_reject:
            self.on_reject(denial.code)
        response = error_for_path(scope["path"], denial.status, denial.code, denial.message, denial.headers)
        await response(scope, replay, send)


def add_key_checks(app: FastAPI, options: ServeOptions, on_reject: Callable[[str], None]) -> None:
    """Add the middleware when keys or limits are on (the store must exist: ``enzh keys add`` makes it)."""
    if options.api_keys is None and not options.req_limit and not options.char_limit:
        return
    store = KeyStore(options.api_keys) if options.api_keys is not None else None
    app.add_middleware(AccessMiddleware, guard=Guard(options, store), on_reject=on_reject)


def add_cors(app: FastAPI, options: ServeOptions) -> None:
    """CORS headers for ``options.cors_origins`` (none by default: browsers then allow same-origin calls only)."""
    origins = options.cors_origin_list()
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST"],
            allow_headers=["*"],
            expose_headers=["Retry-After"],
            max_age=600,
        )


# -- reading the request -----------------------------------------------------------------------------------


async def _read_body(receive: Receive) -> bytes | None:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read already, then the client's next messages (its disconnect)."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _raising(exc: Exception) -> Receive:
    async def receive() -> Message:
        raise exc

    return receive


def _call(scope: Scope, body: bytes) -> Call:
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", ())}
    fields, file_bytes = _body_fields(headers.get("content-type", ""), body)
    query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    candidates = [credentials.strip() if scheme.lower() == "bearer" else None]
    # the query string before the body, as LibreTranslate reads it (Flask's request.values)
    candidates += [query.get(name) for name in KEY_FIELDS] + [fields.get(name) for name in KEY_FIELDS]
    key = next((c for c in candidates if isinstance(c, str) and c), None)
    chars = file_bytes + sum(_chars(fields.get(name)) for name in TEXT_FIELDS)
    client = scope.get("client")
    return Call(key=key, address=str(client[0]) if client else "unknown", chars=chars)


def _chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(len(v) for v in value if isinstance(v, str))
    return 0


def _body_fields(content_type: str, body: bytes) -> tuple[dict[str, Any], int]:
    """The body's fields (JSON object, url-encoded or multipart form; {} if none parse) and its files' bytes."""
    media, _, params = content_type.partition(";")
    media = media.strip().lower()
    try:
        if media == "application/json" or (media.startswith("application/") and media.endswith("+json")):
            data = json.loads(body)
            return (data if isinstance(data, dict) else {}), 0
        if media == "application/x-www-form-urlencoded":
            return _form_fields(parse_qsl(body.decode("utf-8"), keep_blank_values=True)), 0
        if media == "multipart/form-data":
            return _multipart_fields(params, body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8: no key, no text (the route answers the 400)
        pass
    return {}, 0


def _form_fields(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in pairs:
        if name in fields:  # a repeated field (several q): a list
            previous = fields[name]
            fields[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            fields[name] = value
    return fields


_BOUNDARY = re.compile(r'boundary="?([^";]+)"?', re.IGNORECASE)
_NAME = re.compile(rb'(?:^|;)\s*name="([^"]*)"', re.IGNORECASE)
_FILENAME = re.compile(rb";\s*filename\*?=", re.IGNORECASE)


def _multipart_fields(params: str, body: bytes) -> tuple[dict[str, Any], int]:
    """The text fields of a multipart body (each field once) and the bytes of its files."""
    found = _BOUNDARY.search(params)
    if not found:
        return {}, 0
    pairs: list[tuple[str, str]] = []
    file_bytes = 0
    for part in body.split(b"--" + found.group(1).encode("latin-1"))[1:]:
        if part.startswith(b"--"):  # the closing delimiter
            break
        head, separator, data = part.partition(b"\r\n\r\n")
        if not separator:
            continue
        data = data.removesuffix(b"\r\n")
        disposition = next(
            (line for line in head.split(b"\r\n") if line.lower().startswith(b"content-disposition")), b""
        )
        name = _NAME.search(disposition.partition(b":")[2])
        if _FILENAME.search(disposition):
            file_bytes += len(data)
        elif name:
            pairs.append((name.group(1).decode("utf-8", "replace"), data.decode("utf-8", "replace")))
    return _form_fields(pairs), file_bytes
