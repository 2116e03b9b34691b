"""The LibreTranslate API (as LibreTranslate 1.x serves it), for its clients unchanged: libretranslatepy, the npm
``libretranslate`` package, Mastodon, Weblate, LibreTranslate's own web page.

``POST /translate`` (JSON or form: ``q`` a text or a list, ``source`` en/auto/zh, ``target``, ``format``
text/html, ``alternatives``), ``POST /detect``, ``GET /languages``, ``GET /frontend/settings``, ``GET /spec``,
``GET /health``, ``POST /translate_file`` (multipart) and ``GET /download_file/<id>/<name>``. Answers have
LibreTranslate's shapes, errors are ``{"error": message}`` with its statuses (:mod:`enzh.serve.errors`); keys
and limits are checked before the routes (:mod:`enzh.serve.access`), which ignore ``api_key``/``apiKey``.

With ``source=auto`` every text is detected on its own (:mod:`enzh.serve.langid`; the text of HTML, not its
tags): Chinese comes back unchanged, English is translated, and a language the model does not translate is a
400. A detection below :data:`CLEAR` confidence is settled in favour of English or Chinese when either is among
its candidates (one or two words are often a toss-up). docs/server.md has the whole contract.
"""

from __future__ import annotations

import asyncio
import mimetypes
import time
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from starlette.datastructures import UploadFile
from starlette.responses import FileResponse, Response

from enzh.documents.errors import DocumentError
from enzh.documents.formats import EXTENSIONS, detect_format, get_format
from enzh.runtime.default_model import DEMO_NAME, is_default_model
from enzh.serve import libre_schemas as schemas
from enzh.serve.errors import LibreError, json_response
from enzh.serve.files import FileStore, safe_name
from enzh.serve.langid import Detector, Guess
from enzh.serve.libre_request import (
    Fields,
    alternatives_of,
    format_of,
    read_fields,
    source_of,
    target_of,
    texts_of,
)
from enzh.serve.modes import Modes
from enzh.serve.service import Service

TAG = "libretranslate"
TRANSLATED = ("en", "zh")  # languages a text may be in: English is translated, Chinese kept
CLEAR = 50.0  # a detection at least this confident is taken as it is
NAMES = {"en": "English", "zh-Hans": "Chinese (Simplified)", "zh-Hant": "Chinese (Traditional)"}
# The codes listed in /languages for each target; clients compare them with their own codes (docs/server.md).
TARGET_CODES = {"zh-Hans": ("zh", "zh-Hans", "zh-CN"), "zh-Hant": ("zt", "zh-Hant", "zh-TW", "zh-HK")}
LISTED = {
    "zh-Hans": (("zh", "Chinese"), ("zh-Hans", NAMES["zh-Hans"])),
    "zh-Hant": (("zt", NAMES["zh-Hant"]), ("zh-Hant", NAMES["zh-Hant"])),
}
SUGGESTIONS_DISABLED = "Suggestions are disabled on this server."  # LibreTranslate's words, which clients show
DEMO_NOTICE = (
    "This server runs enzh's small demo model: it knows simple everyday sentences (weather, family, food, "
    "travel, times and prices) and translates anything else poorly."
)


def add_libretranslate_routes(app: FastAPI, service: Service, modes: Modes) -> None:
    """The LibreTranslate routes on ``app``; the detector and the file store are ``app.state.detector``/``files``."""
    app.state.detector = Detector()
    app.state.files = FileStore(service.options.files_dir, service.options.download_ttl_s)
    _add_translate(app, service, modes)
    _add_files(app, service, modes)
    _add_info(app, service)


# -- /translate, /detect -----------------------------------------------------------------------------------


def _add_translate(app: FastAPI, service: Service, modes: Modes) -> None:
    options = service.options
    detector: Detector = app.state.detector

    @app.post(
        "/translate",
        response_model=schemas.LibreTranslation,
        responses=schemas.libre_errors(400, 403, 413, 429, 500, 503, 504),
        openapi_extra=schemas.translate_body(options),
        summary="Translate text or HTML (a string or a list); source=auto detects each text",
        tags=[TAG],
    )
    async def translate(request: Request) -> Response:
        arrived = time.monotonic()
        fields = await read_fields(request)
        texts, many = texts_of(fields, options)
        source, target, html = source_of(fields), target_of(fields), format_of(fields) == "html"
        alternatives = alternatives_of(fields, options.max_alternatives)
        _check_target(service, fields, target)
        detected: list[Guess] | None = None
        if source == "auto":
            readable = [_visible_text(t) for t in texts] if html else texts
            detected = await _detect(detector, readable, each=True)
            for i, guess in enumerate(detected):
                _check_detected(guess, f"q[{i}]" if many else "q")
            chinese = [guess.language == "zh" for guess in detected]
        else:
            chinese = [source == "zh"] * len(texts)
        outputs = list(texts)  # Chinese stays as it is
        found: list[list[str]] = [[] for _ in texts]
        todo = [i for i, keep in enumerate(chinese) if not keep]
        if todo:
            result = await modes.translate(
                request,
                [texts[i] for i in todo],
                target=target,
                beam_size=None,
                arrived=arrived,
                html=html,
                alternatives=alternatives,
            )
            for j, i in enumerate(todo):
                outputs[i] = result.translations[j]
                if result.alternatives is not None:
                    found[i] = result.alternatives[j]
        payload: dict[str, Any] = {"translatedText": outputs if many else outputs[0]}
        if detected is not None:
            languages = [guess.as_json() for guess in detected]
            payload["detectedLanguage"] = languages if many else languages[0]
        if alternatives > 0:
            payload["alternatives"] = found if many else found[0]
        return json_response(payload)

    @app.post(
        "/detect",
        response_model=schemas.Detections,
        responses=schemas.libre_errors(400, 403, 413, 429, 500),
        openapi_extra=schemas.detect_body(options),
        summary="Detect the language of a text (a list: one answer for all of them)",
        tags=[TAG],
    )
    async def detect(request: Request) -> Response:
        fields = await read_fields(request)
        texts, _ = texts_of(fields, options)
        guesses = await _detect(detector, texts, each=False)
        return json_response([guess.as_json() for guess in guesses])


async def _detect(detector: Detector, texts: list[str], *, each: bool) -> list[Guess]:
    """``each``: the chosen language of every text (:func:`_choose`); else the candidates for all of them."""

    def work() -> list[Guess]:
        if each:
            return [_choose(detector.detect(text)) for text in texts]
        return list(detector.detect_all(texts))

    if detector.needs_model(texts) or sum(len(t) for t in texts) > 2000:  # loading takes seconds: off the loop
        return await asyncio.get_running_loop().run_in_executor(None, work)
    return work()


def _choose(guesses: tuple[Guess, ...]) -> Guess:
    """The language of a text: the best candidate, unless it is unclear and English or Chinese is a candidate."""
    best = guesses[0]
    if best.language in TRANSLATED or best.confidence >= CLEAR:
        return best
    return next((g for g in guesses if g.language in TRANSLATED), best)


def _check_detected(guess: Guess, where: str) -> None:
    if guess.language not in TRANSLATED:
        raise LibreError(
            400,
            f"{guess.language} is not supported (detected in {where} with confidence {guess.confidence:g}); "
            "this server translates en into zh",
        )


class _TextOf(HTMLParser):
    """Collects the text of an HTML fragment (entities decoded), without scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def _visible_text(markup: str) -> str:
    """The text an HTML fragment shows (what its language is detected on)."""
    parser = _TextOf()
    parser.feed(markup)
    parser.close()
    return " ".join(" ".join(parser.parts).split())


def available_targets(service: Service) -> list[str]:
    """The targets the model translates into (both until the model is loaded)."""
    translator = service.translator
    if translator is None:
        return ["zh-Hans", "zh-Hant"]
    if not translator.info.targets:
        return ["zh-Hans"]  # a model without target tokens has one target
    found = []
    for target in ("zh-Hans", "zh-Hant"):
        try:
            translator.resolve_target(target)
        except ValueError:
            continue
        found.append(target)
    return found


def _check_target(service: Service, fields: Fields, target: str) -> None:
    if target not in available_targets(service):
        raise LibreError(400, f"{str(fields.get('target')).strip().lower()} is not supported")


# -- /translate_file, /download_file ---------------------------------------------------------------------


def _add_files(app: FastAPI, service: Service, modes: Modes) -> None:
    store: FileStore = app.state.files
    detector: Detector = app.state.detector

    @app.post(
        "/translate_file",
        response_model=schemas.TranslatedFile,
        responses=schemas.libre_errors(400, 403, 413, 429, 500, 503, 504),
        openapi_extra=schemas.file_body(),
        summary="Translate a file (txt, html, md, srt, vtt, docx, jsonl, tsv); answers its download URL",
        tags=[TAG],
    )
    async def translate_file(request: Request) -> Response:
        fields = await read_fields(request)
        upload = fields.get("file")
        if not isinstance(upload, UploadFile):
            raise LibreError(400, "Invalid request: missing file parameter")
        if not upload.filename:
            raise LibreError(400, "Invalid request: empty file")
        name = safe_name(upload.filename, "translated")
        format = _file_format(name)
        source, target = source_of(fields), target_of(fields)
        _check_target(service, fields, target)
        data = await upload.read()
        await upload.close()
        try:
            parsed = await modes.parse_document(data, format, name)
        except DocumentError as exc:
            raise LibreError(400, f"Invalid request: {_one_line(exc)}") from None
        if source == "auto":
            text = " ".join(block.text for block in parsed.units.blocks)
            [guess] = await _detect(detector, [text], each=True)
            _check_detected(guess, "the file")
            source = guess.language
        output = data if source == "zh" else await modes.render_document(parsed, target=target)
        file_id = await asyncio.get_running_loop().run_in_executor(None, store.put, name, output)
        url = request.url_for("download_file", file_id=file_id, name=quote(name, safe=""))
        return json_response({"translatedFileUrl": str(url)})

    @app.get(
        "/download_file/{file_id}/{name}",
        name="download_file",
        response_class=FileResponse,
        responses={
            200: {"content": {"application/octet-stream": {}}, "description": "the translated file"},
            **schemas.libre_errors(404),
        },
        summary="A file translated by /translate_file (for download_ttl_s seconds)",
        tags=[TAG],
    )
    async def download_file(file_id: str, name: str) -> Response:
        path = store.get(file_id, name)
        if path is None:
            raise LibreError(404, "This file does not exist or has expired; translate it again")
        media = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return FileResponse(path, filename=name, media_type=media)


def _file_format(name: str) -> str:
    try:
        format = detect_format(name)
    except DocumentError:
        format = ""
    if format not in supported_formats().values():
        raise LibreError(400, "Invalid request: file format not supported")
    return format


@cache
def supported_formats() -> dict[str, str]:
    """Extension -> format name, for the formats this installation can read (docx and md need their extra)."""
    found = {}
    for extension, format in EXTENSIONS.items():
        try:
            get_format(format)
        except DocumentError:
            continue
        found[extension] = format
    return found


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


# -- /languages, /frontend/settings, /spec ------------------------------------------------------------------


def languages(service: Service) -> list[dict[str, Any]]:
    """LibreTranslate's language list: English, whose targets are every code of every target, then Chinese under
    the codes clients use for it (``zh`` and ``zh-Hans``; ``zt`` and ``zh-Hant``), which translate into nothing."""
    targets = available_targets(service)
    listed = [{"code": "en", "name": "English", "targets": [c for t in targets for c in TARGET_CODES[t]]}]
    for target in targets:
        listed += [{"code": code, "name": name, "targets": []} for code, name in LISTED[target]]
    return listed


def _add_info(app: FastAPI, service: Service) -> None:
    options = service.options

    @app.get("/languages", response_model=schemas.Languages, summary="Languages and their targets", tags=[TAG])
    async def get_languages() -> Response:
        return json_response(languages(service))

    @app.get("/health", summary="LibreTranslate's health check (alive; /readyz says when ready)", tags=[TAG])
    async def health() -> Response:
        status, detail = service.state()
        if status in ("load_failed", "worker_dead"):
            raise LibreError(503, detail)
        return json_response({"status": "ok"})

    @app.get("/frontend/settings", summary="Settings for the web page", tags=[TAG])
    async def frontend_settings() -> Response:
        demo = options.model_dir is None or is_default_model(options.model_dir)
        model = service.model_name
        if model == "unknown":  # not loaded yet
            model = DEMO_NAME if demo else Path(options.model_dir or "").name
        keys = options.api_keys is not None
        settings = {
            "charLimit": options.max_chars_per_text,
            "frontendTimeout": 500,
            "apiKeys": keys,
            "keyRequired": keys,
            "suggestions": False,
            "filesTranslation": True,
            "supportedFilesFormat": list(supported_formats()),
            "language": {
                "source": {"code": "en", "name": NAMES["en"]},
                "target": {"code": "zh-Hans", "name": NAMES["zh-Hans"]},
            },
            "enzh": {
                "model": model,
                "demo": demo,
                "demoNotice": DEMO_NOTICE if demo else "",
                "maxAlternatives": options.max_alternatives,
                "targets": available_targets(service),
            },
        }
        return json_response(settings)

    @app.post(
        "/suggest",
        responses=schemas.libre_errors(403, 429),
        openapi_extra=schemas.suggest_body(),
        summary="Suggest a better translation: disabled on this server, as /frontend/settings says (403)",
        tags=[TAG],
    )
    async def suggest() -> Response:
        # LibreTranslate's answer when suggestions are off (its default): clients that offer "suggest" read
        # /frontend/settings first; one that posts anyway gets this, after the key and limit checks.
        raise LibreError(403, SUGGESTIONS_DISABLED)

    @app.get("/spec", summary="The OpenAPI description of the LibreTranslate API", tags=[TAG])
    async def spec() -> Response:
        full = app.openapi()
        paths = {
            path: item
            for path, item in full["paths"].items()
            if any(TAG in operation.get("tags", ()) for operation in item.values() if isinstance(operation, dict))
        }
        info = {**full["info"], "title": "LibreTranslate API (enzh)"}
        return json_response({**full, "info": info, "paths": paths})
