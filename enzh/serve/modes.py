"""Translation beyond plain text, on top of :class:`~enzh.serve.service.Service`: HTML, whole documents, and
alternatives; shared by the /v1 API and the LibreTranslate API.

* HTML (``format=html``) goes through the documents' HTML format (:mod:`enzh.documents.html`, as
  ``translate_html``): every text block is read, its sentences are translated, the inline tags are placed on
  the translated words and the document is written back. Reading, placing and writing run on a worker thread;
  the sentences go from that thread to the event loop (:class:`SchedulerSentences`), which submits them to the
  service's scheduler like any request's, so they share batches with the sentences of concurrent requests.
* Documents (``/translate_file``) take the same path with the format of their file name
  (:mod:`enzh.documents.api`), in chunks of :data:`CHUNK` sentences, each with its own deadline.
* Several models: the routes hand every call a :class:`~enzh.serve.service.Target` (the model of the texts'
  direction); :meth:`Modes.translate_routed` takes one per text, translates each model's texts concurrently and
  puts the answers back in order (texts without a target are answered unchanged).
* Alternatives are beam search's n-best (``Translator.translate_detailed(alternatives=...)``) with the request's
  beam size: the best one is exactly the plain translation, and at most beam size - 1 others exist. The
  scheduler's engine returns one hypothesis per sentence, so n-best requests run on a worker thread of their
  own instead, one at a time (the scheduler keeps its share of the CPU), within the request's deadline.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from enzh.documents.alignment import ModelAligner
from enzh.documents.api import Parsed, parse, render
from enzh.documents.errors import DocumentError
from enzh.documents.html import FORMAT as HTML
from enzh.documents.inline import translate_blocks
from enzh.documents.options import DocumentOptions
from enzh.runtime.engine import Translation
from enzh.runtime.glossary import Glossary, GlossaryError, combine
from enzh.runtime.router import unchanged
from enzh.runtime.segment import reading
from enzh.serve.errors import ApiError
from enzh.serve.service import Service, Target

CHUNK = 64  # sentences per scheduler job of a document (a long document never holds the queue alone)
MARKUP_THREADS = 4  # worker threads reading and writing HTML and documents


@dataclass(frozen=True)
class Result:
    """A request's translations; ``alternatives`` (per text, best first, without the translation itself) only
    when asked for."""

    translations: list[str]
    alternatives: list[list[str]] | None
    sentences: int
    timing_ms: dict[str, float]
    beam_size: int
    # With scores or alignments asked for: each text's Translation (its confidence and word alignment).
    details: list[Translation] | None = None


@dataclass(frozen=True)
class Routed(Result):
    """:class:`Result` of texts routed to several models; ``models``: the labels of those that translated some."""

    models: list[str] = field(default_factory=list)


class SchedulerSentences:
    """A sentence translator (sentences -> translations, in order) for a worker thread: each call hands the
    sentences to the event loop ``loop``, which translates them through the service's scheduler.

    ``deadline`` (monotonic) bounds every call; None: each chunk of :data:`CHUNK` sentences gets
    ``request_timeout_s`` from its submission (documents, which may take longer than one request)."""

    def __init__(
        self,
        service: Service,
        loop: asyncio.AbstractEventLoop,
        *,
        route: Target,
        beam_size: int,
        deadline: float | None,
        request: Request | None = None,
        glossary: Glossary | None = None,
    ) -> None:
        self.service = service
        # Sentences holding one of its terms are decoded with it (on this thread: the constrained search is not
        # part of the shared batches), the others through the scheduler.
        self.glossary = glossary
        self.loop = loop
        self.route = route
        self.beam_size = beam_size
        self.deadline = deadline
        self.request = request
        self.sentences = 0
        self.timing = {"queue": 0.0, "inference": 0.0}
        # Tags are placed with the model's aligner (when it has one), as documents are (enzh.documents.alignment).
        assert route.model.engine is not None
        self.align = ModelAligner(route.model.engine, route.token)

    def __call__(self, sentences: list[str]) -> list[str]:
        unique = list(dict.fromkeys(sentences))
        known: dict[str, str] = {}
        glossary = self.glossary
        if glossary:
            held = [s for s in unique if glossary.matches(s)]
            if held:
                engine = self.route.model.engine
                assert engine is not None
                found = _glossary_call(
                    lambda: engine.translate_detailed(
                        held,
                        beam_size=self.beam_size,
                        target=self.route.token,
                        source=self.route.source,
                        glossary=glossary,
                    )
                )
                known.update((s, t.text) for s, t in zip(held, found, strict=True))
                self.sentences += sum(t.parts for t in found)
                unique = [s for s in unique if s not in known]
        for chunk in _chunks(unique, CHUNK, self.service.options.max_request_chars):
            deadline = self.deadline
            if deadline is None:
                deadline = time.monotonic() + self.service.options.request_timeout_s
            work = self.service.translate(
                chunk, route=self.route, beam_size=self.beam_size, deadline=deadline, request=self.request
            )
            outputs, count, timing, _ = asyncio.run_coroutine_threadsafe(work, self.loop).result()
            known.update(zip(chunk, outputs, strict=True))
            self.sentences += count
            for key in self.timing:
                self.timing[key] = round(self.timing[key] + timing[key], 3)
        return [known[s] for s in sentences]


def _chunks(sentences: list[str], size: int, max_chars: int) -> Iterator[list[str]]:
    """Runs of at most ``size`` sentences and ``max_chars`` characters (a longer sentence goes alone)."""
    chunk: list[str] = []
    chars = 0
    for sentence in sentences:
        if chunk and (len(chunk) >= size or chars + len(sentence) > max_chars):
            yield chunk
            chunk, chars = [], 0
        chunk.append(sentence)
        chars += len(sentence)
    if chunk:
        yield chunk


def _glossary_call(work: Callable[[], Any]) -> Any:
    """``work()``, a glossary term the model cannot write answered as a 422."""
    try:
        return work()
    except GlossaryError as exc:
        raise ApiError(422, "invalid_glossary", str(exc)) from None


def translate_markup(texts: Sequence[str], translate: Any, source: str = "en") -> list[str]:
    """Each HTML text translated as ``enzh.documents.html.translate_html`` does, with one call of
    ``translate`` for the sentences of all of them (``source``: their language, whose script marks the text to
    translate)."""
    with reading(DocumentOptions(format="html", source=source).script):
        units = [HTML.read(text) for text in texts]
        blocks = [block for unit in units for block in unit.blocks]
        done = translate_blocks(blocks, translate) if blocks else []
    outputs = []
    start = 0
    for unit in units:
        outputs.append(HTML.write(unit, done[start : start + len(unit.blocks)]))
        start += len(unit.blocks)
    return outputs


class Modes:
    """HTML, documents and alternatives for the routes; one per app (its worker threads start on first use)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._markup: ThreadPoolExecutor | None = None
        self._nbest: ThreadPoolExecutor | None = None

    def _pool(self, kind: str) -> ThreadPoolExecutor:
        with self._lock:
            if kind == "markup":
                if self._markup is None:
                    self._markup = ThreadPoolExecutor(MARKUP_THREADS, thread_name_prefix="enzh-markup")
                return self._markup
            if self._nbest is None:
                self._nbest = ThreadPoolExecutor(1, thread_name_prefix="enzh-nbest")
            return self._nbest

    async def translate(
        self,
        request: Request,
        texts: list[str],
        *,
        route: Target,
        beam_size: int | None,
        arrived: float,
        html: bool = False,
        alternatives: int = 0,
        scores: bool = False,
        alignments: bool = False,
        glossary: Glossary | None = None,
    ) -> Result:
        """Translate ``texts`` with the model of ``route`` (HTML when ``html``), with up to ``alternatives``
        alternatives per text (HTML has none); due ``request_timeout_s`` after ``arrived`` (monotonic).
        ``scores``/``alignments`` add each text's :class:`Translation` (its confidence, and its word alignment when
        ``alignments`` and the model has an aligner). Scores alone come from the shared batches' own hypotheses;
        alignments take the n-best path (a detailed translation on a worker thread of its own). HTML has neither:
        its Translations carry None. ``glossary``: the request's own, added to the model's (ServeOptions.glossaries);
        texts holding one of their terms are translated outside the shared batches (the n-best path; HTML: those
        sentences), with the constrained search."""
        service = self.service
        beam = beam_size or route.model.default_beam
        none: list[list[str]] | None = [[] for _ in texts] if alternatives > 0 else None
        # A model without an aligner answers its alignments as null (a schema-valid request is never refused).
        aligned = alignments and route.model.engine is not None and route.model.engine.info.has_aligner
        terms = combine(route.model.glossary, glossary)
        held = terms if terms and any(terms.matches(text) for text in texts) else None
        if not html and not aligned and (alternatives == 0 or beam == 1) and held is None:
            answer = await service.handle(request, texts, route=route, beam_size=beam, arrived=arrived, scores=scores)
            details = None
            if scores or alignments:
                confidences = answer.confidences or [None] * len(texts)
                details = [
                    Translation(text=t, token_ids=(), scores=(), parts=0, confidence=c)
                    for t, c in zip(answer.translations, confidences, strict=True)
                ]
            return Result(answer.translations, none, answer.sentences, answer.timing_ms, answer.beam_size, details)
        with self.service.admitted():
            deadline = arrived + service.options.request_timeout_s
            if html:
                loop = asyncio.get_running_loop()
                sentences = SchedulerSentences(
                    service, loop, route=route, beam_size=beam, deadline=deadline, request=request, glossary=held
                )
                source = route.direction[0] if route.direction else "en"
                outputs = await loop.run_in_executor(self._pool("markup"), translate_markup, texts, sentences, source)
                found, count, timing = none, sentences.sentences, dict(sentences.timing)
                unscored = [Translation(text=t, token_ids=(), scores=(), parts=0) for t in outputs]
            else:
                outputs, found, count, timing, details = await self._nbest_texts(
                    texts, route, beam, alternatives, deadline, alignments=aligned, glossary=held
                )
                found = found if alternatives > 0 else None
                return Result(outputs, found, count, {**timing, "total": _since(arrived)}, beam, details)
        timing["total"] = _since(arrived)
        return Result(outputs, found, count, timing, beam, unscored if scores or alignments else None)

    async def translate_routed(
        self,
        request: Request,
        texts: list[str],
        routes: list[Target | None],
        *,
        beam_size: int | None,
        arrived: float,
        html: bool = False,
        alternatives: int = 0,
        scores: bool = False,
        alignments: bool = False,
        glossary: Glossary | None = None,
    ) -> Routed:
        """Each text translated with the model of its route (None: answered as it is), each model's texts in one
        call, the calls concurrent; the answers in the order of ``texts``."""
        groups: dict[int, list[int]] = {}
        for i, route in enumerate(routes):
            if route is not None:
                groups.setdefault(id(route.model), []).append(i)
        calls = [
            self.translate(
                request,
                [texts[i] for i in members],
                route=routes[members[0]],  # type: ignore[arg-type]  # grouped by model: never None
                beam_size=beam_size,
                arrived=arrived,
                html=html,
                alternatives=alternatives,
                scores=scores,
                alignments=alignments,
                glossary=glossary,
            )
            for members in groups.values()
        ]
        results = await asyncio.gather(*calls)
        outputs = list(texts)
        found: list[list[str]] = [[] for _ in texts]
        # Texts answered as they are: certain, each word aligned with itself.
        details = [unchanged(text, alignments=alignments) for text in texts]
        models: list[str] = []
        timing = {"queue": 0.0, "inference": 0.0}
        for members, result in zip(groups.values(), results, strict=True):
            model = routes[members[0]]
            assert model is not None
            models.append(model.model.label)
            for j, i in enumerate(members):
                outputs[i] = result.translations[j]
                if result.alternatives is not None:
                    found[i] = result.alternatives[j]
                if result.details is not None:
                    details[i] = result.details[j]
            for key in timing:
                timing[key] = round(max(timing[key], result.timing_ms.get(key, 0.0)), 3)
        timing["total"] = round((time.monotonic() - arrived) * 1000, 3)
        beam = results[0].beam_size if results else (beam_size or self.service.default_beam)
        kept = details if scores or alignments else None
        return Routed(outputs, found, sum(r.sentences for r in results), timing, beam, kept, models)

    async def _nbest_texts(
        self,
        texts: list[str],
        route: Target,
        beam: int,
        alternatives: int,
        deadline: float,
        *,
        alignments: bool,
        glossary: Glossary | None = None,
    ) -> tuple[list[str], list[list[str]], int, dict[str, float], list[Translation]]:
        service = self.service
        engine = route.model.engine
        assert engine is not None
        service.check_request_chars(texts)
        count = min(alternatives + 1, beam)
        submitted = time.monotonic()
        started: list[float] = []

        # only when asked: stand-ins without the keywords keep working
        extra: dict[str, Any] = {"alignments": True} if alignments else {}
        if alignments and service.router is not None:
            # the model of the opposite direction, when one is loaded, aligns both ways (as Translators does)
            extra.update(service.router.reverse_keywords(engine, route.direction))
        if glossary:
            extra["glossary"] = glossary

        def work() -> list[Any]:
            started.append(time.monotonic())
            found = engine.translate_detailed(
                texts,
                beam_size=beam,
                target=route.token,
                alternatives=count if alternatives > 0 else None,
                source=route.source,
                **extra,
            )
            return list(found)

        future = asyncio.wrap_future(self._pool("nbest").submit(work))
        try:
            translations = await asyncio.wait_for(future, timeout=max(0.0, deadline - time.monotonic()))
        except GlossaryError as exc:  # a term the model cannot write
            raise ApiError(422, "invalid_glossary", str(exc)) from None
        except TimeoutError:
            service.metrics.rejections.labels(reason="timeout").inc()
            raise ApiError(
                504, "timeout", f"the translation did not finish within {service.options.request_timeout_s} s"
            ) from None
        queued = (started[0] if started else submitted) - submitted
        timing = {
            "queue": round(queued * 1000, 3),
            "inference": round((time.monotonic() - submitted - queued) * 1000, 3),
        }
        outputs = [t.text for t in translations]
        found = [_distinct(t.text, [a.text for a in t.alternatives[1:]], alternatives) for t in translations]
        return outputs, found, sum(t.parts for t in translations if t.token_ids), timing, translations

    # -- documents ---------------------------------------------------------------------------------------

    async def parse_document(self, data: bytes, options: DocumentOptions, name: str) -> Parsed:
        """``data`` read with ``options`` (its format and source language; off the event loop); a bad file raises
        :class:`DocumentError`."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool("markup"), parse, data, options, name)

    async def document_text(self, data: bytes, format: str, name: str) -> str:
        """All the text of a document, whatever its script (what its language is detected on), off the event loop;
        a bad file raises :class:`DocumentError`."""

        def read() -> str:
            # A format reader keeps the pieces of one script: those with Latin letters, then those with Han ones.
            texts = dict.fromkeys(
                block.text
                for source in ("en", "zh")
                for block in parse(data, DocumentOptions(format=format, source=source), name).units.blocks
            )
            return " ".join(texts)

        return await asyncio.get_running_loop().run_in_executor(self._pool("markup"), read)

    async def render_document(
        self, parsed: Parsed, *, route: Target, options: DocumentOptions, request: Request | None = None
    ) -> bytes:
        """The translated document (bytes, encoded like its input), through the route's scheduler in chunks. With
        the ``request``, its client leaving stops the work: the chunk in the queue or running is dropped (499)."""
        service = self.service
        with self.service.admitted():
            loop = asyncio.get_running_loop()
            beam = route.model.default_beam
            sentences = SchedulerSentences(service, loop, route=route, beam_size=beam, deadline=None, request=request)
            output = await loop.run_in_executor(self._pool("markup"), render, parsed, sentences, options)
        if isinstance(output, str):  # only for str input, which a file never is
            output = output.encode("utf-8")
        return output


def _since(arrived: float) -> float:
    return round((time.monotonic() - arrived) * 1000, 3)


def _distinct(best: str, candidates: list[str], limit: int) -> list[str]:
    """The candidates that are not blank, not the best translation and not repeated; at most ``limit``."""
    seen = {best}
    kept = []
    for text in candidates:
        if text.strip() and text not in seen:
            seen.add(text)
            kept.append(text)
    return kept[:limit]


__all__ = ["CHUNK", "DocumentError", "Modes", "Result", "Routed", "SchedulerSentences", "translate_markup"]
