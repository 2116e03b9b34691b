"""Real Word files and subtitles (../shared/realdocs, SOURCES.md) keep their structure through translation
(issue 25), and the shared zip/XML reader refuses hostile packages (issue 26)."""

from __future__ import annotations

import dataclasses
import io
import random
import re
import string
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from enzh.cli.main import main
from enzh.documents.api import detect_language, parse, render, translate_document
from enzh.documents.errors import DocumentError
from enzh.documents.files import translate_file
from enzh.documents.options import DocumentOptions
from enzh.documents.packages import open_package, parse_xml, to_xml
from enzh.runtime.router import detect_script

REALDOCS = Path(__file__).resolve().parents[2] / ".." / "shared" / "realdocs"
DOCX = sorted((REALDOCS / "docx").glob("*.docx"))


def _lol(levels: int = 9) -> bytes:
    """The "billion laughs" entity bomb: 10**levels copies of "lol" from a few hundred bytes."""
    entities = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{k} "{f"&lol{k - 1};" * 10}">' for k in range(1, levels + 1)]
    return f'<?xml version="1.0"?><!DOCTYPE d [{"".join(entities)}]><d>&lol{levels};</d>'.encode()


@pytest.mark.parametrize(
    "data",
    [_lol(), b'<!DOCTYPE d [<!ENTITY e SYSTEM "file:///etc/passwd">]><d>&e;</d>', _lol().decode().encode("utf-16")],
    ids=["billion laughs", "external entity", "utf-16 billion laughs"],
)
def test_xml_that_declares_entities_is_refused(data):
    with pytest.raises(DocumentError, match=r"declares XML entities|not well-formed"):
        parse_xml(data, "word/document.xml")


def test_xml_parsing_loads_no_dtd_and_keeps_the_prolog():
    root = parse_xml(b'<?xml version="1.0"?>\n<!DOCTYPE d SYSTEM "http://example.invalid/d.dtd"><d>&e;</d>', "x")
    assert root.tag == "d"  # nothing fetched, the reference left unexpanded
    original = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<w:d xmlns:w="urn:w"><w:t>a</w:t></w:d>'
    assert to_xml(parse_xml(original, "x"), original) == original
    utf16 = '<?xml version="1.0" encoding="UTF-16"?><d><t>a</t></d>'.encode("utf-16")
    root = parse_xml(utf16, "x")
    root[0].text = "词"
    written = to_xml(root, utf16)
    assert written.startswith(b"\xff\xfe<\x00?\x00") and parse_xml(written, "x")[0].text == "词"


@pytest.mark.parametrize("path", DOCX, ids=[path.name for path in DOCX])
def test_a_package_rebuilt_without_changes_is_the_same_bytes(path):
    data = path.read_bytes()
    package = open_package(data, ".docx")
    assert package.rebuild({}) == data
    changed = package.rebuild({"word/document.xml": b"<changed/>"})
    with zipfile.ZipFile(io.BytesIO(changed)) as out:
        assert out.testzip() is None
        assert [info.filename for info in out.infolist()] == package.names
        for name in package.names:
            assert out.read(name) == (b"<changed/>" if name == "word/document.xml" else package.read(name))


class _Stream(io.RawIOBase):
    """A file that cannot seek: zipfile writes each member with a data descriptor after its data."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, chunk) -> int:  # type: ignore[override]
        self.data += chunk
        return len(chunk)


def test_rebuild_copies_streamed_members_and_directories_as_they_are():
    stream = _Stream()
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        package.writestr("OEBPS/", "")
        package.writestr("OEBPS/a.xhtml", "<p>" + "words " * 200 + "</p>")
        package.writestr("OEBPS/b.xhtml", "<p>Kept.</p>")
    data = bytes(stream.data)
    package = open_package(data, ".epub")
    assert all(member.flag_bits & 0x08 for member in package.members if member.filename != "OEBPS/")
    assert package.rebuild({}) == data
    out = package.rebuild({"OEBPS/a.xhtml": b"<p>\xe8\xaf\x8d</p>"})
    with zipfile.ZipFile(io.BytesIO(out)) as rebuilt:
        assert rebuilt.testzip() is None and rebuilt.namelist() == package.names
        assert (
            rebuilt.read("OEBPS/a.xhtml") == b"<p>\xe8\xaf\x8d</p>" and rebuilt.read("OEBPS/b.xhtml") == b"<p>Kept.</p>"
        )
        assert rebuilt.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
    start = data.index(b"OEBPS/b.xhtml")  # its local record, compressed bytes and descriptor copied verbatim
    assert data[start : start + 40] in out


def test_not_a_zip_is_one_document_error():
    with pytest.raises(DocumentError, match=r"not a \.pptx file \(not a zip package"):
        open_package(b"plain text", ".pptx")


# --- Real documents through `enzh translate-file`'s path (issue 25 items 1-3) ---------------------------------

SUBS = sorted((REALDOCS / "subs").iterdir())
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
SPACE = "{http://www.w3.org/XML/1998/namespace}space"
HAN = re.compile(r"[\u3400-\u9fff]")
CUE_TAG = re.compile(r"<[^<>\r\n]*>|\{\\[^{}\r\n]*\}")  # the tags a cue line may hold (SRT, VTT, ASS override)


def test_the_real_documents_are_there():
    assert len(DOCX) == 25 and len(SUBS) == 16, "../shared/realdocs (SOURCES.md) is incomplete"


@pytest.fixture(scope="module")
def translated(demo_translator, tmp_path_factory) -> Callable[[Path], bytes]:
    """The translation of a real file by `enzh translate-file`'s path (source auto, default options), cached."""
    folder = tmp_path_factory.mktemp("realdocs")
    done: dict[Path, bytes] = {}

    def get(path: Path) -> bytes:
        if path not in done:
            out = folder / path.name
            translate_file(demo_translator, path, out, source="auto", progress=False)
            done[path] = out.read_bytes()
        return done[path]

    return get


def _translated_parts(package) -> set[str]:
    kinds = ("document.main+xml", "header+xml", "footer+xml")
    return {part[1:] for part, kind in package.content_types().items() if kind.endswith(kinds)}


def _same_xml_but_text(before, after, where: str) -> None:
    """Same elements, attributes, order and whitespace between elements; only the text of w:t may differ (and
    a w:t may get xml:space="preserve" for its new text's edge spaces)."""
    attributes = dict(after.attrib)
    if after.tag == f"{W}t" and SPACE not in before.attrib and attributes.get(SPACE) == "preserve":
        assert after.text != after.text.strip(), where
        del attributes[SPACE]
    assert (after.tag, attributes) == (before.tag, dict(before.attrib)), where
    assert (after.tail or "") == (before.tail or ""), where
    if before.tag != f"{W}t":
        assert (after.text or "") == (before.text or ""), where
    assert len(after) == len(before), where
    for k, (b, a) in enumerate(zip(before, after, strict=True)):
        _same_xml_but_text(b, a, f"{where}/{k}")


@pytest.mark.parametrize("path", DOCX, ids=[path.name for path in DOCX])
def test_real_word_files_keep_their_structure(path, translated):
    source = open_package(path.read_bytes(), ".docx")
    output = open_package(translated(path), ".docx")
    assert output.names == source.names  # the same members, directories too, in the same zip order
    parts = _translated_parts(source)
    assert "word/document.xml" in parts
    changed = 0
    for before, after in zip(source.members, output.members, strict=True):
        if before.filename not in parts:  # copied as it was: bytes, stamp, compression
            assert output.read(after.filename) == source.read(before.filename), before.filename
            assert (after.date_time, after.compress_type, after.CRC, after.compress_size, after.external_attr) == (
                before.date_time,
                before.compress_type,
                before.CRC,
                before.compress_size,
                before.external_attr,
            ), before.filename
            continue
        a, b = source.xml(before.filename), output.xml(after.filename)
        _same_xml_but_text(a, b, before.filename)  # w:tab, w:br, hyperlinks, run properties all where they were
        texts = [(x.text or "", y.text or "") for x, y in zip(a.iter(f"{W}t"), b.iter(f"{W}t"), strict=True)]
        lost = [x for x, y in texts if x.strip() and not y.strip()]
        assert not lost, f"{before.filename}: w:t that lost their words: {lost}"
        changed += sum(x != y for x, y in texts)
    english = [
        t.text for t in source.xml("word/document.xml").iter(f"{W}t") if t.text and re.search("[A-Za-z]", t.text)
    ]
    assert changed or not english, "nothing was translated"


def test_word_tabs_hyperlinks_and_formatted_runs_keep_their_words(translated):
    """The cases of issue 25: 6 tabs of python-docx's tab-stops file, 4 hyperlinks of pandoc's links.docx and
    the 9 formatted runs of its inline_formatting.docx; all in place, all with text, in Chinese."""
    tabs = open_package(translated(REALDOCS / "docx" / "python-docx-tab-stops.docx"), ".docx")
    assert len(list(tabs.xml("word/document.xml").iter(f"{W}tab"))) == 6 + 8  # 6 in runs, 8 tab stops (w:tabs)
    links = open_package(translated(REALDOCS / "docx" / "pandoc-links.docx"), ".docx").xml("word/document.xml")
    hyperlinks = ["".join(t.text or "" for t in link.iter(f"{W}t")) for link in links.iter(f"{W}hyperlink")]
    assert len(hyperlinks) == 4 and all(HAN.search(text) for text in hyperlinks), hyperlinks
    formatting = open_package(translated(REALDOCS / "docx" / "pandoc-inline_formatting.docx"), ".docx")
    runs = [r for r in formatting.xml("word/document.xml").iter(f"{W}r") if r.find(f"{W}rPr") is not None]
    texts = ["".join(t.text or "" for t in run.iter(f"{W}t")) for run in runs]
    assert len(texts) >= 9 and all(text.strip() for text in texts), texts


def _blocks(text: str) -> list[list[str]]:
    """A subtitle file's blocks (lines between blank lines), each line with its line end."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _slots(line: str) -> list[str]:
    """The text of a cue line between its tags (one more than there are tags)."""
    return CUE_TAG.split(line.rstrip("\r\n"))


@pytest.mark.parametrize("path", SUBS, ids=[path.name for path in SUBS])
def test_real_subtitles_keep_cues_lines_tags_and_chinese_lines(path, translated):
    source, output = path.read_bytes(), translated(path)
    assert output.startswith(b"\xef\xbb\xbf") == source.startswith(b"\xef\xbb\xbf")
    before, after = source.decode("utf-8-sig"), output.decode("utf-8-sig")
    ends = [line[len(line.rstrip("\r\n")) :] for line in before.splitlines(keepends=True)]
    assert [line[len(line.rstrip("\r\n")) :] for line in after.splitlines(keepends=True)] == ends
    pairs = list(zip(_blocks(before), _blocks(after), strict=True))
    english = changed = 0
    for a, b in pairs:
        assert len(b) == len(a), (a, b)  # every cue keeps its number of lines
        timing = next((k for k, line in enumerate(a) if "-->" in line), None)
        if timing is None:  # the header, NOTE, STYLE and REGION blocks (and text outside cues)
            assert b == a if path.suffix == ".vtt" or len(a) > 1 else True
            continue
        assert b[: timing + 1] == a[: timing + 1]  # numbers, identifiers, timings and settings
        assert [CUE_TAG.findall(x) for x in b] == [CUE_TAG.findall(x) for x in a]  # tags stay on their line
        for x, y in zip(a[timing + 1 :], b[timing + 1 :], strict=True):
            plain = "".join(_slots(x))
            if detect_script(plain) == "zh" or not re.search("[A-Za-z]", plain):
                assert y == x  # a line already in Chinese (bilingual subtitles), or without words, is kept
                continue
            english += 1
            changed += y != x
            for text_before, text_after in zip(_slots(x), _slots(y), strict=True):
                assert text_after.strip() or not text_before.strip(), (x, y)  # no tag or line loses its words
    assert changed or not english, "nothing was translated"


# --- Bounds of a .docx (issue 26 item 2) ----------------------------------------------------------------------

SECONDS = 10.0  # generous for a shared 2-core machine; each case takes well under a second alone
NOT_A_MODEL: Any = object()  # the input is refused while it is read, before the translator is used


def _docx(body: bytes, prolog: bytes = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n') -> bytes:
    """python-docx's default document with ``body`` (w:p elements) as word/document.xml's body."""
    docx = pytest.importorskip("docx")
    empty = io.BytesIO()
    docx.Document().save(empty)
    out = io.BytesIO()
    with zipfile.ZipFile(empty) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                namespaces = re.search(rb"<w:document[^>]*>", data)
                assert namespaces is not None
                data = prolog + namespaces.group() + b"<w:body>" + body + b"</w:body></w:document>"
            package.writestr(info, data)
    return out.getvalue()


def _paragraphs(count: int) -> bytes:
    """``count`` paragraphs of three made-up words each (varied, so the zip does not trip the ratio bound)."""
    rnd = random.Random(0)
    words = ["".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(2, 9))) for _ in range(5000)]
    return "".join(
        f"<w:p><w:r><w:t>{' '.join(rnd.choices(words, k=3))}.</w:t></w:r></w:p>" for _ in range(count)
    ).encode()


class PeakRss:
    """The growth of this process's peak resident memory inside the block (Linux: VmHWM reset by clear_refs;
    where the kernel does not allow the reset, the growth of the resident memory itself). lxml allocates outside
    Python's heap, so tracemalloc would not see it."""

    def __enter__(self) -> PeakRss:
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self.peak = "VmHWM"
        except OSError:
            self.peak = "VmRSS"
        self.start = self._read("VmRSS")
        return self

    def __exit__(self, *exc: object) -> None:
        self.growth = self._read(self.peak) - self.start

    @staticmethod
    def _read(field: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field} in /proc/self/status")


def test_270000_paragraphs_are_refused_while_they_are_parsed():
    """Issue 26: 270,000 paragraphs took 73.9 s and 840 MiB; now a DocumentError at the 100,001st paragraph."""
    data = _docx(_paragraphs(270_000))
    started = time.perf_counter()
    with PeakRss() as rss, pytest.raises(DocumentError, match=r"more than 100,000 paragraphs .*MAX_PARAGRAPHS"):
        translate_document(NOT_A_MODEL, data, format="docx")
    assert time.perf_counter() - started < SECONDS
    assert rss.growth < 150 << 20, f"{rss.growth / 2**20:.0f} MiB"


def test_paragraphs_up_to_the_bound_translate(monkeypatch):
    from enzh.documents import docx

    monkeypatch.setattr(docx, "PARAGRAPHS", dataclasses.replace(docx.PARAGRAPHS, limit=1000))
    options = DocumentOptions(format="docx")
    out = render(parse(_docx(_paragraphs(1000)), options), lambda texts: [t.upper() for t in texts], options)
    document = open_package(out, ".docx").xml("word/document.xml")
    texts = [t.text for t in document.iter(f"{W}t")]
    assert len(texts) == 1000 and all(t == t.upper() for t in texts)
    with pytest.raises(DocumentError, match=r"more than 1,000 paragraphs"):
        parse(_docx(_paragraphs(1001)), options)


def test_xml_elements_are_bounded(monkeypatch):
    from enzh.documents import packages

    monkeypatch.setattr(packages, "MAX_XML_ELEMENTS", 10_000)
    with pytest.raises(DocumentError, match=r"more than 10,000 XML elements .*MAX_XML_ELEMENTS"):
        translate_document(NOT_A_MODEL, _docx(b"<w:p><w:r/></w:p>" * 6000), format="docx")


def test_an_entity_bomb_in_word_document_xml_is_one_line_and_no_output(tmp_path, capsys):
    lol = _lol().split(b"<d>")[0].split(b"?>")[1]  # the DOCTYPE with its entity declarations
    source = tmp_path / "bomb.docx"
    source.write_bytes(_docx(b"<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>", b'<?xml version="1.0"?>' + lol))
    with PeakRss() as rss:
        with pytest.raises(DocumentError, match=r"'word/document.xml' declares XML entities"):
            translate_document(NOT_A_MODEL, source.read_bytes(), format="docx")
        assert main(["translate-file", str(source), str(tmp_path / "out.docx")]) == 2
    assert rss.growth < 50 << 20, f"{rss.growth / 2**20:.0f} MiB"
    err = capsys.readouterr().err
    assert err.startswith("enzh translate-file: error: ") and err.count("\n") == 1, err
    assert "declares XML entities" in err and not (tmp_path / "out.docx").exists()


# --- Sharing text out so that no mark is left empty -----------------------------------------------------------


def test_share_out_gives_every_mark_with_words_some_text():
    from enzh.documents.shares import cut, share_out

    assert share_out(["安娜每天去车站。学校在哪里？", ""], ["Anna goes. ", "Where is the school?"]) == [
        "安娜每天去车站。",  # cut after the punctuation nearest the proportional place
        "学校在哪里？",
    ]
    assert share_out(["", "abc def ghi", ""], ["x", "yyy", "zz"]) == ["abc", " def", " ghi"]  # between words
    assert share_out(["会议已被推迟。", " "], ["The meeting", " "]) == ["会议已被推迟。", " "]  # spaces may stay
    assert share_out(["好", ""], ["Good", "night"]) == ["好", "night"]  # too short: the source text is kept
    assert cut("我的自行车昨天晚上被偷走了。", [21, 11]) == ["我的自行车昨天晚上", "被偷走了。"]
    pieces = cut("字" * 20_000, [1] * 10_000)  # linear: 10,000 pieces of a 20,000-character text at once
    assert len(pieces) == 10_000 and all(pieces) and "".join(pieces) == "字" * 20_000


def test_a_bilingual_cue_keeps_its_chinese_line():
    srt = "1\n00:00:01,000 --> 00:00:02,000\n我有个点子\nOK, look, I think I have a plan here.\n"
    assert detect_language(srt, DocumentOptions(format="srt")) == "en"  # a cue in both languages reads as English
    options = DocumentOptions(format="srt")
    out = render(parse(srt, options), lambda texts: [t.upper() for t in texts], options)
    assert out == "1\n00:00:01,000 --> 00:00:02,000\n我有个点子\nOK, LOOK, I THINK I HAVE A PLAN HERE.\n"
    zh = DocumentOptions(format="srt", source="zh")  # from Chinese the English line is the one kept
    assert render(parse(srt, zh), lambda texts: [f"<{t}>" for t in texts], zh) == srt.replace(
        "我有个点子", "<我有个点子>"
    )
