"""Translation beyond plain text, on top of :class:`~enzh.serve.service.Service`: HTML, whole documents, and
alternatives; shared by the /v1 API and the LibreTranslate API.

* HTML (``format=html``) goes through the documents' HTML format (:mod:`enzh.documents.html`, as
  ``translate_html``): every text block is read, its sentences are translated, the inline tags are placed on
  the translated words and the document is written back. Reading, placing and writing run on a worker thread;
  the sentences go from that thread to the event loop (:class:`SchedulerSentences`), which submits them to the
  service's scheduler like any request's, so they share batches with the sentences of concurrent requests.
* Documents (``/translate_file``) take the same path with the format of their file name
  (:mod:`enzh.documents.api`), in chunks of :data:`CHUNK` sentences, each with its own deadline.
* Alternatives are beam search's n-best (``Translator.translate_detailed(alternatives=...)``) with the request's
  beam size: the best one is exactly the plain translation, and at most beam size - 1 others exist. The
  scheduler's engine returns one hypothesis per sentence, so n-best requests run on a worker thread of their
  own instead, one at a time (the scheduler keeps its share of the CPU), within the request's deadline.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from enzh.documents.alignment import ModelAligner
from enzh.documents.api import Parsed, parse, render
from enzh.documents.errors import DocumentError
from enzh.documents.html import FORMAT as HTML
from enzh.documents.inline import translate_blocks
from enzh.documents.options import DocumentOptions
from enzh.serve.errors import ApiError
from enzh.serve.service import Service

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
        target: str | None,
        beam_size: int,
        deadline: float | None,
        request: Request | None = None,
    ) -> None:
        self.service = service
        self.loop = loop
        self.target = target
        self.beam_size = beam_size
        self.deadline = deadline
        self.request = request
        self.sentences = 0
        self.timing = {"queue": 0.0, "inference": 0.0}
        # Tags are placed with the model's aligner (when it has one), as documents are (enzh.documents.alignment).
        self.align = ModelAligner(service.engine, service.resolve_target(target))

    def __call__(self, sentences: list[str]) -> list[str]:
        unique = list(dict.fromkeys(sentences))
        known: dict[str, str] = {}
        for chunk in _chunks(unique, CHUNK, self.service.options.max_request_chars):
            deadline = self.deadline
            if deadline is None:
                deadline = time.monotonic() + self.service.options.request_timeout_s
            work = self.service.translate(
                chunk, target=self.target, beam_size=self.beam_size, deadline=deadline, request=self.request
            )
            outputs, count, timing = asyncio.run_coroutine_threadsafe(work, self.loop).result()
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


def translate_markup(texts: Sequence[str], translate: Any) -> list[str]:
    """Each HTML text translated as ``enzh.documents.html.translate_html`` does, with one call of
    ``translate`` for the sentences of all of them."""
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

    @contextmanager
    def _admitted(self) -> Iterator[None]:
        self.service.admit()
        self.service.in_flight += 1
        try:
            yield
        finally:
            self.service.in_flight -= 1

    async def translate(
        self,
        request: Request,
        texts: list[str],
        *,
        target: str,
        beam_size: int | None,
        arrived: float,
        html: bool = False,
        alternatives: int = 0,
    ) -> Result:
        """Translate ``texts`` (HTML when ``html``), with up to ``alternatives`` alternatives per text (HTML has
        none); due ``request_timeout_s`` after ``arrived`` (monotonic)."""
        service = self.service
        beam = beam_size or service.default_beam
        none: list[list[str]] | None = [[] for _ in texts] if alternatives > 0 else None
        if not html and (alternatives == 0 or beam == 1):
            answer = await service.handle(request, texts, target=target, beam_size=beam, arrived=arrived)
            return Result(answer.translations, none, answer.sentences, answer.timing_ms, answer.beam_size)
        with self._admitted():
            deadline = arrived + service.options.request_timeout_s
            if html:
                loop = asyncio.get_running_loop()
                service.resolve_target(target)  # an unknown target fails before any work
                sentences = SchedulerSentences(
                    service, loop, target=target, beam_size=beam, deadline=deadline, request=request
                )
                outputs = await loop.run_in_executor(self._pool("markup"), translate_markup, texts, sentences)
                found, count, timing = none, sentences.sentences, dict(sentences.timing)
            else:
                outputs, found, count, timing = await self._nbest_texts(texts, target, beam, alternatives, deadline)
        timing["total"] = round((time.monotonic() - arrived) * 1000, 3)
        return Result(outputs, found, count, timing, beam)

    async def _nbest_texts(
        self, texts: list[str], target: str | None, beam: int, alternatives: int, deadline: float
    ) -> tuple[list[str], list[list[str]], int, dict[str, float]]:
        service = self.service
        token = service.resolve_target(target)
        service.check_request_chars(texts)
        count = min(alternatives + 1, beam)
        submitted = time.monotonic()
        started: list[float] = []

        def work() -> list[Any]:
            started.append(time.monotonic())
            return list(service.engine.translate_detailed(texts, beam_size=beam, target=token, alternatives=count))

        future = asyncio.wrap_future(self._pool("nbest").submit(work))
        try:
            translations = await asyncio.wait_for(future, timeout=max(0.0, deadline - time.monotonic()))
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
        return outputs, found, sum(t.parts for t in translations if t.token_ids), timing

    # -- documents ---------------------------------------------------------------------------------------

    async def parse_document(self, data: bytes, format: str, name: str) -> Parsed:
        """``data`` read with ``format`` (off the event loop); a bad file raises :class:`DocumentError`."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool("markup"), parse, data, DocumentOptions(format=format), name)

    async def render_document(self, parsed: Parsed, *, target: str | None) -> bytes:
        """The translated document (bytes, encoded like its input), through the scheduler in chunks."""
        service = self.service
        with self._admitted():
            service.resolve_target(target)
            loop = asyncio.get_running_loop()
            sentences = SchedulerSentences(service, loop, target=target, beam_size=service.default_beam, deadline=None)
            output = await loop.run_in_executor(self._pool("markup"), render, parsed, sentences)
        if isinstance(output, str):  # only for str input, which a file never is
            output = output.encode("utf-8")
        return output


def _distinct(best: str, candidates: list[str], limit: int) -> list[str]:
    """The candidates that are not blank, not the best translation and not repeated; at most ``limit``."""
    seen = {best}
    kept = []
    for text in candidates:
        if text.strip() and text not in seen:
            seen.add(text)
            kept.append(text)
    return kept[:limit]


__all__ = ["CHUNK", "DocumentError", "Modes", "Result", "SchedulerSentences", "translate_markup"]
