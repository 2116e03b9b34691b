"""Who may translate, and how much: API keys and per-minute limits on the translation endpoints, and CORS.

Off by default (a local service needs neither). With ``api_keys`` (a :class:`enzh.serve.keys.KeyStore` file), every
POST to a translation endpoint (the guarded routes of :mod:`enzh.serve.routes`) must carry a key of the store:
``api_key`` or ``apiKey`` in the JSON, form or multipart body or the query string, or ``Authorization: Bearer KEY``
(the way for /v1/translate, whose body takes no unknown fields); else 403. With ``req_limit``/``char_limit`` (or a
key's own limits), a client over its limit gets 429 + Retry-After (:mod:`enzh.serve.limits`); without keys the
client is its address. Errors have the shape of the endpoint's API (LibreTranslate's ``{"error": message}`` or
/v1's).

A raw ASGI middleware inside the body limit: it reads the (capped) body once with the one body reader
(:mod:`enzh.serve.body`), which keeps what it parsed for the route, so the characters counted are those the route
translates (``q`` of the query string included; an uploaded file's text, not its bytes: :mod:`enzh.serve.uploads`);
it decides, and replays the body to the route, so the routes need to know nothing of keys. Keys are looked up by
hash and never logged. The client's address is the connection's: X-Forwarded-For and X-Real-IP count only from
``trusted_proxies`` (:func:`client_address`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI
from starlette.datastructures import UploadFile
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request

from enzh.serve.body import Body, read_body
from enzh.serve.errors import ApiError, BodyTooLarge, error_for_path
from enzh.serve.keys import KeyStore
from enzh.serve.libre_request import Fields, source_of, target_of, texts_in
from enzh.serve.limits import Limiter, Limits
from enzh.serve.middleware import ASGIApp, Message, Receive, Scope, Send
from enzh.serve.options import ServeOptions
from enzh.serve.routes import BY_PATH, GUARDED_PATHS, LIBRE, Route
from enzh.serve.uploads import upload_chars

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
KEY_FIELDS = ("api_key", "apiKey")

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
    address: str  # the client's address (:func:`client_address`)
    route: Route
    body: Body | None  # as the route reads it (:mod:`enzh.serve.body`); None: it cannot be parsed (a 400 there)


class Guard:
    """Keys (when ``store``), then limits: ``admit(call)`` is None or the :class:`Denial`."""

    def __init__(self, options: ServeOptions, store: KeyStore | None, limiter: Limiter | None = None) -> None:
        self.store = store
        self.defaults = Limits(requests=options.req_limit, chars=options.char_limit)
        self.limiter = limiter or Limiter()
        self.proxies = options.trusted_networks()

    async def admit(self, call: Call) -> Denial | None:
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
        chars = await chars_of(call.route, call.body) if limits.chars else 0
        refusal = self.limiter.check(client, limits, chars)
        if refusal is None:
            return None
        if refusal.never_fits:
            message = f"Invalid request: request ({chars}) exceeds text limit ({refusal.allowed})"
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
            raw = await _read_raw(receive)
        except BodyTooLarge as exc:  # the route answers the 413, in its API's shape
            await self.app(scope, _raising(exc), send)
            return
        if raw is None:  # the client left while sending (or the read timeout closed it): answered for the metrics
            await error_for_path(scope["path"], 499, "client_gone", "the client closed the connection")(
                scope, receive, send
            )
            return
        try:  # read as the route reads it, and kept in the request's state for the route (enzh.serve.body)
            body: Body | None = await read_body(Request(scope, _once(raw)))
        except ApiError:  # not parsed: the route answers the same error
            body = None
        try:
            denial = await self.guard.admit(_call(scope, body, self.guard.proxies))
            replay = _replaying(raw, receive)
            if denial is None:
                await self.app(scope, replay, send)
                return
            if self.on_reject:
                self.on_reject(denial.code)
            response = error_for_path(scope["path"], denial.status, denial.code, denial.message, denial.headers)
            await response(scope, replay, send)
        finally:
            if body is not None:
                await body.close()


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


async def _read_raw(receive: Receive) -> bytes | None:
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


def _call(scope: Scope, body: Body | None, proxies: Sequence[Network]) -> Call:
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", ())}
    query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    candidates = [credentials.strip() if scheme.lower() == "bearer" else None]
    # the query string before the body, as LibreTranslate reads it (Flask's request.values)
    candidates += [query.get(name) for name in KEY_FIELDS]
    if body is not None:
        candidates += [body.get(name) for name in KEY_FIELDS]
    key = next((c for c in candidates if isinstance(c, str) and c), None)
    return Call(key=key, address=client_address(scope, headers, proxies), route=BY_PATH[scope["path"]], body=body)


async def chars_of(route: Route, body: Body | None) -> int:
    """The characters ``route`` translates from ``body``, as it reads them: the texts of its text field (a
    LibreTranslate form's with LF line ends), and an uploaded file's text (:func:`enzh.serve.uploads.upload_chars`,
    not its bytes). 0 for a body the route refuses."""
    if body is None:
        return 0
    fields = Fields(body.fields, json=body.json)
    chars = 0
    if route.texts is not None:
        if route.api == LIBRE:
            chars += sum(len(text) for text in texts_in(fields))
        elif body.json:
            chars += _chars(body.get(route.texts))
    upload = body.get(route.file) if route.file is not None else None
    if isinstance(upload, UploadFile):
        try:
            source = source_of(fields)
        except ApiError:  # refused by the route: counted as any language might be read
            source = "auto"
        try:
            target: str | None = target_of(fields)
        except ApiError:  # refused by the route
            target = None
        chars += await upload_chars(upload, source, body.documents, target)
    return chars


def client_address(scope: Scope, headers: dict[str, str], proxies: Sequence[Network]) -> str:
    """The client's address: the connection's peer as uvicorn gives it (uvicorn takes it from X-Forwarded-For
    only when the peer is one of ``trusted_proxies``, :func:`enzh.serve.run.proxy_settings`), or X-Real-IP when
    that address is itself a trusted proxy. Without trusted proxies both headers are ignored."""
    client = scope.get("client")
    address = str(client[0]) if client else "unknown"
    peer = _ip(address)
    if peer is not None and any(peer in network for network in proxies):
        real = _ip(headers.get("x-real-ip", ""))
        if real is not None:
            return str(real)
    return address


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _once(body: bytes) -> Receive:
    """A ``receive`` that gives ``body`` (read already), then says the client has gone."""
    pending = True

    async def receive() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(len(v) for v in value if isinstance(v, str))
    return 0
