"""The LibreTranslate API's pydantic models, for its OpenAPI description (/openapi.json, /spec) only.

The routes read their fields themselves (:mod:`enzh.serve.libre_request`, with LibreTranslate's messages);
these models say what they accept and answer, with the limits of the app's ServeOptions.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from enzh.serve.options import ServeOptions
from enzh.serve.schemas import GlossaryMap, Score, json_body


class LibreErrorBody(BaseModel):
    error: str = Field(description="what went wrong, in one line")


class DetectedLanguage(BaseModel):
    confidence: float = Field(ge=0, le=100)
    language: str


class LibreTranslation(BaseModel):
    translatedText: str | list[str]
    detectedLanguage: DetectedLanguage | list[DetectedLanguage] | None = Field(
        None, description="with source=auto only: one per text when q is a list"
    )
    alternatives: list[str] | list[list[str]] | None = Field(
        None, description="with alternatives > 0 only: per text when q is a list"
    )
    translationConfidence: Score | list[Score | None] | None = Field(
        None, description="enzh extension, with scores: true only: the translation's confidence (per text for a list)"
    )


class TranslatedFile(BaseModel):
    translatedFileUrl: str


class Language(BaseModel):
    code: str
    name: str
    targets: list[str]


Languages = list[Language]
Detections = list[DetectedLanguage]


def translate_body(options: ServeOptions) -> dict[str, Any]:
    """``openapi_extra`` of POST /translate (JSON, or a form with one q)."""
    One = Annotated[str, StringConstraints(min_length=1, max_length=options.max_chars_per_text)]
    Text = Annotated[str, StringConstraints(max_length=options.max_chars_per_text)]
    Texts = Annotated[list[Text], Field(min_length=1, max_length=options.max_texts_per_request)]

    class LibreTranslateRequest(BaseModel):
        model_config = ConfigDict(extra="allow", title="LibreTranslateRequest")

        q: One | Texts = Field(description="text, or a list of texts (JSON only)")
        source: Literal["en", "auto", "zh", "zh-Hans", "zt", "zh-Hant"] = Field(
            "en", description="auto: detected per text; each text goes to the model of its direction"
        )
        target: Literal["zh", "zh-Hans", "zh-CN", "zt", "zh-Hant", "zh-TW", "en"] = Field(
            "zh-Hans", description="case-insensitive; a text already in it comes back unchanged"
        )
        format: Literal["text", "html"] = "text"
        alternatives: int = Field(0, ge=0, le=options.max_alternatives, description="alternatives per text")
        api_key: str | None = Field(None, description="needed when the server has API keys (also: apiKey)")
        scores: bool = Field(False, description="enzh extension: also answer each translation's confidence")
        glossary: GlossaryMap | None = Field(
            None,
            description="enzh extension: terms with a fixed translation, {source term: target term} (a form: that "
            "object as JSON); each source term found gets its target once per occurrence",
        )

    return json_body(LibreTranslateRequest, form=True)


def detect_body(options: ServeOptions) -> dict[str, Any]:
    """``openapi_extra`` of POST /detect."""
    Text = Annotated[str, StringConstraints(min_length=1, max_length=options.max_chars_per_text)]
    Texts = Annotated[list[Text], Field(min_length=1, max_length=options.max_texts_per_request)]

    class LibreDetectRequest(BaseModel):
        model_config = ConfigDict(extra="allow", title="LibreDetectRequest")

        q: Text | Texts = Field(description="text, or a list of texts (JSON only)")
        api_key: str | None = Field(None, description="needed when the server has API keys (also: apiKey)")
        scores: bool = Field(False, description="enzh extension: also answer each translation's confidence")

    return json_body(LibreDetectRequest, form=True)


def suggest_body() -> dict[str, Any]:
    """``openapi_extra`` of POST /suggest: LibreTranslate's fields (this server answers 403: suggestions are off)."""

    class LibreSuggestRequest(BaseModel):
        model_config = ConfigDict(extra="allow", title="LibreSuggestRequest")

        q: str = Field(description="the original text")
        s: str = Field(description="the suggested translation")
        source: str = Field(description="the language of q")
        target: str = Field(description="the language of s")
        api_key: str | None = Field(None, description="needed when the server has API keys (also: apiKey)")
        scores: bool = Field(False, description="enzh extension: also answer each translation's confidence")

    return json_body(LibreSuggestRequest, form=True)


def file_body() -> dict[str, Any]:
    """``openapi_extra`` of POST /translate_file (multipart)."""
    schema = {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {"type": "string", "format": "binary"},
            "source": {"type": "string", "enum": ["en", "auto", "zh", "zh-Hans", "zt", "zh-Hant"], "default": "en"},
            "target": {
                "type": "string",
                "enum": ["zh", "zh-Hans", "zh-CN", "zt", "zh-Hant", "zh-TW", "en"],
                "default": "zh-Hans",
            },
            "api_key": {"type": "string"},
        },
    }
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": schema}}}}


_DESCRIPTIONS = {
    400: "bad request: a missing or wrong field, an unsupported language, format or file, a limit exceeded",
    403: "no valid API key (when the server has keys); on /suggest: suggestions are disabled on this server",
    404: "no such file (never stored, or expired)",
    413: "body larger than max_body_bytes",
    429: "over the key's limit, or the queue is full; see Retry-After",
    500: "internal error (a bug; never caused by input)",
    503: "not ready, draining, or the worker has died; see Retry-After",
    504: "deadline passed while queued or running",
}


def libre_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """FastAPI ``responses=`` for these statuses, answered as ``{"error": message}``."""
    retry = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "string"}}}
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": LibreErrorBody, "description": _DESCRIPTIONS[status]}
        if status in (429, 503):
            entry["headers"] = retry
        out[status] = entry
    return out
