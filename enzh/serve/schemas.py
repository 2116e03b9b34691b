"""The API's pydantic models and the OpenAPI pieces FastAPI cannot infer (raw-body endpoints, error answers).

Request models are built per app by :func:`request_models`, because their limits come from ServeOptions (so
the OpenAPI schema shows them); response models do not depend on options.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from enzh.runtime.glossary import Glossary, GlossaryError
from enzh.serve.errors import ApiError
from enzh.serve.options import ServeOptions

# Most entries a request's own glossary may hold, and the longest term.
MAX_GLOSSARY_ENTRIES = 1000
MAX_GLOSSARY_TERM = 200
# a term holds a character other than whitespace (terms are stripped: an all-space one is empty)
Term = Annotated[str, StringConstraints(min_length=1, max_length=MAX_GLOSSARY_TERM, pattern=r"\S")]
GlossaryMap = Annotated[dict[Term, Term], Field(max_length=MAX_GLOSSARY_ENTRIES)]

# /v1's languages: what a source and a target may be (each direction needs a loaded model of it).
SOURCES = ("auto", "en", "zh", "zh-Hans", "zh-Hant")
TARGETS = ("zh-Hans", "zh-Hant", "en")


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class Timing(BaseModel):
    total: float = Field(description="milliseconds from the request's arrival to its response")
    queue: float = Field(description="milliseconds waiting for the worker")
    inference: float = Field(description="this request's share of batch inference time, milliseconds")


class Score(BaseModel):
    score: float = Field(
        description="the translation's mean token log-probability (length-normalised as the beam search does, all "
        "its sentences' tokens together; 0: certain, as for text returned unchanged)"
    )
    flags: list[str] = Field(
        description="warnings: low_score, repetition, length_ratio, copy, unknown_token (docs/quality.md)"
    )
    low_confidence: bool = Field(description="whether any flag fired")


class WordPairs(BaseModel):
    pharaoh: str = Field(description="the pairs as source-target word indices: 0-0 1-2 ...")
    pairs: list[tuple[int, int]] = Field(description="(source word, translated word) indices, from 0")
    source_words: list[str] = Field(description="the text's words (whitespace-separated; each Chinese character)")
    target_words: list[str] = Field(description="the translation's words, cut the same way")


class TranslateResponse(BaseModel):
    translations: list[str]
    model: str = Field(description="the models that translated the texts (comma-separated)")
    source: str = Field(description="the source asked for (auto: each text's own language)")
    target: str
    beam_size: int
    sentences: int = Field(description="sentences translated (after splitting)")
    timing_ms: Timing
    alternatives: list[list[str]] | None = Field(
        None, description="with alternatives > 0 only: per text, other translations of it, best first"
    )
    scores: list[Score | None] | None = Field(
        None, description="with scores: true only: per text, its confidence (null for format html)"
    )
    alignments: list[WordPairs | None] | None = Field(
        None,
        description="with alignments: true only: per text, its source word <-> translated word pairs (null for "
        "format html and from a model without an aligner)",
    )


class Health(BaseModel):
    status: str
    model: str | None = None
    models: list[str] | None = None
    detail: str | None = None


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


@dataclass(frozen=True)
class RequestModels:
    translate: type[BaseModel]  # POST /v1/translate


def request_models(options: ServeOptions) -> RequestModels:
    """The request models of one app; their limits come from ``options``."""
    Text = Annotated[str, StringConstraints(max_length=options.max_chars_per_text)]
    Texts = Annotated[list[Text], Field(max_length=options.max_texts_per_request)]
    # JSON Schema counts 2.0 as an integer, so an integral float is one; 2.5, "2" and true are not.
    Alternatives = Annotated[int, Field(ge=0, le=options.max_alternatives), BeforeValidator(_integral)]
    Beam = Annotated[int, Field(ge=1, le=options.max_beam_size), BeforeValidator(_integral)]

    class TranslateRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, title="TranslateRequest")

        text: Text | Texts = Field(description="text (sentences and paragraphs are kept) or a list of texts")
        source: Literal[SOURCES] = Field(  # type: ignore[valid-type]
            "auto",
            description="the texts' language; auto: each text's own, told by its script (Han characters: Chinese, "
            "Latin letters: English); a text already in the target language comes back unchanged",
        )
        target: Literal[TARGETS] = Field(  # type: ignore[valid-type]
            "zh-Hans", description="zh-Hans (Simplified Chinese), zh-Hant (Traditional) or en; needs a model of it"
        )
        beam_size: Beam | None = Field(None, description="beam width (default: the model's)")
        format: Literal["text", "html"] = Field("text", description="html: tags kept, the text between translated")
        alternatives: Alternatives | None = Field(
            None, description="up to this many other translations per text (from the beams: at most beam_size - 1)"
        )
        scores: bool = Field(False, description="also answer each translation's confidence (format text)")
        alignments: bool = Field(
            False, description="also answer each translation's word alignment (format text, a model with an aligner)"
        )
        glossary: GlossaryMap | None = Field(
            None,
            description="terms with a fixed translation, {source term: target term}: each source term found (whole "
            "words, case ignored) gets its target in the translation once per occurrence, placed by the model; "
            "added to the server's glossary (docs/quality.md)",
        )

    return RequestModels(translate=TranslateRequest)


def glossary_field(value: Any) -> Glossary | None:
    """The LibreTranslate extension field ``glossary``: a JSON object of source term to target term, or (a form)
    that object as a JSON string; None when absent or empty. ``ValueError`` naming what is wrong."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("glossary must be a JSON object of source term to target term") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError("glossary must be a JSON object of source term to target term (strings)")
    if len(value) > MAX_GLOSSARY_ENTRIES or any(len(t) > MAX_GLOSSARY_TERM for pair in value.items() for t in pair):
        raise ValueError(
            f"glossary may hold at most {MAX_GLOSSARY_ENTRIES} entries of at most {MAX_GLOSSARY_TERM} characters"
        )
    try:
        return Glossary.from_mapping(value, origin="glossary") if value else None
    except GlossaryError as exc:
        raise ValueError(str(exc)) from None


def request_glossary(mapping: dict[str, str] | None) -> Glossary | None:
    """A request's glossary field as a :class:`Glossary` (None when absent or empty); a 422 naming the entry for
    a bad one."""
    if not mapping:
        return None
    try:
        return Glossary.from_mapping(mapping, origin="glossary")
    except GlossaryError as exc:
        raise ApiError(422, "invalid_glossary", str(exc)) from None


# -- OpenAPI -----------------------------------------------------------------------------------------------

_ERROR_DESCRIPTIONS = {
    400: "invalid JSON or form body",
    404: "no such path",
    413: "body larger than max_body_bytes",
    415: "unsupported Content-Type",
    422: "wrong types, unknown fields, or a limit exceeded (texts, characters, beam size, target)",
    429: "queue full; see Retry-After",
    500: "internal error (a bug; never caused by input)",
    503: "not ready, draining, or the worker has died; see Retry-After",
    504: "deadline passed while queued or running",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """FastAPI ``responses=`` for these error statuses (429 and 503 carry Retry-After)."""
    retry = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "string"}}}
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": ErrorBody, "description": _ERROR_DESCRIPTIONS[status]}
        if status in (429, 503):
            entry["headers"] = retry
        out[status] = entry
    return out


def json_body(model: type[BaseModel], *, form: bool = False) -> dict[str, Any]:
    """``openapi_extra`` documenting a body the endpoint reads itself (as JSON, and as a form if ``form``)."""
    schema = model.model_json_schema()
    content = {"application/json": {"schema": schema}}
    if form:
        content["application/x-www-form-urlencoded"] = {"schema": _form_schema(schema)}
    return {"requestBody": {"required": True, "content": content}}


def _form_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A form has no null and no lists: each field keeps its first scalar, non-null alternative."""
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        prop = dict(prop)
        options = prop.pop("anyOf", None)
        if options:
            scalar = next(o for o in options if o.get("type") not in ("null", "array"))
            prop.update(scalar)
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        properties[name] = prop
    return {**schema, "properties": properties}
