"""Generated documents for every format (issue 26 item 5): nested and malformed HTML, Markdown, subtitles, JSON
Lines, TSV, text and .docx, valid ones mutated byte by byte, and arbitrary bytes. Whatever comes in, reading
and writing it back with a translator ends in a document of the input's type or a :class:`DocumentError`, never
another exception, and in bounded time. CI draws a fixed sequence of examples (tests/conftest.py's profile)."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enzh.documents import limits
from enzh.documents.api import parse, render
from enzh.documents.errors import DocumentError
from enzh.documents.options import DocumentOptions

SECONDS = 10.0  # per document, generous for a shared 2-core machine (each takes milliseconds alone)
EXAMPLES = int(os.environ.get("ENZH_FUZZ_EXAMPLES", "40"))  # more for a longer hunt on a developer's machine
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

# Pieces of text that matter to some reader: markup characters, entities, timestamps, separators, scripts,
# controls, direction marks, a BOM, surrogate-free astral characters.
PIECES = [
    "The weather is nice today.",
    "Hello",
    "今天天气很好。",
    "a",
    " ",
    "\n",
    "\r\n",
    "\t",
    "&amp;",
    "&#0;",
    "&#xD800;",
    "&bogus;",
    "<",
    ">",
    "&",
    '"',
    "'",
    "\\",
    "*",
    "**",
    "_",
    "`",
    "```",
    "[",
    "](",
    ")",
    "#",
    "|",
    "-->",
    "00:00:01,000",
    "00:01.000",
    "\x00",
    "\x0b",
    "\u202e",
    "\u200b",
    "\ufeff",
    "\U0001f600",
    "{",
    "}",
    "<!--",
    "<![CDATA[",
    "]]>",
]
piece = st.one_of(st.sampled_from(PIECES), st.text(max_size=8))
text = st.lists(piece, max_size=20).map("".join)
words = st.lists(st.sampled_from([*PIECES[:4], "fine", "day", "天气"]), min_size=1, max_size=6).map(" ".join)

# -- HTML: tag soup, nested, unclosed, misnested --------------------------------------------------------------

TAGS = ["p", "b", "i", "a", "span", "div", "br", "img", "script", "style", "table", "tr", "td", "ul", "li", "pre"]
TAGS += ["code", "h1", "sup", "ruby", "rt", "title", "head", "body", "html", "svg", "math", "x-custom", "!DOCTYPE"]
attribute = st.sampled_from(["", ' href="x"', " class=a", ' title="a &amp; b"', " alt='", ' onclick="<b>"', " x"])


def _element(parts: tuple[str, str, list[str], str]) -> str:
    tag, attrs, children, closing = parts
    inner = "".join(children)
    if closing == "closed":
        return f"<{tag}{attrs}>{inner}</{tag}>"
    if closing == "unclosed":
        return f"<{tag}{attrs}>{inner}"
    if closing == "stray":
        return f"{inner}</{tag}>"
    if closing == "self":
        return f"<{tag}{attrs}/>{inner}"
    return f"<{tag}{attrs}>{inner}</{'b' if tag != 'b' else 'i'}>"  # misnested


html = st.recursive(
    st.one_of(words, text),
    lambda children: st.tuples(
        st.sampled_from(TAGS),
        attribute,
        st.lists(children, max_size=4),
        st.sampled_from(["closed", "closed", "unclosed", "stray", "self", "misnested"]),
    ).map(_element),
    max_leaves=30,
)
deep_html = st.tuples(st.sampled_from(["b", "span", "div", "i"]), st.integers(0, 300), words).map(
    lambda t: "<p>" + f"<{t[0]}>" * t[1] + t[2] + f"</{t[0]}>" * t[1] + "</p>"
)

# -- Markdown -----------------------------------------------------------------------------------------------

markdown_line = st.one_of(
    st.tuples(st.integers(1, 7), words).map(lambda t: "#" * t[0] + " " + t[1]),
    st.tuples(st.integers(0, 12), st.sampled_from(["- ", "* ", "1. ", "> ", "+ "]), words).map(
        lambda t: "  " * t[0] + t[1] + t[2]
    ),
    st.tuples(st.integers(1, 40), st.sampled_from(["*", "_", "**", "`", "~~"]), words).map(
        lambda t: t[1] * t[0] + t[2] + t[1] * (t[0] // 2)
    ),
    words.map(lambda w: f"[{w}](http://x.test/{len(w)}) ![{w}](i.png)"),
    words.map(lambda w: f"| {w} | {w} |\n|---|---|\n| a |"),
    st.sampled_from(["```", "```python", "~~~", "---", "***", "<div>", "</div>", "<!-- x", "    code", ""]),
    html,
    text,
)
markdown = st.lists(markdown_line, max_size=15).flatmap(
    lambda lines: st.sampled_from(["\n", "\n\n", "\r\n"]).map(lambda sep: sep.join(lines))
)

# -- subtitles ----------------------------------------------------------------------------------------------

stamp = st.one_of(
    st.tuples(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999)).map(
        lambda t: f"{t[0]:02d}:{t[1]:02d}:{t[2]:02d},{t[3]:03d}"
    ),
    st.sampled_from(["00:00:01.000", "00:01.000", "99:99:99,999", "1:2:3,4", "", "-1", "00:00:01,000 -->"]),
)
cue_text = st.lists(
    st.one_of(words, html, st.sampled_from(["{\\an8}", "<i>", "</i>", "<c.yellow>", "<00:00:01.500>", "-->"])),
    max_size=3,
).map("\n".join)


def _cue(parts: tuple[str, str, str, str, str]) -> str:
    index, start, end, settings_, body = parts
    return f"{index}\n{start} --> {end}{settings_}\n{body}"


cue = st.tuples(
    st.one_of(st.integers(-1, 10_000).map(str), st.sampled_from(["", "x", "NOTE", "STYLE", "cue-1"])),
    stamp,
    stamp,
    st.sampled_from(["", " align:start", " line:0 position:50%", " bogus"]),
    cue_text,
).map(_cue)
cues = st.lists(st.one_of(cue, text), max_size=8).flatmap(
    lambda c: st.sampled_from(["\n\n", "\n", "\r\n\r\n"]).map(lambda sep: sep.join(c))
)
vtt = st.tuples(st.sampled_from(["WEBVTT\n\n", "WEBVTT - title\n\nNOTE a note\n\n", "", "WEBVTTX\n"]), cues).map(
    "".join
)

# -- records ------------------------------------------------------------------------------------------------

json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(text, children, max_size=3)),
    max_leaves=15,
)
record = st.one_of(
    st.tuples(st.one_of(words, text, json_value), st.dictionaries(text, json_value, max_size=3)).map(
        lambda t: json.dumps({**t[1], "text": t[0]}, ensure_ascii=False)
    ),
    st.tuples(st.one_of(words, text), st.integers(0, 300)).map(
        lambda t: json.dumps({"text": t[0], "x": None}).replace("null", "[" * t[1] + "]" * t[1])
    ),
    json_value.map(json.dumps),
    text,
)
jsonl = st.lists(record, max_size=8).map("\n".join)
tsv_row = st.lists(st.one_of(words, text), max_size=5).map("\t".join)
tsv = st.tuples(st.sampled_from(["text\tid\n", "id\ttext\tnote\n", "", "text\n"]), st.lists(tsv_row, max_size=8)).map(
    lambda t: t[0] + "\n".join(t[1])
)

# -- .docx --------------------------------------------------------------------------------------------------


def _docx(blocks: list[tuple[str, list[tuple[str, bool, bool]], int]]) -> bytes:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    for kind, runs, depth in blocks:
        if kind == "table":
            table = document.add_table(rows=1, cols=2)
            cell = table.cell(0, 0)
            for _ in range(depth):  # tables in tables
                cell = cell.add_table(rows=1, cols=1).cell(0, 0)
            paragraph = cell.paragraphs[0]
        elif kind == "heading":
            paragraph = document.add_heading(level=min(depth, 9))
        else:
            paragraph = document.add_paragraph()
        for content, bold, italic in runs:
            run = paragraph.add_run(_xml_safe(content))
            run.bold, run.italic = bold, italic
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _xml_safe(value: str) -> str:
    """What python-docx can store (XML 1.0 has no NUL or most controls)."""
    return "".join(c for c in value if c in "\t\n\r" or (ord(c) >= 0x20 and c not in "\ufffe\uffff"))


docx_blocks = st.lists(
    st.tuples(
        st.sampled_from(["paragraph", "heading", "table"]),
        st.lists(st.tuples(st.one_of(words, text), st.booleans(), st.booleans()), max_size=4),
        st.integers(0, 4),
    ),
    max_size=6,
)


# -- mutations: valid documents, then cut, spliced and overwritten ------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, documents: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(documents))
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["cut", "flip", "insert", "truncate", "duplicate"]))
        if action == "cut":
            del data[at : at + draw(st.integers(1, 64))]
        elif action == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif action == "insert":
            data[at:at] = draw(st.binary(max_size=16))
        elif action == "truncate":
            del data[at:]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 256))]
    return bytes(data)


def encoded(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    return strategy.map(lambda s: s.encode("utf-8", "surrogatepass"))


GENERATED: dict[str, st.SearchStrategy[str | bytes]] = {
    "txt": st.one_of(text, markdown),
    "html": st.one_of(html, deep_html, st.lists(html, max_size=4).map("".join)),
    "md": markdown,
    "srt": cues,
    "vtt": vtt,
    "jsonl": jsonl,
    "tsv": tsv,
}


# -- the property -------------------------------------------------------------------------------------------

TRANSLATORS: dict[str, Callable[[list[str]], list[str]]] = {
    "upper": lambda texts: [t.upper() for t in texts],
    "same": lambda texts: list(texts),
    "empty": lambda texts: ["" for _ in texts],
    "markup": lambda texts: [f'<b>&"{t}\n</i>\t*_`' for t in texts],  # characters every writer must escape
    "long": lambda texts: [t * 3 + "。" * 40 for t in texts],
}


def _outcome(data: str | bytes, format: str, source: str, translator: str) -> str | bytes | DocumentError:
    """The translated document or the DocumentError, checking the type and the time."""
    options = DocumentOptions(format=format, source=source)
    calls: list[int] = []

    def translate(texts: list[str]) -> list[str]:
        assert isinstance(texts, list) and all(isinstance(t, str) for t in texts)
        calls.append(len(texts))
        return TRANSLATORS[translator](texts)

    started = time.perf_counter()
    try:
        out = render(parse(data, options, "the input"), translate, options)
    except DocumentError as exc:
        out = exc
        assert str(exc).strip(), "a DocumentError says what is wrong"
    assert time.perf_counter() - started < SECONDS, (format, len(data))
    if not isinstance(out, DocumentError):
        assert isinstance(out, bytes) if isinstance(data, bytes) or format == "docx" else isinstance(out, str)
    return out


source = st.sampled_from(["en", "zh"])
translator = st.sampled_from(list(TRANSLATORS))


@pytest.mark.parametrize("format", list(GENERATED))
@FUZZ
@given(data=st.data(), source=source, translator=translator)
def test_generated_documents_translate_or_are_a_document_error(format, data, source, translator):
    document = data.draw(GENERATED[format], label="document")
    as_bytes = data.draw(st.booleans(), label="as bytes")
    _outcome(document.encode("utf-8", "surrogatepass") if as_bytes else document, format, source, translator)


@pytest.mark.parametrize("format", list(GENERATED))
@FUZZ
@given(data=st.data(), source=source, translator=translator)
def test_mutated_and_arbitrary_bytes_translate_or_are_a_document_error(format, data, source, translator):
    document = data.draw(st.one_of(mutated(encoded(GENERATED[format])), st.binary(max_size=512)), label="bytes")
    _outcome(document, format, source, translator)


@settings(FUZZ, max_examples=max(10, EXAMPLES // 2))
@given(blocks=docx_blocks, source=source, translator=translator)
def test_generated_docx_translate_and_reopen(blocks, source, translator):
    docx = pytest.importorskip("docx")
    out = _outcome(_docx(blocks), "docx", source, translator)
    assert isinstance(out, bytes), out
    docx.Document(io.BytesIO(out))  # a document Word can open again


@settings(FUZZ, max_examples=EXAMPLES)
@given(document=mutated(docx_blocks.map(_docx)), source=source, translator=translator)
def test_mutated_docx_translate_or_are_a_document_error(document, source, translator):
    _outcome(document, "docx", source, translator)


def test_the_generated_documents_reach_the_limits():
    """The strategies do make documents past the depth limit (so the fuzzing covers the refusals too)."""
    deep = "<b>" * (limits.MAX_DEPTH + 44) + "Fine." + "</b>" * (limits.MAX_DEPTH + 44)
    out = _outcome(deep, "html", "en", "upper")
    assert isinstance(out, DocumentError) and "MAX_DEPTH" in str(out)
    assert _outcome("<b>" * 200 + "Fine." + "</b>" * 200, "html", "en", "upper") == (
        "<b>" * 200 + "FINE." + "</b>" * 200
    )
