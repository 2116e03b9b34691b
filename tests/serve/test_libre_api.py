"""The LibreTranslate API over HTTP, in-process: LibreTranslate's own API tests in our words (its fixture loads
English and Spanish; ours is the demo model, English into Chinese), then what its clients rely on: form and JSON,
lists, source=auto per text, HTML, alternatives, language codes, errors in its shape, files and downloads."""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

import pytest
from fake_translator import FakeTranslator, fake_translation
from server_harness import in_process

from enzh.serve.downloads import safe_name
from enzh.serve.options import ServeOptions

WEATHER = "The weather is nice today."
STATION = "Where is the train station?"


@pytest.fixture(scope="module")
def client(demo_translator):
    with in_process(ServeOptions(), demo_translator) as c:
        yield c


@pytest.fixture(scope="module")
def fake_client():
    with in_process(ServeOptions(download_ttl_s=60), FakeTranslator()) as c:
        yield c


def error_of(response, status: int) -> str:
    """The message of a LibreTranslate-shaped error answer with ``status``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    return str(body["error"])


# -- LibreTranslate's own API tests ------------------------------------------------------------------------


def test_lt_translate_form_and_batch(client):
    form = client.post("/translate", data={"q": "Hello", "source": "en", "target": "zh", "format": "text"})
    assert form.status_code == 200 and isinstance(form.json()["translatedText"], str)
    batch = client.post("/translate", json={"q": ["Hello", "World"], "source": "en", "target": "zh", "format": "text"})
    assert batch.status_code == 200 and len(batch.json()["translatedText"]) == 2


def test_lt_translate_errors(client):
    unsupported = client.post("/translate", data={"q": "Hello", "source": "en", "target": "zz", "format": "text"})
    assert error_of(unsupported, 400) == "zz is not supported"
    missing = client.post("/translate", data={"source": "en", "target": "zh", "format": "text"})
    assert error_of(missing, 400) == "Invalid request: missing q parameter"


def test_lt_detect(client):
    found = client.post("/detect", data={"q": "Hello"})
    assert found.status_code == 200
    assert len(found.json()) >= 1 and {"confidence", "language"} <= set(found.json()[0])
    error_of(client.post("/detect"), 400)
    assert client.get("/detect").status_code == 405


def test_lt_languages_settings_health_spec(client):
    languages = client.get("/languages")
    assert languages.status_code == 200 and {"code", "name"} <= set(languages.json()[0])
    assert client.post("/languages").status_code == 405
    assert client.get("/frontend/settings").status_code == 200
    health = client.get("/health")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert client.post("/health").status_code == 405
    assert client.get("/spec").status_code == 200
    assert client.post("/spec").status_code == 405


def test_suggest_is_disabled_as_frontend_settings_say(client):
    """LibreTranslate's answer with suggestions off (its default), to form and JSON alike; the web page's settings
    say so first, and the route is in /spec like LibreTranslate's."""
    assert client.get("/frontend/settings").json()["suggestions"] is False
    suggestion = {"q": "Hello", "s": "你好", "source": "en", "target": "zh"}
    for answer in (client.post("/suggest", data=suggestion), client.post("/suggest", json=suggestion)):
        assert error_of(answer, 403) == "Suggestions are disabled on this server."
    assert error_of(client.post("/suggest"), 403) == "Suggestions are disabled on this server."
    assert client.get("/suggest").status_code == 405
    assert "/suggest" in client.get("/spec").json()["paths"]


# -- translations --------------------------------------------------------------------------------------------


def test_translations_are_the_translators(client, demo_translator):
    expected = demo_translator.translate([WEATHER, STATION])
    one = client.post("/translate", data={"q": WEATHER, "source": "en", "target": "zh"}).json()
    assert one == {"translatedText": expected[0]}  # source given: no detectedLanguage, no alternatives
    many = client.post("/translate", json={"q": [WEATHER, STATION], "source": "en", "target": "zh-Hans"}).json()
    assert many == {"translatedText": expected}
    query = client.post(f"/translate?q={WEATHER.replace(' ', '%20')}&target=zh")  # no body: the query's fields
    assert query.json() == {"translatedText": expected[0]}
    crlf = client.post("/translate", data={"q": f"{WEATHER}\r\n{STATION}", "target": "zh"}).json()
    assert crlf["translatedText"] == demo_translator.translate([f"{WEATHER}\n{STATION}"])[0]


def test_target_codes(client, demo_translator):
    simplified = demo_translator.translate([WEATHER], target="zh-Hans")[0]
    traditional = demo_translator.translate([WEATHER], target="zh-Hant")[0]
    for code, expected in [("zh", simplified), ("ZH", simplified), ("zh-Hans", simplified), ("zh-CN", simplified),
                           ("zh_hans", simplified), ("zt", traditional), ("zh-Hant", traditional),
                           ("zh-tw", traditional)]:  # fmt: skip
        response = client.post("/translate", json={"q": WEATHER, "source": "EN", "target": code})
        assert response.json() == {"translatedText": expected}, code
    assert error_of(client.post("/translate", json={"q": WEATHER, "target": "fr"}), 400) == "fr is not supported"
    assert "not available as a target" in error_of(client.post("/translate", json={"q": "x", "target": "en"}), 400)
    assert error_of(client.post("/translate", json={"q": "x", "source": "fr"}), 400) == "fr is not supported"


def test_source_auto_detects_each_text_and_keeps_chinese(client, demo_translator):
    chinese = "今天天气很好。"
    body = client.post("/translate", json={"q": [WEATHER, chinese], "source": "auto", "target": "zh"}).json()
    assert body["translatedText"] == [demo_translator.translate([WEATHER])[0], chinese]
    assert [d["language"] for d in body["detectedLanguage"]] == ["en", "zh"]
    assert all(0 <= d["confidence"] <= 100 for d in body["detectedLanguage"])
    single = client.post("/translate", json={"q": chinese, "source": "auto", "target": "zh"}).json()
    assert single == {"translatedText": chinese, "detectedLanguage": {"confidence": 100.0, "language": "zh"}}
    assert client.post("/translate", json={"q": chinese, "source": "zh", "target": "zh"}).json() == {
        "translatedText": chinese
    }
    emoji = client.post("/translate", json={"q": "😀 👍", "source": "auto", "target": "zh"}).json()
    assert emoji == {"translatedText": "😀 👍", "detectedLanguage": {"confidence": 0.0, "language": "en"}}
    french = client.post("/translate", json={"q": [WEATHER, "Bonjour, comment allez-vous?"], "source": "auto"})
    assert error_of(french, 400).startswith("fr is not supported (detected in q[1]")


def test_html(client, demo_translator):
    q = ["<p>The weather is <b>nice</b> today.</p>", '<p><a href="https://x.test/">Where is the train station?</a></p>']
    body = client.post("/translate", json={"q": q, "source": "auto", "target": "zh", "format": "html"}).json()
    first, second = body["translatedText"]
    assert first.startswith("<p>") and "<b>" in first and "</b>" in first and first.endswith("</p>")
    assert second == f'<p><a href="https://x.test/">{demo_translator.translate([STATION])[0]}</a></p>'
    assert [d["language"] for d in body["detectedLanguage"]] == ["en", "en"]  # the text, not the tags
    bad = client.post("/translate", json={"q": "x", "format": "markdown"})
    assert error_of(bad, 400) == "markdown format is not supported"


def test_alternatives(client, demo_translator):
    [detailed] = demo_translator.translate_detailed([WEATHER], alternatives=3)
    body = client.post("/translate", json={"q": WEATHER, "target": "zh", "alternatives": 2}).json()
    assert body["translatedText"] == demo_translator.translate([WEATHER])[0] == detailed.text
    assert body["alternatives"] == [a.text for a in detailed.alternatives[1:3]]
    assert body["translatedText"] not in body["alternatives"]
    many = client.post("/translate", json={"q": [WEATHER, STATION], "alternatives": 1}).json()
    assert len(many["alternatives"]) == 2 and all(len(a) <= 1 for a in many["alternatives"])
    html = client.post("/translate", json={"q": "<p>Hello.</p>", "format": "html", "alternatives": 1}).json()
    assert html["alternatives"] == []
    assert "alternatives" not in client.post("/translate", json={"q": WEATHER, "alternatives": 0}).json()
    not_number = client.post("/translate", data={"q": WEATHER, "alternatives": "x"})
    assert error_of(not_number, 400) == "Invalid request: alternatives parameter is not a number"
    too_many = client.post("/translate", json={"q": WEATHER, "alternatives": 4})
    assert error_of(too_many, 400) == "Invalid request: alternatives parameter must be <= 3"


def test_keys_are_ignored_without_key_store(client):
    for key in ({"api_key": None}, {"api_key": ""}, {"apiKey": ""}, {"api_key": "anything"}):
        assert client.post("/translate", json={"q": WEATHER, "target": "zh", **key}).status_code == 200


def test_bad_requests_are_400_in_libretranslates_shape(client):
    cases = [
        (b"[1, 2]", "application/json", "Invalid JSON format"),
        (b'{"q": "x"', "application/json", "Invalid JSON format: "),
        (b'{"q": 1}', "application/json", "Invalid request: q must be a string or a list of strings"),
        (b'{"q": ["a", 2]}', "application/json", "Invalid request: q must be a string or a list of strings"),
        (b'{"q": "a", "target": 5}', "application/json", "Invalid request: target must be a language code"),
        (b"q=%ff%fe&target=zh", "application/x-www-form-urlencoded", "Invalid request: the form is not valid"),
        (b"q=a", "text/plain", "Invalid request: missing q parameter"),  # a body that is no form is ignored
    ]
    for raw, content_type, message in cases:
        response = client.post("/translate", content=raw, headers={"content-type": content_type})
        assert error_of(response, 400).startswith(message), raw
    assert client.post("/translate", content=b"q=\x00&target=zh", headers={
        "content-type": "application/x-www-form-urlencoded"}).status_code == 200  # fmt: skip


def test_limits(demo_translator):
    options = ServeOptions(max_chars_per_text=20, max_texts_per_request=2, max_request_chars=30, max_body_bytes=4096)
    with in_process(options, demo_translator) as client:
        long_text = client.post("/translate", json={"q": "a" * 21})
        assert error_of(long_text, 400) == "Invalid request: request (21) exceeds text limit (20)"
        batch = client.post("/translate", json={"q": ["a", "b", "c"]})
        assert error_of(batch, 400) == "Invalid request: request (3) exceeds text limit (2)"
        total = client.post("/translate", json={"q": ["a" * 20, "b" * 20]})
        assert error_of(total, 400) == "Invalid request: request (40) exceeds character limit (30)"
        assert "larger than 4096 bytes" in error_of(client.post("/translate", content=b"x" * 5000), 413)
        big_file = client.post("/translate_file", files={"file": ("a.txt", b"x" * 5000)})
        assert "larger than 4096 bytes" in error_of(big_file, 413)
        settings = client.get("/frontend/settings").json()
        assert settings["charLimit"] == 20


def test_queue_full_is_429_with_retry_after():
    options = ServeOptions(max_queue_size=1, max_queue_delay_ms=0)
    with in_process(options, FakeTranslator(delay_s=0.6)) as client:
        answers = {}

        def post(name: str, q: list[str]) -> None:
            answers[name] = client.post("/translate", json={"q": q})

        threads = [threading.Thread(target=post, args=(n, q)) for n, q in [("a", ["a"]), ("b", ["b"]), ("c", ["c"])]]
        for thread in threads:  # a runs, b waits in the queue, c finds it full
            thread.start()
            time.sleep(0.2)
        for thread in threads:
            thread.join()
        assert answers["a"].status_code == answers["b"].status_code == 200
        assert "queue is full" in error_of(answers["c"], 429) and int(answers["c"].headers["retry-after"]) >= 1


def test_not_ready_is_503_in_libretranslates_shape(tmp_path):
    with in_process(ServeOptions(model_dir=str(tmp_path)), wait_ready=False) as client:
        deadline = time.monotonic() + 30
        while client.get("/readyz").json()["status"] == "loading" and time.monotonic() < deadline:
            time.sleep(0.02)
        error_of(client.post("/translate", json={"q": WEATHER}), 503)
        error_of(client.get("/health"), 503)
        assert client.post("/detect", json={"q": WEATHER}).json()[0]["language"] == "en"  # needs no model


# -- detection ---------------------------------------------------------------------------------------------


def test_detect(client):
    english = client.post("/detect", json={"q": WEATHER}).json()
    assert english[0] == {"confidence": 100.0, "language": "en"}
    assert client.post("/detect", data={"q": "今天天气很好。"}).json() == [{"confidence": 100.0, "language": "zh"}]
    assert client.post("/detect", data={"q": "1234 !!"}).json() == [{"confidence": 0.0, "language": "en"}]
    french = client.post("/detect", json={"q": "Bonjour, comment allez-vous aujourd'hui?"}).json()
    assert french[0]["language"] == "fr"
    both = client.post("/detect", json={"q": [WEATHER, "Where is the school?"]}).json()
    assert isinstance(both, list) and both[0]["language"] == "en"  # one answer for the list
    assert all(0 <= c["confidence"] <= 100 for c in both)


# -- languages, settings, spec -----------------------------------------------------------------------------


def test_languages_ignore_any_body(client):
    plain = client.get("/languages").json()
    with_json_type = client.request("GET", "/languages", headers={"content-type": "application/json"})
    with_form = client.request(
        "GET", "/languages", content=b"api_key=x", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert with_json_type.json() == with_form.json() == plain
    assert all({"code", "name", "targets"} <= set(language) for language in plain)
    english = next(language for language in plain if language["code"] == "en")
    assert {"zh", "zh-Hans", "zh-CN", "zt", "zh-Hant", "zh-TW"} <= set(english["targets"])
    assert {"zh", "zh-Hans", "zt", "zh-Hant"} <= {language["code"] for language in plain}


def test_frontend_settings(client):
    settings = client.get("/frontend/settings").json()
    assert settings["charLimit"] == ServeOptions().max_chars_per_text
    assert settings["keyRequired"] is False and settings["apiKeys"] is False
    assert settings["language"]["source"]["code"] == "en"
    assert settings["language"]["target"]["code"] == "zh-Hans"
    assert settings["filesTranslation"] is True and ".txt" in settings["supportedFilesFormat"]
    enzh = settings["enzh"]
    assert enzh["demo"] is True and "demo model" in enzh["demoNotice"] and enzh["model"].startswith("enzh-demo")
    assert enzh["maxAlternatives"] == 3


def test_spec_is_the_libretranslate_api(client):
    spec = client.get("/spec").json()
    assert {"/translate", "/detect", "/languages", "/translate_file", "/frontend/settings", "/spec"} <= set(
        spec["paths"]
    )
    assert "/v1/translate" not in spec["paths"] and "/readyz" not in spec["paths"]
    error = spec["paths"]["/translate"]["post"]["responses"]["400"]["content"]["application/json"]["schema"]
    assert error == {"$ref": "#/components/schemas/LibreErrorBody"}


# -- files ---------------------------------------------------------------------------------------------------


def test_translate_file_and_download(client, demo_translator):
    text = f"{WEATHER}\n\n{STATION}\n"
    answer = client.post(
        "/translate_file", files={"file": ("report.txt", text.encode())}, data={"source": "en", "target": "zh"}
    )
    url = answer.json()["translatedFileUrl"]
    assert urlsplit(url).path.startswith("/download_file/") and url.endswith("/report.txt")
    download = client.get(url)
    assert download.status_code == 200 and "report.txt" in download.headers["content-disposition"]
    assert download.content.decode() == "\n\n".join(demo_translator.translate([WEATHER, STATION])) + "\n"
    page = client.post("/translate_file", files={"file": ("page.html", b"<h1>Where is the train station?</h1>")})
    assert client.get(page.json()["translatedFileUrl"]).text == f"<h1>{demo_translator.translate([STATION])[0]}</h1>"


def test_translate_file_errors(fake_client):
    post = fake_client.post
    assert error_of(post("/translate_file", data={"source": "en"}), 400) == "Invalid request: missing file parameter"
    unsupported = post("/translate_file", files={"file": ("slides.pdf", b"%PDF-1.4")})
    assert error_of(unsupported, 400).startswith("Invalid request: file format not supported; PDF is not supported")
    undecodable = post("/translate_file", files={"file": ("a.txt", b"\xff\xfe\xfa bad")})
    message = error_of(undecodable, 400)
    assert message.startswith("Invalid request: ") and "\n" not in message
    french = post(
        "/translate_file", files={"file": ("a.txt", b"Bonjour, comment allez-vous?")}, data={"source": "auto"}
    )
    assert error_of(french, 400).startswith("fr is not supported")
    assert error_of(fake_client.get("/download_file/0123456789abcdef0123456789abcdef/a.txt"), 404)
    assert error_of(fake_client.get("/download_file/nothex/a.txt"), 404)


def test_downloads_keep_a_safe_name_and_expire(tmp_path):
    with in_process(ServeOptions(download_ttl_s=0.5, files_dir=str(tmp_path)), FakeTranslator()) as client:
        answer = client.post("/translate_file", files={"file": ("../../etc/报告.txt", b"hello there.")}).json()
        url = answer["translatedFileUrl"]
        assert url.endswith("/%E6%8A%A5%E5%91%8A.txt")  # the folders are dropped
        download = client.get(url)
        assert download.text == fake_translation("hello there.")
        assert "filename*=utf-8''%E6%8A%A5%E5%91%8A.txt" in download.headers["content-disposition"]
        assert download.headers["x-content-type-options"] == "nosniff"  # a browser takes the type sent
        assert len(list(tmp_path.iterdir())) == 1
        time.sleep(0.6)
        expired = client.get(url)
        assert error_of(expired, 404) and expired.headers["x-content-type-options"] == "nosniff"
        client.post("/translate_file", files={"file": ("b.txt", b"more.")})  # storing sweeps the expired ones
        assert len(list(tmp_path.iterdir())) == 1


def test_safe_names():
    assert safe_name("C:\\Users\\me\\report.txt", "x") == "report.txt"
    assert safe_name('bad:"name"?.txt', "x") == "bad_name_.txt"
    assert safe_name("a/b/..", "x") == safe_name("..", "x") == "x"
    assert safe_name(".hidden.txt", "x") == "hidden.txt"
    long = safe_name("y" * 300 + ".txt", "x")
    assert len(long) == 200 and long.endswith(".txt")


def test_safe_names_drop_control_and_bidi_characters():
    """U+202E would show "invoice\u202etxt.exe" as "invoiceexe.txt"; controls and format characters go too."""
    assert safe_name("invoice\u202etxt.exe", "x") == "invoicetxt.exe"
    assert safe_name("a\u202ab\u202cc\u2066d\u2069\u200e\u200f\u061c.txt", "x") == "abcd.txt"  # embeddings, isolates
    assert safe_name("zero\u200bwidth\ufeff\u00ad.txt", "x") == "zerowidth.txt"  # Cf: ZWSP, BOM, soft hyphen
    assert safe_name("tab\there\x00\x1b[31m\x7f\x85.txt", "x") == "tabhere[31m.txt"  # Cc, C1 included
    assert safe_name("line\u2028para\u2029.txt", "x") == "linepara.txt"
    assert safe_name("\u202e\u202d", "x") == safe_name(".\u202e.", "x") == "x"
    assert safe_name("报告 2024.txt", "x") == "报告 2024.txt"  # letters and spaces stay


def test_uploads_with_bidi_names_are_stored_and_downloaded_without_them(tmp_path):
    with in_process(ServeOptions(files_dir=str(tmp_path)), FakeTranslator()) as client:
        answer = client.post("/translate_file", files={"file": ("report\u202etxt.html\u200b", b"<p>Hi.</p>")})
        url = answer.json()["translatedFileUrl"]
        assert url.endswith("/reporttxt.html")
        [stored] = [f.name for folder in tmp_path.iterdir() for f in folder.iterdir()]
        assert stored == "reporttxt.html"
        download = client.get(url)
        assert download.status_code == 200 and download.headers["content-type"].startswith("text/html")
        assert download.headers["x-content-type-options"] == "nosniff"
        assert download.headers["content-disposition"].startswith("attachment")
        file_id = url.split("/")[-2]
        assert error_of(client.get(f"/download_file/{file_id}/report%E2%80%AEtxt.html"), 404)


# -- one scheduler for everything ----------------------------------------------------------------------------


def test_html_sentences_share_batches_with_other_requests():
    translator = FakeTranslator()
    with in_process(ServeOptions(max_queue_delay_ms=400, warmup=False), translator) as client:
        answers = {}

        def post(name: str, payload: dict) -> None:
            answers[name] = client.post("/translate", json=payload)

        text = threading.Thread(target=post, args=("text", {"q": "first one."}))
        html = threading.Thread(target=post, args=("html", {"q": "<p>second one.</p>", "format": "html"}))
        text.start()
        html.start()
        text.join()
        html.join()
        assert answers["text"].json() == {"translatedText": fake_translation("first one.")}
        assert answers["html"].json() == {"translatedText": f"<p>{fake_translation('second one.')}</p>"}
        assert max(size for size, _ in translator.batches) == 2  # both requests' sentences in one batch


def test_v1_format_html_and_alternatives(client, demo_translator):
    html = client.post("/v1/translate", json={"text": ["<p>Where is the train station?</p>"], "format": "html"})
    assert html.json()["translations"] == [f"<p>{demo_translator.translate([STATION])[0]}</p>"]
    [detailed] = demo_translator.translate_detailed([WEATHER], alternatives=3)
    body = client.post("/v1/translate", json={"text": WEATHER, "alternatives": 2}).json()
    assert body["translations"] == [detailed.text]
    assert body["alternatives"] == [[a.text for a in detailed.alternatives[1:3]]]
    assert "alternatives" not in client.post("/v1/translate", json={"text": WEATHER}).json()
    greedy = client.post("/v1/translate", json={"text": WEATHER, "alternatives": 2, "beam_size": 1}).json()
    assert greedy["alternatives"] == [[]]  # one beam: no other translation
    too_many = client.post("/v1/translate", json={"text": WEATHER, "alternatives": 9})
    assert too_many.status_code == 422 and too_many.json()["error"]["code"] == "invalid_request"  # /v1's own shape
