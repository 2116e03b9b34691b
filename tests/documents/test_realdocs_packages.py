"""Real Word files and subtitles (../shared/realdocs, SOURCES.md) keep their structure through translation
(issue 25), and the shared zip/XML reader refuses hostile packages (issue 26)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from enzh.documents.errors import DocumentError
from enzh.documents.packages import open_package, parse_xml, to_xml

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


def test_not_a_zip_is_one_document_error():
    with pytest.raises(DocumentError, match=r"not a \.pptx file \(not a zip package"):
        open_package(b"plain text", ".pptx")
