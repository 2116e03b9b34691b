"""The API's pydantic models and the OpenAPI pieces FastAPI cannot infer (raw-body endpoints, error answers).

Request models are built per app by :func:`request_models`, because their limits come from ServeOptions (so
the OpenAPI schema shows them); response models do not depend on options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from enzh.serve.options import ServeOptions

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

    return RequestModels(translate=TranslateRequest)


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
