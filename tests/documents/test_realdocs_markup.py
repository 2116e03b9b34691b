"""Real Markdown and HTML documents keep their structure through translation (issue 25 items 1-2).

Every Markdown and HTML file of ../shared/realdocs (the CommonMark/GFM spec examples of md/spec_examples.json,
three READMEs, three saved web pages; SOURCES.md there) is translated with the embedded demo model, as
``enzh translate-file`` does, and compared with its input by parsers that are not the project's: markdown-it-py
token streams (every token but text, with its markup, attributes and info; code spans, code blocks and HTML
byte for byte) and html5lib element trees (tags, attributes but the translated ``alt``/``title``, comments;
the text of ``pre``/``code``/``script``/``style``... byte for byte). Every emphasis, strikethrough, link and
inline HTML element that had words still has words. Out-of-domain text gives nonsense Chinese from the demo
model: only structure and marks are checked. The big Wikipedia page goes through a stand-in translator
(:class:`Scrambler`), which reorders and drops words, so that the check takes seconds. The Word and subtitle
files are checked by their own tests.
"""

from __future__ import annotations

import json
import logging
import re
import zlib
from pathlib import Path
from typing import Any

import pytest

from enzh.documents.api import parse, render, translate_document
from enzh.documents.html import INLINE
from enzh.documents.options import DocumentOptions
from enzh.runtime.translator import Translator

REALDOCS = Path(__file__).resolve().parents[3] / "shared" / "realdocs"
pytestmark = pytest.mark.skipif(not REALDOCS.is_dir(), reason=f"real documents not found at {REALDOCS}")

_CODE_TOKENS = {"code_inline", "code_block", "fence", "html_block", "html_inline"}
_MARK_PAIRS = {"em_open": "em_close", "strong_open": "strong_close", "s_open": "s_close", "link_open": "link_close"}
_KEPT_TEXT = {"pre", "code", "kbd", "samp", "var", "script", "style", "textarea"}


def _cases() -> list[tuple[str, str, str]]:
    """(name, format, text) of every Markdown and HTML real document."""
    if not REALDOCS.is_dir():
        return []
    cases = [
        (f"spec-{example['id']}", "md", example["markdown"])
        for example in json.loads((REALDOCS / "md" / "spec_examples.json").read_text(encoding="utf-8"))
    ]
    cases += [(p.name, "md", p.read_text(encoding="utf-8")) for p in sorted((REALDOCS / "md").glob("*.md"))]
    cases += [(p.name, "html", p.read_text(encoding="utf-8")) for p in sorted((REALDOCS / "html").glob("*.html"))]
    return cases


CASES = _cases()


# Translated with a stand-in instead of the model: the structure check on the big page then takes a second, not a
# minute (its marks' words with the model: enzh.tools.inline_rates --realdocs, docs/html.md).
SCRAMBLED = {"wikipedia-mozilla.html"}


@pytest.fixture(scope="module")
def translator():
    return Translator.load()


class Scrambler:
    """A stand-in translator: one Chinese character per word, in the reverse order, words of one or two letters
    dropped. Spans translate to their own characters, so anchors hold, but siblings come out reversed and short
    marks lose their words: the fallback works on every page."""

    def __call__(self, sentences: list[str]) -> list[str]:
        return [self._one(sentence) for sentence in sentences]

    @staticmethod
    def _one(sentence: str) -> str:
        words = [w for w in re.findall(r"[A-Za-z0-9]+", sentence) if len(w) > 2]
        return "".join(chr(0x4E00 + zlib.crc32(w.lower().encode()) % 20000) for w in reversed(words)) + "。"


# -- Markdown: markdown-it-py token streams --------------------------------------------------------------------


def _markdown_parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def markdown_stream(text: str) -> list[tuple[Any, ...]]:
    """Every token (inline children in place) but text: type, tag, markup, info, attributes, and the content
    of code and HTML."""
    out: list[tuple[Any, ...]] = []

    def walk(tokens: list[Any]) -> None:
        for token in tokens:
            if token.type == "inline":
                walk(token.children or [])
            elif token.type not in ("text", "text_special"):
                content = token.content if token.type in _CODE_TOKENS else None
                attrs = tuple(sorted((token.attrs or {}).items()))
                out.append((token.type, token.tag, token.markup, token.info, attrs, content))

    walk(_markdown_parser().parse(text))
    return out


def markdown_marks(text: str) -> list[tuple[str, str]]:
    """(type, words inside) of every emphasis, strikethrough and link, in document order of their openings."""
    found: list[tuple[int, int, str, str]] = []
    for position, token in enumerate(_markdown_parser().parse(text)):
        if token.type != "inline":
            continue
        children = token.children or []
        stack: list[tuple[int, str]] = []
        for i, child in enumerate(children):
            if child.type in _MARK_PAIRS:
                stack.append((i, child.type))
            elif stack and child.type == _MARK_PAIRS[stack[-1][1]]:
                j, kind = stack.pop()
                words = "".join(c.content for c in children[j + 1 : i] if c.type in ("text", "code_inline", "image"))
                found.append((position, j, kind, words))
    return [(kind, words) for _, _, kind, words in sorted(found)]


# -- HTML: html5lib element trees ------------------------------------------------------------------------------


def html_tree(text: str) -> Any:
    import html5lib

    return html5lib.parse(text, namespaceHTMLElements=False)


def html_stream(root: Any) -> list[tuple[Any, ...]]:
    """Elements in document order with their attributes (``alt`` and ``title`` are translated, so not them),
    comments with their text, and the text inside ``pre``, ``code``, ``script``... as it is."""
    out: list[tuple[Any, ...]] = []

    def walk(element: Any, kept: bool) -> None:
        tag = element.tag if isinstance(element.tag, str) else "#comment"
        kept = kept or tag in _KEPT_TEXT
        attrs = tuple(sorted((k, v) for k, v in element.attrib.items() if k not in ("alt", "title")))
        out.append((tag, attrs, element.text if kept or tag == "#comment" else None))
        for child in element:
            walk(child, kept)
            if kept:
                out.append(("#tail", child.tail))
        out.append(("/" + tag,))

    walk(root, False)
    return out


def html_marks(root: Any) -> list[tuple[str, str]]:
    """(tag, words inside) of every inline element that the HTML format translates as a mark."""
    return [(e.tag, "".join(e.itertext())) for e in root.iter() if isinstance(e.tag, str) and e.tag in INLINE]


def _emptied(before: list[tuple[str, str]], after: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [
        (kind, words, out)
        for (kind, words), (_, out) in zip(before, after, strict=True)
        if words.strip() and not out.strip()
    ]


# -- the tests -------------------------------------------------------------------------------------------------


def test_every_markdown_and_html_file_is_here():
    names = [name for name, _, _ in CASES]
    assert len(names) == 44 + 3 + 3, names  # SOURCES.md: 38 CommonMark + 6 GFM examples, 3 READMEs, 3 pages


@pytest.mark.parametrize(("name", "format", "text"), CASES, ids=[name for name, _, _ in CASES])
def test_real_document_keeps_its_structure_and_every_mark_its_words(translator, caplog, name, format, text):
    with caplog.at_level(logging.WARNING, logger="enzh"):
        if name in SCRAMBLED:
            out = render(parse(text, DocumentOptions(format=format)), Scrambler())
        else:
            out = translate_document(translator, text, format=format)
    assert caplog.records == []  # no Markdown block had to be kept untranslated to keep its markup
    assert isinstance(out, str)
    if format == "md":
        assert markdown_stream(out) == markdown_stream(text)
        before, after = markdown_marks(text), markdown_marks(out)
    else:
        source_tree, output_tree = html_tree(text), html_tree(out)
        assert html_stream(output_tree) == html_stream(source_tree)
        before, after = html_marks(source_tree), html_marks(output_tree)
    assert len(after) == len(before)
    assert _emptied(before, after) == []
    if not name.startswith("spec-"):
        assert re.search("[\u4e00-\u9fff]", out), out[:200]  # the prose was translated
