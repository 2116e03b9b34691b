"""The fields of a LibreTranslate request, read the way LibreTranslate reads them and checked with its messages.

A JSON body (``application/json`` or ``+json``) must be an object; any other request's fields are those of its
query string and of its form (url-encoded or multipart), the query string's first, as LibreTranslate's
``request.values``. So ``POST /translate?q=...&target=zh`` with no body works too. Only the first ``q`` of a
form counts, and its CRLF line ends become LF. Every failure is a :class:`LibreError` (400) whose message is
LibreTranslate's where it has one (``Invalid request: missing q parameter``, ``zz is not supported``, ...).

Language codes are case-insensitive: English is ``en`` (``en-US`` too); Chinese is ``zh``, ``zh-Hans``,
``zh-CN``, ``zh-SG`` (Simplified) and ``zt``, ``zh-Hant``, ``zh-TW``, ``zh-HK`` (Traditional). Whether a
source and target pair is served depends on the models loaded (:meth:`enzh.serve.service.Service.route`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request

from enzh.runtime.segment import clean_text
from enzh.serve.errors import ApiError, LibreError
from enzh.serve.options import ServeOptions

SIMPLIFIED = ("zh", "zh-hans", "zh-cn", "zh-sg", "zh_hans", "zh_cn")
TRADITIONAL = ("zt", "zh-hant", "zh-tw", "zh-hk", "zh_hant", "zh_tw")
TARGETS = {**dict.fromkeys(SIMPLIFIED, "zh-Hans"), **dict.fromkeys(TRADITIONAL, "zh-Hant")}
_ENGLISH = re.compile(r"en([-_][a-z0-9]{2,8})*")
FORMATS = ("text", "html")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True)
class Fields:
    """A request's fields (JSON values, or strings and uploaded files) and whether they came as JSON."""

    values: dict[str, Any]
    json: bool

    def get(self, name: str) -> Any:
        return self.values.get(name)


async def read_fields(request: Request, *, max_fields: int = 32) -> Fields:
    """The fields of ``request`` (see the module's docstring)."""
    try:
        return await _read_fields(request, max_fields)
    except ClientDisconnect:  # it left, or the read timeout (enzh.serve.protocol) closed it: nobody to answer
        raise ApiError(499, "client_gone", "the client closed the connection") from None


async def _read_fields(request: Request, max_fields: int) -> Fields:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media == "application/json" or (media.startswith("application/") and media.endswith("+json")):
        return Fields(_clean(_parse_json(await request.body())), json=True)
    values: dict[str, Any] = {}
    for key, value in request.query_params.multi_items():
        values.setdefault(key, value)
    if media in FORM_TYPES:
        for key, value in (await _form(request, media, max_fields)).items():
            values.setdefault(key, value)
    else:
        await request.body()  # read and dropped, as LibreTranslate ignores a body it cannot parse
    return Fields({k: _clean(v) for k, v in values.items()}, json=False)


def _parse_json(body: bytes) -> Any:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, absurd nesting
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise LibreError(400, f"Invalid JSON format: {reason}") from None
    if not isinstance(data, dict):
        raise LibreError(400, "Invalid JSON format")
    return data


async def _form(request: Request, media: str, max_fields: int) -> dict[str, Any]:
    if media == "application/x-www-form-urlencoded":
        try:
            pairs = parse_qsl((await request.body()).decode("utf-8"), keep_blank_values=True, errors="strict")
        except (UnicodeDecodeError, ValueError):
            raise LibreError(400, "Invalid request: the form is not valid UTF-8 url-encoded data") from None
        values: dict[str, Any] = {}
        for key, value in pairs:
            values.setdefault(key, value)
        return values
    try:
        form = await request.form(max_files=1, max_fields=max_fields)
    except (MultiPartException, HTTPException) as exc:  # a broken multipart body (starlette raises either)
        detail = getattr(exc, "detail", None) or getattr(exc, "message", None) or type(exc).__name__
        raise LibreError(400, f"Invalid request: {detail}") from None
    parts: dict[str, Any] = {}
    for name, part in form.multi_items():
        parts.setdefault(name, part)
    return parts


def _clean(value: Any) -> Any:
    """Lone surrogates (legal in JSON escapes, not in UTF-8) become U+FFFD everywhere."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(str(k)): _clean(v) for k, v in value.items()}
    return value


# -- the fields ----------------------------------------------------------------------------------------------


def texts_of(fields: Fields, options: ServeOptions) -> tuple[list[str], bool]:
    """(the texts of ``q``, whether ``q`` was a list), within the service's limits."""
    q = fields.get("q")
    if isinstance(q, UploadFile) or (q is not None and not isinstance(q, str | list)):
        raise LibreError(400, "Invalid request: q must be a string or a list of strings")
    if not q:
        raise LibreError(400, "Invalid request: missing q parameter")
    if isinstance(q, list) and not all(isinstance(t, str) for t in q):
        raise LibreError(400, "Invalid request: q must be a string or a list of strings")
    texts = list(q) if isinstance(q, list) else [q]
    if not fields.json:
        texts = [t.replace("\r\n", "\n").replace("\r", "\n") for t in texts]
    if len(texts) > options.max_texts_per_request:
        raise LibreError(
            400, f"Invalid request: request ({len(texts)}) exceeds text limit ({options.max_texts_per_request})"
        )
    for text in texts:
        if len(text) > options.max_chars_per_text:
            raise LibreError(
                400, f"Invalid request: request ({len(text)}) exceeds text limit ({options.max_chars_per_text})"
            )
    total = sum(len(t) for t in texts)
    if total > options.max_request_chars:
        raise LibreError(
            400, f"Invalid request: request ({total}) exceeds character limit ({options.max_request_chars})"
        )
    return texts, isinstance(q, list)


def _code(fields: Fields, name: str) -> str | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise LibreError(400, f"Invalid request: {name} must be a language code")
    return value.strip().lower()


def source_of(fields: Fields) -> str:
    """``en``, ``zh``, ``zh-Hant`` (Chinese written in Traditional characters) or ``auto``; default ``en``."""
    code = _code(fields, "source")
    if code is None or _ENGLISH.fullmatch(code):
        return "en"
    if code == "auto":
        return "auto"
    if code in TARGETS:
        return "zh-Hant" if TARGETS[code] == "zh-Hant" else "zh"
    raise LibreError(400, f"{code} is not supported")


def target_of(fields: Fields) -> str:
    """``zh-Hans``, ``zh-Hant`` or ``en``; default ``zh-Hans``."""
    code = _code(fields, "target")
    if code is None:
        return "zh-Hans"
    if code in TARGETS:
        return TARGETS[code]
    if _ENGLISH.fullmatch(code):
        return "en"
    raise LibreError(400, f"{code} is not supported")


def code_of(fields: Fields, name: str) -> str:
    """The code the request gave for ``name`` (source or target), as sent (lower-cased), for messages."""
    value = fields.get(name)
    return value.strip().lower() if isinstance(value, str) and value.strip() else ""


def format_of(fields: Fields) -> str:
    value = fields.get("format")
    if value is None or value == "":
        return "text"
    if value not in FORMATS:
        raise LibreError(400, f"{value} format is not supported")
    return str(value)


def alternatives_of(fields: Fields, limit: int) -> int:
    """How many alternatives are asked for (0: none)."""
    value = fields.get("alternatives")
    if value is None or value == "":
        return 0
    if (isinstance(value, float) and value.is_integer()) or (
        isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d{1,9}\s*", value)
    ):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise LibreError(400, "Invalid request: alternatives parameter is not a number")
    if value < 0:
        raise LibreError(400, "Invalid request: alternatives parameter must be >= 0")
    if value > limit:
        raise LibreError(400, f"Invalid request: alternatives parameter must be <= {limit}")
    return value
