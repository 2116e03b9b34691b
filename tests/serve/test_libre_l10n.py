"""/translate_file with the localisation and record formats (po, XLIFF, CSV): translated with their structure, the
target language the request names written into the file, hostile files answered 400 in one line."""

from __future__ import annotations

import polib
import pytest
from fake_translator import FakeTranslator, fake_translation
from lxml import etree
from server_harness import in_process

from enzh.serve.options import ServeOptions

XLIFF = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" datatype="plaintext" original="a">
    <body>
      <trans-unit id="1">
        <source>Hello <g id="1">there</g>.<x id="2"/></source>
      </trans-unit>
    </body>
  </file>
</xliff>
"""
BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<xliff version="1.2"><file><body><trans-unit id="1"><source>&lol2;</source></trans-unit></body></file></xliff>
"""


@pytest.fixture(scope="module")
def client():
    with in_process(ServeOptions(download_ttl_s=60), FakeTranslator()) as c:
        yield c


def translated(client, name: str, data: bytes, **fields: str) -> bytes:
    answer = client.post("/translate_file", files={"file": (name, data)}, data={"source": "en", **fields})
    assert answer.status_code == 200, answer.text
    return client.get(answer.json()["translatedFileUrl"]).content


def test_po_xliff_and_csv_files_are_translated(client):
    po = polib.POFile()
    po.metadata = {"Language": "", "Content-Type": "text/plain; charset=UTF-8"}
    po.append(polib.POEntry(msgid="Hello there.", occurrences=[("a.py", "1")]))
    out = polib.pofile(translated(client, "app.po", po.__unicode__().encode(), target="zh-Hant").decode())
    [entry] = out
    assert entry.msgstr == fake_translation("Hello there.", "zh-Hant") and entry.fuzzy
    assert out.metadata["Language"] == "zh_TW"  # the script the request asked for
    root = etree.fromstring(translated(client, "app.xlf", XLIFF))
    target = root.find(".//{*}target")
    assert target.get("state") == "needs-review-translation" and target.getprevious().tag.endswith("}source")
    assert [child.tag.rsplit("}")[1] for child in target] == ["g", "x"]
    assert "".join(target.itertext()).replace(" ", "") == fake_translation("Hello there.").replace(" ", "")
    assert translated(client, "t.csv", b"id,text\r\n1,hello there.\r\n") == b"id,text\r\n1,HELLO THERE.\r\n"
    settings = client.get("/frontend/settings").json()
    assert {".po", ".pot", ".xlf", ".xliff", ".csv"} <= set(settings["supportedFilesFormat"])


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("bomb.xlf", BOMB, "has a DOCTYPE or entity declarations"),
        ("bad.po", b'msgid "a"\nmsgstr "b"\nmsgid\n', "not a gettext po file"),
        ("de.po", b'msgid ""\nmsgstr "Language: de\\n"\n\nmsgid "Hi"\nmsgstr ""\n', "translations are in 'de'"),
        ("bad.csv", b'id,text\n1,"a"b\n', "not valid CSV"),
    ],
)
def test_bad_files_are_400_in_one_line(client, name, data, message):
    answer = client.post("/translate_file", files={"file": (name, data)}, data={"source": "en"})
    error = answer.json()["error"]
    assert answer.status_code == 400 and message in error and "\n" not in error
