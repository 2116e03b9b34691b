"""Limits that cannot be sidestepped (issue 26): the client's address is the connection's unless a trusted proxy
names another (``--trusted-proxies``), and the characters counted are those the route translates (the query
string's ``q``, multipart bodies read by the route's own parser)."""

from __future__ import annotations

import io
import time
import tracemalloc
import zipfile

import httpx
import pytest
from fake_translator import FakeTranslator
from server_harness import ProcessServer, in_process

from enzh.runtime.errors import OptionsError
from enzh.serve.options import ServeOptions

LIBRE = "/translate"
TEXT = ("The weather is nice today. " * 80)[:1998]


# -- addresses ---------------------------------------------------------------------------------------------


def _statuses(server: ProcessServer, header: str, values: list[str]) -> list[int]:
    return [
        httpx.post(
            f"{server.url}{LIBRE}", json={"q": "Hi.", "target": "zh"}, headers={header: v}, timeout=30
        ).status_code
        for v in values
    ]


def test_forwarded_addresses_are_ignored_without_trusted_proxies(demo_dir):
    """`enzh serve` as it starts by default: loopback is no trusted proxy, so a local process cannot pick its
    address with X-Forwarded-For or X-Real-IP (uvicorn alone would believe 127.0.0.1)."""
    server = ProcessServer(demo_dir, "--req-limit", "5").wait_ready()
    try:
        forwarded = _statuses(server, "X-Forwarded-For", [f"203.0.113.{i}" for i in range(8)])
        assert forwarded == [200] * 5 + [429] * 3
        assert _statuses(server, "X-Real-IP", [f"198.51.100.{i}" for i in range(3)]) == [429] * 3
    finally:
        server.stop()


def test_a_trusted_proxy_names_the_client(demo_dir):
    """With the proxy trusted, every forwarded address has its own window, and one address still gets its 429."""
    server = ProcessServer(demo_dir, "--req-limit", "5", "--trusted-proxies", "127.0.0.0/8,::1").wait_ready()
    try:
        assert _statuses(server, "X-Forwarded-For", [f"203.0.113.{i}" for i in range(8)]) == [200] * 8
        assert _statuses(server, "X-Forwarded-For", ["203.0.113.50"] * 6) == [200] * 5 + [429]
        # the proxy appends the address it saw: what the client wrote before it is not believed
        spoofed = [f"10.9.9.{i}, 203.0.113.50" for i in range(3)]
        assert _statuses(server, "X-Forwarded-For", spoofed) == [429] * 3
        assert _statuses(server, "X-Real-IP", [f"198.51.100.{i}" for i in range(8)]) == [200] * 8
        assert _statuses(server, "X-Real-IP", ["198.51.100.99"] * 6) == [200] * 5 + [429]
    finally:
        server.stop()


def test_trusted_proxies_must_be_addresses_or_networks():
    assert ServeOptions(trusted_proxies=" 10.0.0.0/8, 192.168.1.7 ,::1").trusted_proxy_list() == [
        "10.0.0.0/8",
        "192.168.1.7",
        "::1",
    ]
    assert [str(n) for n in ServeOptions(trusted_proxies="10.1.2.3/8").trusted_networks()] == ["10.0.0.0/8"]
    assert ServeOptions().trusted_networks() == []
    for bad in ("localhost", "*", "10.0.0.0/33", "1.2.3"):
        with pytest.raises(OptionsError, match="trusted_proxies"):
            ServeOptions(trusted_proxies=bad)


# -- characters --------------------------------------------------------------------------------------------


def test_q_in_the_query_string_counts_against_the_char_limit():
    """``POST /translate?q=...`` with no body is translated (LibreTranslate reads request.values): it counts."""
    with in_process(ServeOptions(char_limit=3000), FakeTranslator()) as client:
        statuses = [client.post(LIBRE, params={"q": TEXT, "target": "zh"}).status_code for _ in range(3)]
        assert statuses == [200, 429, 429]  # 1,998 + 1,998 > 3,000: the second is already over
    with in_process(ServeOptions(char_limit=3000), FakeTranslator()) as client:
        form = client.post(LIBRE, params={"q": TEXT}, data={"target": "zh"})  # a form without q: the query's
        assert form.status_code == 200
        assert client.post(LIBRE, params={"q": TEXT}, data={"target": "zh"}).status_code == 429
        # a JSON body's request ignores the query string (as LibreTranslate does): it is neither translated
        # nor counted
        assert client.post("/detect", params={"q": TEXT}, json={"q": "Hi."}).status_code == 200


def _multipart(boundary: str, disposition: str, value: str) -> bytes:
    return (
        f"--{boundary}\r\nContent-Disposition: form-data; {disposition}\r\n\r\n{value}\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="target"\r\n\r\nzh\r\n--{boundary}--\r\n'
    ).encode()


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("multipart/form-data; boundary=B", _multipart("B", "name=q", TEXT)),  # an unquoted name
        ("multipart/form-data; boundary=decoy; boundary=real", _multipart("real", 'name="q"', TEXT)),
        ('multipart/form-data; boundary="real"; boundary=decoy', _multipart("decoy", "name=q", TEXT)),
        ("Multipart/Form-Data; BOUNDARY=b2", _multipart("b2", "NAME=q", TEXT)),
    ],
    ids=["unquoted-name", "decoy-boundary", "decoy-quoted-first", "upper-case"],
)
def test_multipart_bodies_are_counted_as_the_route_reads_them(content_type, body):
    """Whatever the route reads from a multipart body, the char limit has counted: a body that is translated
    is counted, and one that is not is a 400 for both."""
    with in_process(ServeOptions(char_limit=3000), FakeTranslator()) as client:
        answers = [client.post(LIBRE, content=body, headers={"Content-Type": content_type}) for _ in range(2)]
        if answers[0].status_code == 200:  # translated: counted, so the second is over the limit
            assert answers[0].json()["translatedText"]
            assert answers[1].status_code == 429, answers[1].text
        else:
            assert [a.status_code for a in answers] == [400, 400], [a.text for a in answers]


def test_the_decoy_boundary_and_the_unquoted_name_are_translated_and_counted():
    """The two bypasses of the hostile check, pinned: the route translates both bodies, so both count."""
    cases = [
        ("multipart/form-data; boundary=B", _multipart("B", "name=q", TEXT)),
        ("multipart/form-data; boundary=decoy; boundary=real", _multipart("real", 'name="q"', TEXT)),
    ]
    for content_type, body in cases:
        with in_process(ServeOptions(char_limit=3000), FakeTranslator()) as client:
            answers = [client.post(LIBRE, content=body, headers={"Content-Type": content_type}) for _ in range(2)]
            assert [a.status_code for a in answers] == [200, 429], content_type
            assert answers[0].json()["translatedText"].startswith("THE WEATHER IS NICE TODAY.")


def test_multipart_text_and_file_fields_count_once():
    with in_process(ServeOptions(char_limit=3000), FakeTranslator()) as client:
        files = {"file": ("a.txt", TEXT.encode(), "text/plain")}  # 1,998 bytes, 1,997 characters of text
        assert client.post("/translate_file", data={"target": "zh"}, files=files).status_code == 200
        assert client.post(LIBRE, data={"q": "x" * 1004, "target": "zh"}).status_code == 429  # 3,001
        assert client.post(LIBRE, data={"q": "x" * 1003, "target": "zh"}).status_code == 200  # 3,000


# -- uploads: their text, not their bytes ------------------------------------------------------------------


def _docx(paragraphs: list[str]) -> bytes:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def test_a_small_docx_with_much_text_counts_its_characters():
    """The issue's case: a .docx of a few KiB holding 32,150 characters (its compressed bytes are few)."""
    paragraph = ("The weather is nice today. " * 50).strip()  # 1,349 characters
    data = _docx([paragraph] * 24)
    chars = 24 * len(paragraph)
    assert chars == 32_376 and len(data) < 40_000  # python-docx's template is most of its bytes
    with in_process(ServeOptions(char_limit=3000), FakeTranslator()) as client:
        answer = client.post("/translate_file", data={"target": "zh"}, files={"file": ("a.docx", data, DOCX)})
        assert answer.status_code == 400, answer.text  # LibreTranslate's 400 for a 422
        assert answer.json() == {"error": f"Invalid request: request ({chars}) exceeds text limit (3000)"}
    with in_process(ServeOptions(char_limit=40_000), FakeTranslator()) as client:
        files = {"file": ("a.docx", data, DOCX)}
        assert client.post("/translate_file", data={"target": "zh"}, files=files).status_code == 200
        # what is left of the minute's 40,000 characters: 7,624
        assert client.post(LIBRE, data={"q": "x" * 7625, "target": "zh"}).status_code == 429
        assert client.post(LIBRE, data={"q": "x" * 7624, "target": "zh"}).status_code == 200


def test_an_upload_counts_the_text_of_its_source_language():
    """source=zh reads the Chinese pieces, source=en the English ones, auto the larger of the two."""
    english, chinese = "Hello there. " * 40, "今天天气很好。" * 40
    data = f"{english}\n\n{chinese}\n".encode()
    counts = {}
    for source in ("en", "zh", "auto"):
        with in_process(ServeOptions(char_limit=len(english) + len(chinese)), FakeTranslator()) as client:
            files = {"file": ("a.txt", data, "text/plain")}
            sent = client.post("/translate_file", data={"target": "zh", "source": source}, files=files)
            assert sent.status_code in (200, 400), sent.text
            for size in range(len(english) + len(chinese) + 1, 0, -1):  # the largest q still admitted
                if client.post("/detect", data={"q": "x" * size}).status_code == 200:
                    break
            counts[source] = len(english) + len(chinese) - size
    assert counts["en"] == len(english.strip()) and counts["zh"] == len(chinese)
    assert counts["auto"] == max(counts["en"], counts["zh"])


def test_an_unreadable_upload_counts_its_bytes_and_is_refused():
    with in_process(ServeOptions(char_limit=3000), FakeTranslator()) as client:
        files = {"file": ("a.docx", b"PK\x03\x04 not a zip" + b"x" * 2000, DOCX)}
        answer = client.post("/translate_file", data={"target": "zh"}, files=files)
        assert answer.status_code == 400 and answer.json()["error"].startswith("Invalid request: "), answer.text


def _ratio_bomb() -> bytes:
    """A .docx-shaped zip whose word/document.xml inflates 8 MiB of spaces from a few KiB (ratio past 200)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        package.writestr("word/document.xml", b" " * (8 << 20))
    return out.getvalue()


HOSTILE_UPLOADS = {
    "zip bomb": ("a.docx", _ratio_bomb, "MAX_ZIP_RATIO"),
    "100,000 unclosed <span>": ("a.html", lambda: ("<p>" + "<span>" * 100_000 + "Hi.").encode(), "MAX_DEPTH"),
    "2,000 nested <b>": ("a.html", lambda: ("<b>" * 2000 + "Hi." + "</b>" * 2000).encode(), "MAX_DEPTH"),
    "JSON nested 100,000 deep": (
        "a.jsonl",
        lambda: ('{"text": "Hi.", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n").encode(),
        "nests JSON",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE_UPLOADS))
def test_hostile_uploads_through_the_limit_checks_are_a_quick_400(name):
    """Counting an upload's text reads it with the documents' reader, limits included: a hostile file is
    refused by the check's reading and the route's alike, quickly and without inflating anything."""
    filename, make, limit = HOSTILE_UPLOADS[name]
    data = make()
    assert len(data) < 1 << 20  # within the body limit: it reaches the readers
    with in_process(ServeOptions(char_limit=len(data) + 1000), FakeTranslator()) as client:
        traced = name == "zip bomb"  # the memory of the one that would inflate (tracing slows the others 5x)
        if traced:
            tracemalloc.start()
        started = time.perf_counter()
        try:
            answer = client.post("/translate_file", data={"target": "zh"}, files={"file": (filename, data)})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.perf_counter() - started < 20.0  # read twice (the check, the route); ~3.5 s on 2 busy cores
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"].startswith("Invalid request: ") and limit in answer.json()["error"]
        assert not traced or peak < 64 << 20, f"{peak / 2**20:.0f} MiB allocated"
        # counted as its bytes (it could not be read): 1,000 characters are left of the window
        assert client.post("/detect", data={"q": "x" * 1001}).status_code == 429
        assert client.post("/detect", data={"q": "x" * 1000}).status_code == 200
