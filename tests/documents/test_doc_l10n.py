"""gettext po, XLIFF 1.2/2.0 and CSV: fixtures built with polib, lxml and the csv module, translated with the demo
model (a fake translator where only the structure is checked); hostile and bad files refused in one line."""

from __future__ import annotations

import csv
import io
import re
import sys

import polib
import pytest
from lxml import etree

from enzh.cli.main import main
from enzh.documents.api import parse, render, translate_document
from enzh.documents.errors import DocumentError
from enzh.documents.options import DocumentOptions
from enzh.runtime.translator import Translator

STATION = "Where is the train station?"
WEATHER = "The weather is nice today."
COFFEE = "I would like a cup of coffee."
SCHOOL = "Where is the school?"
NS1 = "urn:oasis:names:tc:xliff:document:1.2"
NS2 = "urn:oasis:names:tc:xliff:document:2.0"


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def plain(translator: Translator, text: str) -> str:
    """The demo model's translation of ``text`` as a plain-text document (the oracle for every format's text)."""
    out = translate_document(translator, text, format="txt", beam_size=1)
    assert isinstance(out, str)
    return out


def fake(texts: list[str]) -> list[str]:
    return [f"[{text}]" for text in texts]


def cli(*args: str) -> int:
    return main(["translate-file", *args, "--beam-size", "1"])


def refused(tmp_path, capsys, name: str, data: bytes, *args: str) -> str:
    """The one-line error of translating ``data`` as file ``name``; no output file is left."""
    source = tmp_path / name
    source.write_bytes(data)
    output = tmp_path / f"out-{name}"
    assert cli(str(source), str(output), *args) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error
    assert not output.exists() and sorted(p.name for p in tmp_path.iterdir()) == [name]
    return error


# -- gettext po ---------------------------------------------------------------------------------------------


def template() -> polib.POFile:
    """A .pot as xgettext writes one: placeholders in the header, every msgstr empty; plus entries a translator
    left (a translation, a fuzzy one, an obsolete one)."""
    po = polib.POFile(wrapwidth=78)
    po.header = "Translations of the demo.\nCopyright the demo's authors."
    po.metadata = {
        "Project-Id-Version": "demo 1.0",
        "Language": "",
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=CHARSET",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=INTEGER; plural=EXPRESSION;",
    }
    po.metadata_is_fuzzy = ["fuzzy"]
    po.append(polib.POEntry(msgid=STATION, comment="On the map page.", occurrences=[("map.py", "10")]))
    po.append(
        polib.POEntry(
            msgid=f"{WEATHER} %(city)s",
            msgctxt="forecast",
            flags=["python-format"],
            tcomment="city is a name",
            occurrences=[("weather.py", "3")],
        )
    )
    po.append(
        polib.POEntry(msgid="%d school", msgid_plural=f"{SCHOOL} %d", msgstr_plural={0: "", 1: ""}, flags=["c-format"])
    )
    po.append(polib.POEntry(msgid=f"{COFFEE}\n{SCHOOL}", occurrences=[("cafe.py", "7")]))
    po.append(polib.POEntry(msgid="Is my son resting?", msgstr="我儿子在休息吗？"))
    po.append(polib.POEntry(msgid="Where is the hospital?", msgstr="医院在哪里", flags=["fuzzy"]))
    po.append(polib.POEntry(msgid="%s: %d", flags=["c-format"]))
    po.append(polib.POEntry(msgid="Old text.", msgstr="旧的。", obsolete=True))
    return po


def entries(po: polib.POFile) -> list[tuple]:
    """What a translation must not change in each entry."""
    return [
        (e.msgid, e.msgid_plural, e.msgctxt, e.comment, e.tcomment, e.occurrences, e.obsolete, e.previous_msgid)
        for e in po
    ]


def test_po_fills_msgstr_and_keeps_the_rest(tmp_path, translator):
    source = tmp_path / "demo.pot"
    template().save(str(source))
    output = tmp_path / "zh_CN.po"
    assert cli(str(source), str(output)) == 0
    before, after = polib.pofile(str(source)), polib.pofile(str(output))
    assert entries(after) == entries(before) and after.header == before.header
    by_id = {e.msgid: e for e in after}
    assert by_id[STATION].msgstr == plain(translator, STATION)
    assert by_id[f"{COFFEE}\n{SCHOOL}"].msgstr == plain(translator, f"{COFFEE}\n{SCHOOL}")
    forecast = by_id[f"{WEATHER} %(city)s"].msgstr
    assert forecast.count("%(city)s") == 1 and forecast.replace("%(city)s", "") != forecast
    assert re.search("[\u4e00-\u9fff]", forecast)
    plural = by_id["%d school"]
    assert list(plural.msgstr_plural) == [0] and plural.msgstr_plural[0].count("%d") == 1  # Chinese: one form
    for msgid in (STATION, f"{WEATHER} %(city)s", "%d school", f"{COFFEE}\n{SCHOOL}"):
        assert by_id[msgid].flags[0] == "fuzzy"
    assert by_id[f"{WEATHER} %(city)s"].flags == ["fuzzy", "python-format"]
    # translated, fuzzy-translated, without words, obsolete: untouched
    assert by_id["Is my son resting?"].msgstr == "我儿子在休息吗？" and by_id["Is my son resting?"].flags == []
    assert by_id["Where is the hospital?"].msgstr == "医院在哪里"
    assert by_id["%s: %d"].msgstr == "" and by_id["%s: %d"].flags == ["c-format"]
    assert [(e.msgid, e.msgstr) for e in after.obsolete_entries()] == [("Old text.", "旧的。")]
    assert after.metadata["Language"] == "zh_CN" and after.metadata["Plural-Forms"] == "nplurals=1; plural=0;"
    assert after.metadata["Content-Type"] == "text/plain; charset=UTF-8" and after.metadata_is_fuzzy == ["fuzzy"]
    # every line outside the msgstr fields, the new flags and the three header fields is the input's, in order
    kept = iter(output.read_text(encoding="utf-8").splitlines())
    for line in source.read_text(encoding="utf-8").splitlines():
        if not line.startswith(("msgstr", '"', "#,")):
            assert line in kept, line


def test_po_options_no_fuzzy_and_retranslate(translator):
    source = template().__unicode__()
    out = translate_document(translator, source, format="po", beam_size=1, fuzzy=False, retranslate=True)
    assert isinstance(out, str)
    after = {e.msgid: e for e in polib.pofile(out)}
    assert after["Is my son resting?"].msgstr == plain(translator, "Is my son resting?")
    assert after["Where is the hospital?"].msgstr == plain(translator, "Where is the hospital?")
    assert after[STATION].flags == [] and after["Where is the hospital?"].flags == ["fuzzy"]  # its own flag stays
    assert after["Old text."].msgstr == "旧的。"  # obsolete: never


def test_po_plural_forms_follow_the_header():
    po = polib.POFile()
    po.metadata = {"Language": "zh_TW", "Plural-Forms": "nplurals=3; plural=n%3;", "Content-Type": "text/plain"}
    po.append(polib.POEntry(msgid="One apple", msgid_plural="%d apples", msgstr_plural={0: ""}, flags=["c-format"]))
    text = po.__unicode__()
    options = DocumentOptions(format="po", target="zh-Hant")
    out = render(parse(text, options), fake, options)
    assert isinstance(out, str)
    [entry] = polib.pofile(out)
    assert entry.msgstr_plural == {0: "[One apple]", 1: "[%d apples]", 2: "[%d apples]"}
    assert out.count("Language: zh_TW") == 1 and "nplurals=3" in out  # the header is kept as it was
    with pytest.raises(DocumentError, match=r"says its translations are in 'zh_TW', but this run writes zh-CN"):
        parse(text, DocumentOptions(format="po", target="zh-Hans"))


def test_po_from_chinese_gets_english_plural_forms(tmp_path):
    from enzh.runtime.default_model import DEMO_ZH_EN_DIR

    po = polib.POFile()
    po.metadata = {"Language": "", "Content-Type": "text/plain; charset=UTF-8"}
    po.append(polib.POEntry(msgid="学校在哪里？", msgid_plural="%d 所学校在哪里？", msgstr_plural={0: ""}))
    source, output = tmp_path / "zh.pot", tmp_path / "en.po"
    po.save(str(source))
    assert cli(str(source), str(output)) == 0  # --source auto: Chinese, so the zh->en demo model
    after = polib.pofile(str(output))
    zh_en = Translator.load(DEMO_ZH_EN_DIR)

    def english(text: str) -> str:
        out = translate_document(zh_en, text, format="txt", beam_size=1, source="zh")
        assert isinstance(out, str)
        return out

    assert after.metadata["Language"] == "en" and after.metadata["Plural-Forms"] == "nplurals=2; plural=(n != 1);"
    [entry] = after
    assert entry.msgstr_plural[0] == english("学校在哪里？") and entry.msgstr_plural[1].count("%d") == 1


def test_po_for_the_other_script_is_refused_without_a_target(tmp_path, capsys):
    data = b'msgid ""\nmsgstr "Language: zh_TW\\n"\n\nmsgid "Where is the school?"\nmsgstr ""\n'
    error = refused(tmp_path, capsys, "zh_TW.po", data)  # the run writes zh-CN unless told --target zh-Hant
    assert error.endswith("translate it with --target zh-Hant (or --convert s2tw, s2hk) or a file meant for zh-CN")


def test_po_without_header_and_crlf_stays_byte_for_byte():
    text = '#: a.py:1\r\nmsgid "Where is the school?"\r\nmsgstr ""\r\n\r\nmsgid "Kept."\r\nmsgstr "留"'
    options = DocumentOptions(format="po")
    out = render(parse(text, options), fake, options)
    assert out == (
        '#: a.py:1\r\n#, fuzzy\r\nmsgid "Where is the school?"\r\nmsgstr "[Where is the school?]"\r\n'
        '\r\nmsgid "Kept."\r\nmsgstr "留"'
    )


def test_po_placeholders_come_back_even_when_the_model_drops_them():
    po = polib.POFile()
    po.append(polib.POEntry(msgid="Delete %d files from {place}?"))  # no format flag: the likely placeholders
    po.append(polib.POEntry(msgid="Hello %(name)s", flags=["python-format"]))
    po.append(polib.POEntry(msgid="Take 100% sure steps {now}", flags=["no-python-brace-format"]))
    options = DocumentOptions(format="po")
    parsed = parse(po.__unicode__(), options)
    assert [[m.tag.verbatim for m in b.marks] for b in parsed.units.blocks] == [["%d", "{place}"], ["%(name)s"], []]
    out = render(parsed, lambda texts: [re.sub(r"%\(?\w*\)?[ds]|\{\w+\}", "", t).upper() for t in texts], options)
    assert isinstance(out, str)
    first, second, third = (e.msgstr for e in polib.pofile(out))
    assert sorted(re.findall(r"%d|\{place\}", first)) == ["%d", "{place}"] and "DELETE" in first
    assert second.count("%(name)s") == 1 and third == "TAKE 100% SURE STEPS "  # {now}: text here, dropped


def test_po_text_naming_a_file_is_not_read_as_that_file(tmp_path):
    """polib takes a string without a line break for a file name: a document is never read that way."""
    other = tmp_path / "secret.po"
    other.write_text('msgid "Where is the school?"\nmsgstr ""\n', encoding="utf-8")
    with pytest.raises(DocumentError, match="not a gettext po file: Syntax error in po file"):
        parse(str(other), DocumentOptions(format="po"))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'msgid "a"\nmsgstr "b"\nmsgid', r"not a gettext po file: Syntax error in po file \(line 3\)"),
        (b'msgid "a" "b"\n', "not a gettext po file"),
        (b'msgid ""\nmsgstr "Language: de\\n"\n\nmsgid "Hi"\nmsgstr ""\n', "translations are in 'de'"),
    ],
)
def test_po_bad_files_are_refused(tmp_path, capsys, data, message):
    assert re.search(message, refused(tmp_path, capsys, "bad.po", data, "--target", "zh-Hans"))


# -- XLIFF ----------------------------------------------------------------------------------------------------


def xliff12() -> bytes:
    """An XLIFF 1.2 file as lxml writes one: inline codes of every kind, a kept target, a unit not to translate."""
    E = lambda tag, **attrib: etree.Element(f"{{{NS1}}}{tag}", {k.replace("_", "-"): v for k, v in attrib.items()})  # noqa: E731
    root = etree.Element(f"{{{NS1}}}xliff", version="1.2", nsmap={None: NS1})
    file = etree.SubElement(root, f"{{{NS1}}}file", {"source-language": "en", "datatype": "plaintext", "original": "a"})
    body = etree.SubElement(file, f"{{{NS1}}}body")

    def unit(uid: str, parent=body, **attrib):
        element = E("trans-unit", id=uid, **attrib)
        parent.append(element)
        source = etree.SubElement(element, f"{{{NS1}}}source")
        return element, source

    _, s = unit("1")
    s.text = "Where is the "
    g = etree.SubElement(s, f"{{{NS1}}}g", id="g1")
    g.text, g.tail = "train station", "?"
    u2, s = unit("2")
    s.text = "I would like "
    etree.SubElement(s, f"{{{NS1}}}x", id="x1").tail = "a "  # no code's tail is blank: etree.indent keeps them
    etree.SubElement(s, f"{{{NS1}}}bx", id="b1").tail = "cup"
    etree.SubElement(s, f"{{{NS1}}}ex", id="e1").tail = " of "
    ph = etree.SubElement(s, f"{{{NS1}}}ph", id="p1")
    ph.text, ph.tail = "<b>", "coffee."
    etree.SubElement(u2, f"{{{NS1}}}target", state="needs-translation")
    etree.SubElement(u2, f"{{{NS1}}}note").text = "a note stays after the target"
    u3, s = unit("3")
    s.text = SCHOOL
    etree.SubElement(u3, f"{{{NS1}}}target").text = "学校在哪里？"
    group = etree.SubElement(body, f"{{{NS1}}}group", translate="no")
    _, s = unit("4", parent=group)
    s.text = WEATHER
    _, s = unit("5")
    s.text = "The "
    mrk = etree.SubElement(s, f"{{{NS1}}}mrk", mtype="protected")
    mrk.text, mrk.tail = "Enzh", " weather is nice today."
    _, s = unit("6")
    s.text = "I would like a cup of "
    bpt = etree.SubElement(s, f"{{{NS1}}}bpt", id="1")
    bpt.text, bpt.tail = "<b>", "coffee"
    ept = etree.SubElement(s, f"{{{NS1}}}ept", id="1")
    ept.text, ept.tail = "</b>", "."
    etree.indent(root)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8") + b"\n"


def codes(element) -> list[tuple[str, dict]]:
    """The inline codes inside ``element``, in order, with their attributes and (for native codes) content."""
    return [
        (e.tag, dict(e.attrib), e.text if e.tag.endswith(("}ph", "}bpt", "}ept")) else None)
        for e in element.iterdescendants()
    ]


def words(element) -> str:
    """The text of ``element`` without the native code inside its standalone codes."""
    out = [element.text or ""]
    for child in element:
        if child.tag.rsplit("}", 1)[-1] in ("g", "pc", "mrk"):
            out.append(words(child))
        out.append(child.tail or "")
    return "".join(out)


def test_xliff12_targets_with_inline_codes(tmp_path, translator):
    source = tmp_path / "app.xlf"
    source.write_bytes(xliff12())
    output = tmp_path / "app.zh.xlf"
    assert cli(str(source), str(output)) == 0
    root = etree.fromstring(output.read_bytes())
    q = {"x": NS1}
    assert root.find("x:file", q).get("target-language") == "zh-CN"
    units = {u.get("id"): u for u in root.iterfind(".//x:trans-unit", q)}
    for uid in ("1", "2", "5", "6"):
        unit = units[uid]
        source_el, target = unit[0], unit[1]
        assert target.tag == f"{{{NS1}}}target" and source_el.tag == f"{{{NS1}}}source"
        assert target.get("state") == "needs-review-translation" and target.get("state-qualifier") == "mt-suggestion"
        assert codes(target) == codes(source_el)
    assert words(units["1"][1]) == plain(translator, STATION)
    assert words(units["2"][1]) == plain(translator, COFFEE)
    assert units["2"][2].tag == f"{{{NS1}}}note"  # the existing empty target was filled in place
    assert units["5"][1].find("x:mrk", q).text == "Enzh"
    begin = units["6"][1].find("x:bpt", q)  # a begin/end pair of native codes: around words, not two points
    assert re.fullmatch("[\u4e00-\u9fff]+", begin.tail) and begin.getnext().tag == f"{{{NS1}}}ept"
    assert units["3"][1].text == "学校在哪里？" and units["3"][1].get("state") is None
    assert len(units["4"]) == 1  # translate="no" on its group
    before = etree.fromstring(source.read_bytes())
    for unit in before.iterfind(".//x:trans-unit", q):
        assert etree.tostring(units[unit.get("id")][0], with_tail=False) == etree.tostring(unit[0], with_tail=False)
    # indentation: the new target sits on its own line, as the source does
    assert b'</source>\n        <target state="needs-review-translation"' in output.read_bytes()


def test_xliff12_seg_source_markers_come_back_around_each_sentence(translator):
    root = etree.Element(f"{{{NS1}}}xliff", version="1.2", nsmap={None: NS1})
    file = etree.SubElement(root, f"{{{NS1}}}file", {"source-language": "en", "datatype": "plaintext", "original": "a"})
    unit = etree.SubElement(etree.SubElement(file, f"{{{NS1}}}body"), f"{{{NS1}}}trans-unit", id="1")
    etree.SubElement(unit, f"{{{NS1}}}source").text = f"{WEATHER} {SCHOOL}"
    segments = etree.SubElement(unit, f"{{{NS1}}}seg-source")
    for mid, sentence in (("1", WEATHER), ("2", SCHOOL)):
        mrk = etree.SubElement(segments, f"{{{NS1}}}mrk", mtype="seg", mid=mid)
        mrk.text, mrk.tail = sentence, " " if mid == "1" else None
    out = translate_document(translator, etree.tostring(root), format="xliff", beam_size=1)
    target = etree.fromstring(out).find(".//{*}target")
    assert target.getprevious().tag == f"{{{NS1}}}seg-source"
    assert [(m.get("mid"), m.text) for m in target] == [
        ("1", plain(translator, WEATHER)),
        ("2", plain(translator, SCHOOL)),
    ]


def xliff20() -> bytes:
    root = etree.Element(f"{{{NS2}}}xliff", version="2.0", srcLang="en", nsmap={None: NS2})
    file = etree.SubElement(root, f"{{{NS2}}}file", id="f")
    unit = etree.SubElement(file, f"{{{NS2}}}unit", id="u1")
    segment = etree.SubElement(unit, f"{{{NS2}}}segment")
    s = etree.SubElement(segment, f"{{{NS2}}}source")
    s.text = "Where is the "
    pc = etree.SubElement(s, f"{{{NS2}}}pc", id="1", dataRefStart="d1")
    pc.text, pc.tail = "train station", "?"
    etree.SubElement(unit, f"{{{NS2}}}ignorable").append(etree.Element(f"{{{NS2}}}source"))
    segment = etree.SubElement(unit, f"{{{NS2}}}segment", state="initial")
    s = etree.SubElement(segment, f"{{{NS2}}}source")
    s.text = "I would like "
    etree.SubElement(s, f"{{{NS2}}}ph", id="2").tail = "a cup of "
    etree.SubElement(s, f"{{{NS2}}}sc", id="3").tail = "coffee"
    etree.SubElement(s, f"{{{NS2}}}ec", startRef="3").tail = "."
    done = etree.SubElement(file, f"{{{NS2}}}unit", id="u2")
    segment = etree.SubElement(done, f"{{{NS2}}}segment", state="final")
    etree.SubElement(segment, f"{{{NS2}}}source").text = SCHOOL
    etree.SubElement(segment, f"{{{NS2}}}target").text = "学校在哪里？"
    etree.indent(root)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def test_xliff20_segments_get_targets(translator):
    out = translate_document(translator, xliff20(), format="xliff", beam_size=1)
    assert isinstance(out, bytes)
    root = etree.fromstring(out)
    q = {"x": NS2}
    assert root.get("trgLang") == "zh-CN"
    first, second, kept = root.iterfind(".//x:segment", q)
    for segment, text in ((first, STATION), (second, COFFEE)):
        assert [child.tag.rsplit("}", 1)[1] for child in segment] == ["source", "target"]
        assert segment.get("state") == "translated" and segment.get("subState") == "enzh:mt"
        assert codes(segment[1]) == codes(segment[0]) and words(segment[1]) == plain(translator, text)
    begin = second[1].find("x:sc", q)  # <sc id="3"/>coffee<ec startRef="3"/>: a span, placed on words
    assert re.fullmatch("[\u4e00-\u9fff]+", begin.tail) and begin.getnext().get("startRef") == "3"
    assert kept.get("state") == "final" and kept[1].text == "学校在哪里？"
    assert root.find(".//x:ignorable", q) is not None
    quiet = translate_document(translator, xliff20(), format="xliff", beam_size=1, fuzzy=False)
    assert b"subState" not in quiet and quiet.count(b'state="translated"') == 2


def test_xliff_without_work_comes_back_byte_for_byte():
    data = xliff12().replace(b'source-language="en"', b'source-language="en" target-language="zh-CN"')
    data = re.sub(rb"<trans-unit id=\"[1256]\">.*?</trans-unit>", b"", data, flags=re.DOTALL)
    options = DocumentOptions(format="xliff")
    parsed = parse(b"\xef\xbb\xbf" + data, options)
    assert parsed.units.blocks == [] and render(parsed, fake, options) == b"\xef\xbb\xbf" + data


BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE xliff [
 <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
 <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
]>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="en" datatype="plaintext"
 original="a"><body><trans-unit id="1"><source>Hello &e;</source></trans-unit></body></file></xliff>
"""


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (BOMB, "has a DOCTYPE or entity declarations"),
        (BOMB.decode().encode("utf-16"), "has a DOCTYPE or entity declarations"),
        (b'<xliff version="1.2"><file><body><trans-unit id="1"><source>Hi', "not well-formed XML"),
        (b'<?xml version="1.0"?><html><body>Hi</body></html>', "not XLIFF 1.x or 2.x"),
        (b'<xliff version="3.0"/>', "not XLIFF 1.x or 2.x"),
        (xliff12().replace(b'source-language="en"', b'source-language="en" target-language="fr"'), "in 'fr'"),
    ],
)
def test_xliff_bad_and_hostile_files_are_refused(tmp_path, capsys, data, message):
    assert message in refused(tmp_path, capsys, "bad.xlf", data, "--target", "zh-Hans")


# -- CSV ------------------------------------------------------------------------------------------------------


def write_csv(rows: list[list[str]], **format) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, **format).writerows(rows)
    return buffer.getvalue()


def test_csv_by_name_keeps_header_and_other_columns(translator):
    rows = [
        ["id", "text", "note"],
        ["1", STATION, "kept, with a comma"],
        ["2", f"{COFFEE}\n{SCHOOL}", 'a "quoted" word'],
        ["3", "", "empty"],
        ["4", "12:30", "no words"],
    ]
    source = write_csv(rows)
    out = translate_document(translator, source, format="csv", beam_size=1)
    assert isinstance(out, str)
    got = list(csv.reader(io.StringIO(out, newline="")))
    assert (
        got[0] == rows[0]
        and [r[0] for r in got] == [r[0] for r in rows]
        and [r[2] for r in got] == [r[2] for r in rows]
    )
    assert [r[1] for r in got[1:]] == [
        plain(translator, STATION),
        plain(translator, f"{COFFEE}\n{SCHOOL}"),
        "",
        "12:30",
    ]
    assert out.splitlines(keepends=True)[-2:] == source.splitlines(keepends=True)[-2:]  # untouched rows: same bytes
    assert out.count("\r\n") == source.count("\r\n")


def test_csv_dialect_and_quoting_are_kept(translator):
    rows = [["10", WEATHER, "x"], ["20", SCHOOL, "y"]]  # no header: column 1 by its index
    source = write_csv(rows, delimiter=";", quoting=csv.QUOTE_ALL, lineterminator="\n")
    out = translate_document(translator, source, format="csv", field="1", beam_size=1)
    assert out == write_csv(
        [["10", plain(translator, WEATHER), "x"], ["20", plain(translator, SCHOOL), "y"]],
        delimiter=";",
        quoting=csv.QUOTE_ALL,
        lineterminator="\n",
    )


@pytest.mark.parametrize(
    ("data", "args", "message"),
    [
        (b'id,text\n1,"Hello" there,\n', (), "the record on line 2 is not valid CSV"),
        (b"id,text\n1\n", (), "the record on line 2 has 1 field(s), so no column 1"),
        (b"id,body\n1,Hello\n", (), "no column named 'text' in the header (columns: 'id', 'body')"),
        (b"id,text\n1,Hello\n", ("--no-fuzzy",), "fuzzy and retranslate apply to the po and xliff formats only"),
    ],
)
def test_csv_bad_files_are_refused(tmp_path, capsys, data, args, message):
    assert message in refused(tmp_path, capsys, "bad.csv", data, *args)


@pytest.mark.parametrize(
    ("name", "module", "data"), [("a.po", "polib", b'msgid "Hi"\nmsgstr ""\n'), ("a.xlf", "lxml", b"<x/>")]
)
def test_without_the_documents_extra_the_error_names_it(tmp_path, capsys, monkeypatch, name, module, data):
    for hidden in (module, f"{module}.etree"):
        monkeypatch.setitem(sys.modules, hidden, None)  # as if not installed
    error = refused(tmp_path, capsys, name, data)
    assert error.endswith(f"needs {module}, which is not installed: pip install 'enzh-onnx[documents]'")
