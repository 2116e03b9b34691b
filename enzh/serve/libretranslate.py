"""The LibreTranslate API (as LibreTranslate 1.x serves it), for its clients unchanged: libretranslatepy, the npm
``libretranslate`` package, Mastodon, Weblate, LibreTranslate's own web page.

``POST /translate`` (JSON or form: ``q`` a text or a list, ``source`` en/auto/zh, ``target``, ``format``
text/html, ``alternatives``), ``POST /detect``, ``GET /languages``, ``GET /frontend/settings``, ``GET /spec``,
``GET /health``, ``POST /translate_file`` (multipart) and ``GET /download_file/<id>/<name>``. Answers have
LibreTranslate's shapes, errors are ``{"error": message}`` with its statuses (:mod:`enzh.serve.errors`); keys
and limits are checked before the routes (:mod:`enzh.serve.access`), which ignore ``api_key``/``apiKey``.

Every text goes to the model of its direction (:meth:`enzh.serve.service.Service.route`): ``source`` and
``target`` name it, and with ``source=auto`` every text is detected on its own (:mod:`enzh.serve.langid`; the
text of HTML, not its tags) and routed on its own. Text already in the target language comes back unchanged;
a direction no model serves, or a language no model reads, is a 400 naming the directions there are. A
detection below :data:`CLEAR` confidence is settled in favour of a language the models read when one is among
its candidates (one or two words are often a toss-up). docs/server.md has the whole contract.
"""

from __future__ import annotations

import asyncio
import mimetypes
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from starlette.datastructures import UploadFile
from starlette.responses import FileResponse, Response

from enzh.documents.errors import DocumentError
from enzh.documents.options import DocumentOptions
from enzh.runtime.default_model import DEMO_NAME, demo_name
from enzh.runtime.router import base_language
from enzh.serve import libre_schemas as schemas
from enzh.serve.body import read_body
from enzh.serve.downloads import DOWNLOAD_HEADERS, FileStore, safe_name
from enzh.serve.errors import ApiError, LibreError, json_response
from enzh.serve.langid import Detector, Guess
from enzh.serve.libre_request import (
    Fields,
    alternatives_of,
    code_of,
    format_of,
    read_fields,
    source_of,
    target_of,
    texts_of,
)
from enzh.serve.modes import Modes
from enzh.serve.quality import score_payload, scores_of
from enzh.serve.schemas import glossary_field
from enzh.serve.service import SCRIPTS, Service, Target
from enzh.serve.uploads import document_source, file_format, supported_formats

TAG = "libretranslate"
TRANSLATED = ("en", "zh")  # the languages a lone model that names none is taken to read and write
CLEAR = 50.0  # a detection at least this confident is taken as it is
NAMES = {"en": "English", "zh-Hans": "Chinese (Simplified)", "zh-Hant": "Chinese (Traditional)"}
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}
# Chinese as a source in /languages when a model translates from it: every code clients send for it.
CHINESE_SOURCES = (
    ("zh", "Chinese"),
    ("zh-Hans", NAMES["zh-Hans"]),
    ("zt", NAMES["zh-Hant"]),
    ("zh-Hant", NAMES["zh-Hant"]),
)
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
        summary="Translate text or HTML (a string or a list); each text goes to the model of its direction",
        tags=[TAG],
    )
    async def translate(request: Request) -> Response:
        arrived = time.monotonic()
        fields = await read_fields(request)
        texts, many = texts_of(fields, options)
        source, target, html = source_of(fields), target_of(fields), format_of(fields) == "html"
        alternatives = alternatives_of(fields, options.max_alternatives)
        try:
            scores = scores_of(fields.get("scores"))  # an enzh extension: the page's low-confidence mark
            glossary = glossary_field(fields.get("glossary"))  # an enzh extension: terms with a fixed translation
        except ValueError as exc:
            raise LibreError(400, f"Invalid request: {exc}") from None
        if service.router is None:
            service.admit()  # not loaded: 503 (which directions there are is not known yet)
        _check_target(service, fields, target, source)
        detected: list[Guess] | None = None
        if source == "auto":
            readable = [_visible_text(t) for t in texts] if html else texts
            known = read_languages(service)
            detected = await _detect(detector, readable, each=True, known=known)
            for i, guess in enumerate(detected):
                _check_detected(service, guess, f"q[{i}]" if many else "q")
            languages = [guess.language for guess in detected]
        else:
            languages = [source] * len(texts)
        found_routes: dict[str, Target | None] = {}
        routes = []
        for i, language in enumerate(languages):
            if language not in found_routes:
                where = (f"q[{i}]" if many else "q") if detected is not None else None
                found_routes[language] = _route(service, fields, language, target, where)
            routes.append(found_routes[language])
        result = await modes.translate_routed(
            request,
            texts,
            routes,
            beam_size=None,
            arrived=arrived,
            html=html,
            alternatives=alternatives,
            scores=scores,
            glossary=glossary,
        )
        payload: dict[str, Any] = {"translatedText": result.translations if many else result.translations[0]}
        if detected is not None:
            answers = [guess.as_json() for guess in detected]
            payload["detectedLanguage"] = answers if many else answers[0]
        if alternatives > 0:
            payload["alternatives"] = result.alternatives if many else (result.alternatives or [[]])[0]
        if scores:
            found = [score_payload(t) for t in result.details or []]
            payload["translationConfidence"] = found if many else found[0]
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
        guesses = await _detect(detector, texts, each=False, known=TRANSLATED)
        return json_response([guess.as_json() for guess in guesses])


def read_languages(service: Service) -> tuple[str, ...]:
    """The languages a text may be in: those the models translate from or into (a text in a target language
    comes back unchanged)."""
    found = dict.fromkeys(language for direction in service.directions for language in direction)
    return tuple(found) or TRANSLATED


def _name(code: str) -> str:
    return LANGUAGE_NAMES.get(base_language(code), code)


def _route(service: Service, fields: Fields, source: str, target: str, where: str | None) -> Target | None:
    """The model for texts in ``source`` into ``target``; None: they are in the target language already (kept)."""
    if base_language(source) == base_language(target):
        return None
    if not service.serves(source, target):
        sent = code_of(fields, "source") if where is None else base_language(source)
        detected = f" (detected in {where})" if where is not None else ""
        raise LibreError(
            400,
            f"{_name(target)} ({code_of(fields, 'target') or target}) is not available as a target language from "
            f"{_name(source)} ({sent or source}){detected}; this server translates {service.offered()}",
        )
    try:
        return service.route(source, target)
    except ApiError as exc:
        raise LibreError(400, exc.message) from None


async def _detect(detector: Detector, texts: list[str], *, each: bool, known: tuple[str, ...]) -> list[Guess]:
    """``each``: the chosen language of every text (:func:`_choose` among ``known``); else the candidates for all
    of them."""

    def work() -> list[Guess]:
        if each:
            return [_choose(detector.detect(text), known) for text in texts]
        return list(detector.detect_all(texts))

    if detector.needs_model(texts) or sum(len(t) for t in texts) > 2000:  # loading takes seconds: off the loop
        return await asyncio.get_running_loop().run_in_executor(None, work)
    return work()


def _choose(guesses: tuple[Guess, ...], known: tuple[str, ...]) -> Guess:
    """The language of a text: the best candidate, unless it is unclear and a language of ``known`` is one."""
    best = guesses[0]
    if best.language in known or best.confidence >= CLEAR:
        return best
    return next((g for g in guesses if g.language in known), best)


def _check_detected(service: Service, guess: Guess, where: str) -> None:
    if guess.language not in read_languages(service):
        raise LibreError(
            400,
            f"{guess.language} is not supported (detected in {where} with confidence {guess.confidence:g}); "
            f"this server translates {service.offered()}",
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
    """The Chinese scripts the models write (both until they are loaded; none when no model writes Chinese)."""
    if service.router is None:
        return list(SCRIPTS)
    return [script for script in SCRIPTS if service.writes(script)]


def _check_target(service: Service, fields: Fields, target: str, source: str) -> None:
    """400 for a target no model writes (a Chinese script included), as LibreTranslate words it."""
    if service.router is None or service.writes(target):
        return
    sent = code_of(fields, "target") or target
    if target in SCRIPTS and service.writes("zh"):
        raise LibreError(400, f"{sent} is not supported")  # a script no model writes
    origin = "any language" if source == "auto" else f"{_name(source)} ({code_of(fields, 'source') or source})"
    raise LibreError(
        400,
        f"{_name(target)} ({sent}) is not available as a target language from {origin}; "
        f"this server translates {service.offered()}",
    )


# -- /translate_file, /download_file ---------------------------------------------------------------------


def _add_files(app: FastAPI, service: Service, modes: Modes) -> None:
    store: FileStore = app.state.files
    detector: Detector = app.state.detector

    @app.post(
        "/translate_file",
        response_model=schemas.TranslatedFile,
        responses=schemas.libre_errors(400, 403, 413, 429, 500, 503, 504),
        openapi_extra=schemas.file_body(),
        summary="Translate a file (txt, html, md, srt, vtt, docx, pptx, xlsx, odt, odp, epub, jsonl, tsv, csv, po, "
        "xliff); answers its download URL",
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
        format = file_format(name)
        source, target = source_of(fields), target_of(fields)
        if service.router is None:
            service.admit()
        _check_target(service, fields, target, source)
        data = await upload.read()
        await upload.close()
        try:
            if source == "auto":
                text = await modes.document_text(data, format, name)
                [guess] = await _detect(detector, [text], each=True, known=read_languages(service))
                _check_detected(service, guess, "the file")
                language = guess.language
            else:
                language = base_language(source)
            # the pieces to translate are those in the script of its language (po and xliff name the target too)
            read_as = DocumentOptions(format=format, source=document_source(language), target=target)
            # read already when the limit checks counted its text (enzh.serve.uploads): the same reading
            parsed = (await read_body(request)).documents.pop(read_as, None)
            if parsed is None:
                parsed = await modes.parse_document(data, read_as, name)
        except DocumentError as exc:
            raise LibreError(400, f"Invalid request: {_one_line(exc)}") from None
        route = _route(service, fields, language, target, "the file" if source == "auto" else None)
        if route is None:
            output = data  # already in the target language
        else:
            output = await modes.render_document(parsed, route=route, options=read_as, request=request)
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
            raise LibreError(404, "This file does not exist or has expired; translate it again", DOWNLOAD_HEADERS)
        media = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return FileResponse(path, filename=name, media_type=media, headers=DOWNLOAD_HEADERS)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


# -- /languages, /frontend/settings, /spec ------------------------------------------------------------------


def languages(service: Service) -> list[dict[str, Any]]:
    """LibreTranslate's language list, from the loaded models: English, whose targets are every code of every
    Chinese script written from it, then Chinese under the codes clients use for it (``zh`` and ``zh-Hans``;
    ``zt`` and ``zh-Hant``), whose target is English when a model translates Chinese into English (else none)."""
    loaded = service.router is not None
    into_chinese = not loaded or service.serves("en", "zh")
    into_english = loaded and service.serves("zh", "en")
    scripts = available_targets(service) if into_chinese else []
    listed = [{"code": "en", "name": "English", "targets": [c for t in scripts for c in TARGET_CODES[t]]}]
    chinese = list(CHINESE_SOURCES) if into_english else [entry for script in scripts for entry in LISTED[script]]
    listed += [{"code": code, "name": name, "targets": ["en"] if into_english else []} for code, name in chinese]
    return listed


def model_list(service: Service) -> list[dict[str, Any]]:
    """Each model with its directions (as /languages would list them) and whether it is an embedded demo."""
    if service.models and all(m.engine is not None for m in service.models):
        return [
            {
                "name": m.label,
                "directions": [f"{a}-{b}" for a, b in m.directions],
                "demo": m.engine is not None and m.engine.info.embedded,
            }
            for m in service.models
        ]
    directories = service.options.models
    if not directories:  # the embedded pair, not loaded yet
        return [
            {"name": DEMO_NAME, "directions": ["en-zh"], "demo": True},
            {"name": f"{DEMO_NAME}-zh-en", "directions": ["zh-en"], "demo": True},
        ]
    return [
        {"name": demo_name(d) or Path(d).name, "directions": [], "demo": demo_name(d) is not None} for d in directories
    ]


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
        models = model_list(service)
        demo = any(m["demo"] for m in models)
        model = ", ".join(m["name"] for m in models)
        keys = options.api_keys is not None
        directions = [f"{a}-{b}" for a, b in service.directions] or [d for m in models for d in m["directions"]]
        source, target = ("en", "zh-Hans") if not directions or "en-zh" in directions else ("zh", "en")
        settings = {
            "charLimit": options.max_chars_per_text,
            "frontendTimeout": 500,
            "apiKeys": keys,
            "keyRequired": keys,
            "suggestions": False,
            "filesTranslation": True,
            "supportedFilesFormat": list(supported_formats()),
            "language": {
                "source": {"code": source, "name": NAMES.get(source, LANGUAGE_NAMES.get(source, source))},
                "target": {"code": target, "name": NAMES.get(target, target)},
            },
            "enzh": {
                "model": model,
                "models": models,
                "directions": directions,
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
