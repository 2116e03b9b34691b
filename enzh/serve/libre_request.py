"""The fields of a LibreTranslate request, read the way LibreTranslate reads them and checked with its messages.

A JSON body (``application/json`` or ``+json``) must be an object; any other request's fields are those of its query
string and of its form (url-encoded or multipart), the query string's first, as LibreTranslate's ``request.values``
(read by the one body reader, :mod:`enzh.serve.body`). So ``POST /translate?q=...&target=zh`` with no body works
too. Only the first ``q`` of a form counts, and its CRLF line ends become LF. Every failure is a :class:`LibreError`
(400) whose message is LibreTranslate's where it has one (``Invalid request: missing q parameter``, ``zz is not
supported``, ...).

Language codes are case-insensitive: English is ``en`` (``en-US`` too); Chinese is ``zh``, ``zh-Hans``,
``zh-CN``, ``zh-SG`` (Simplified) and ``zt``, ``zh-Hant``, ``zh-TW``, ``zh-HK`` (Traditional). Whether a
source and target pair is served depends on the models loaded (:meth:`enzh.serve.service.Service.route`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request

from enzh.serve.body import BodyError, read_body
from enzh.serve.errors import LibreError
from enzh.serve.options import ServeOptions

SIMPLIFIED = ("zh", "zh-hans", "zh-cn", "zh-sg", "zh_hans", "zh_cn")
TRADITIONAL = ("zt", "zh-hant", "zh-tw", "zh-hk", "zh_hant", "zh_tw")
TARGETS = {**dict.fromkeys(SIMPLIFIED, "zh-Hans"), **dict.fromkeys(TRADITIONAL, "zh-Hant")}
_ENGLISH = re.compile(r"en([-_][a-z0-9]{2,8})*")
FORMATS = ("text", "html")


@dataclass(frozen=True)
class Fields:
    """A request's fields (JSON values, or strings and uploaded files) and whether they came as JSON."""

    values: dict[str, Any]
    json: bool

    def get(self, name: str) -> Any:
        return self.values.get(name)


async def read_fields(request: Request) -> Fields:
    """The fields of ``request``, read by the one body reader (:func:`enzh.serve.body.read_body`), its errors in
    LibreTranslate's words."""
    try:
        body = await read_body(request)
    except BodyError as exc:
        if exc.kind == "json":
            raise LibreError(400, f"Invalid JSON format: {exc.reason}") from None
        raise LibreError(400, f"Invalid request: {exc.reason}") from None
    if body.json and not isinstance(body.data, dict):
        raise LibreError(400, "Invalid JSON format")
    return Fields(body.fields, json=body.json)


# -- the fields ----------------------------------------------------------------------------------------------


def texts_in(fields: Fields) -> list[str]:
    """The texts of ``q`` as the routes translate them (a form's CRLF line ends as LF); [] when ``q`` is
    missing or not a string or a list of strings (what the key and limit checks count)."""
    q = fields.get("q")
    if isinstance(q, list) and all(isinstance(t, str) for t in q):
        texts = list(q)
    elif isinstance(q, str):
        texts = [q]
    else:
        return []
    if not fields.json:
        texts = [t.replace("\r\n", "\n").replace("\r", "\n") for t in texts]
    return texts


def texts_of(fields: Fields, options: ServeOptions) -> tuple[list[str], bool]:
    """(the texts of ``q``, whether ``q`` was a list), within the service's limits."""
    q = fields.get("q")
    if isinstance(q, UploadFile) or (q is not None and not isinstance(q, str | list)):
        raise LibreError(400, "Invalid request: q must be a string or a list of strings")
    if not q:
        raise LibreError(400, "Invalid request: missing q parameter")
    if isinstance(q, list) and not all(isinstance(t, str) for t in q):
        raise LibreError(400, "Invalid request: q must be a string or a list of strings")
    texts = texts_in(fields)
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
