"""Several models in one server, with stand-ins (an English->Chinese and a Chinese->English FakeTranslator): each
text goes to the model of its direction, through that model's own batching queue; /languages, /frontend/settings,
metrics and readiness cover every model. The embedded pair itself is tested in test_server_pair.py."""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

import pytest
from fake_translator import FakeTranslator, FakeZhEnTranslator, fake_english, fake_translation
from server_harness import in_process, metric_value

from enzh.serve.options import ServeOptions
from enzh.serve.service import Service

HELLO = "The weather is nice today."
NIHAO = "今天天气很好。"


@pytest.fixture(scope="module")
def pair():
    en_zh, zh_en = FakeTranslator(), FakeZhEnTranslator()
    with in_process(ServeOptions(), [en_zh, zh_en]) as client:
        yield client, en_zh, zh_en


@pytest.fixture(scope="module")
def lone():
    with in_process(ServeOptions(), FakeTranslator()) as client:
        yield client


def error_of(response, status: int) -> str:
    assert response.status_code == status, response.text
    return str(response.json()["error"])


def test_explicit_directions_go_to_their_model(pair):
    client, _, _ = pair
    to_english = client.post("/translate", json={"q": NIHAO, "source": "zh", "target": "en"}).json()
    assert to_english == {"translatedText": fake_english(NIHAO)}
    to_chinese = client.post("/translate", json={"q": HELLO, "source": "en", "target": "zh"}).json()
    assert to_chinese == {"translatedText": fake_translation(HELLO)}
    traditional = client.post("/translate", data={"q": HELLO, "source": "en", "target": "zt"}).json()
    assert traditional == {"translatedText": fake_translation(HELLO, "zh-Hant")}
    for code in ("zh-Hans", "zh-CN", "zt", "zh-Hant", "ZH-TW"):  # every Chinese source code reads Chinese
        answer = client.post("/translate", json={"q": NIHAO, "source": code, "target": "en"}).json()
        assert answer == {"translatedText": fake_english(NIHAO)}, code
    # already in the target language: unchanged, in either direction
    assert client.post("/translate", json={"q": HELLO, "source": "en", "target": "en"}).json() == {
        "translatedText": HELLO
    }
    assert client.post("/translate", json={"q": NIHAO, "source": "zh", "target": "zh"}).json() == {
        "translatedText": NIHAO
    }


def test_source_auto_routes_each_text(pair):
    client, _, _ = pair
    q = [HELLO, NIHAO, "123 !", "Where is the train station?"]
    into_english = client.post("/translate", json={"q": q, "source": "auto", "target": "en"}).json()
    assert into_english["translatedText"] == [HELLO, fake_english(NIHAO), "123 !", q[3]]
    assert [d["language"] for d in into_english["detectedLanguage"]] == ["en", "zh", "en", "en"]
    into_chinese = client.post("/translate", json={"q": q, "source": "auto", "target": "zh-Hant"}).json()
    assert into_chinese["translatedText"] == [
        fake_translation(HELLO, "zh-Hant"),
        NIHAO,
        "123 !",
        fake_translation(q[3], "zh-Hant"),
    ]
    single = client.post("/translate", json={"q": NIHAO, "source": "auto", "target": "en"}).json()
    assert single == {
        "translatedText": fake_english(NIHAO),
        "detectedLanguage": {"confidence": 100.0, "language": "zh"},
    }
    french = client.post("/translate", json={"q": [HELLO, "Bonjour, comment allez-vous?"], "source": "auto"})
    assert error_of(french, 400) == (
        "fr is not supported (detected in q[1] with confidence 100); this server translates en->zh, zh->en"
    )


def test_mixed_html_goes_to_both_models(pair):
    client, _, _ = pair
    q = [f"<p>{NIHAO}</p>", f"<p><b>{HELLO}</b></p>"]
    body = client.post("/translate", json={"q": q, "source": "auto", "target": "en", "format": "html"}).json()
    assert body["translatedText"] == [f"<p>{fake_english(NIHAO)}</p>", q[1]]
    chinese = client.post("/translate", json={"q": q[0], "source": "zh", "target": "en", "format": "html"}).json()
    assert chinese == {"translatedText": f"<p>{fake_english(NIHAO)}</p>"}


def test_each_model_batches_its_own_texts(pair):
    client, en_zh, zh_en = pair
    before = (len(en_zh.batches), len(zh_en.batches))
    answers: list[dict] = []

    def post(q: str, target: str) -> None:
        answers.append(client.post("/translate", json={"q": q, "source": "auto", "target": target}).json())

    threads = [threading.Thread(target=post, args=(q, t)) for q, t in [(HELLO, "zh"), (NIHAO, "en")] * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 8
    assert {a["translatedText"] for a in answers} == {fake_translation(HELLO), fake_english(NIHAO)}
    assert len(en_zh.batches) > before[0] and len(zh_en.batches) > before[1]  # each through its own queue
    metrics = client.get("/metrics").text
    for model, direction in (("fake (fp32)", "en-zh"), ("fake-zh-en (fp32)", "zh-en")):
        labels = {"model": model, "direction": direction}
        assert metric_value(metrics, "enzh_batch_size_count", **labels) >= 2  # warm-up and requests
        assert metric_value(metrics, "enzh_translated_sentences_total", **labels) >= 4
        assert metric_value(metrics, "enzh_worker_alive", **labels) == 1
        assert f'enzh_queue_depth{{direction="{direction}",model="{model}"}}' in metrics
    assert metric_value(metrics, "enzh_ready") == 1


def test_a_direction_no_model_serves_is_refused(lone):
    refused = lone.post("/translate", json={"q": NIHAO, "source": "zh", "target": "en"})
    assert error_of(refused, 400) == (
        "English (en) is not available as a target language from Chinese (zh); this server translates en->zh"
    )
    mixed = lone.post("/translate", json={"q": [HELLO, NIHAO], "source": "auto", "target": "en"})
    assert "is not available as a target language" in error_of(mixed, 400) and "en->zh" in error_of(mixed, 400)
    v1 = lone.post("/v1/translate", json={"text": NIHAO, "source": "zh", "target": "en"})
    assert v1.status_code == 422 and v1.json()["error"] == {
        "code": "unsupported_direction",
        "message": "no model here translates zh into en; offered: en->zh",
    }
    # a lone English->Chinese model keeps answering Chinese unchanged, as before
    assert lone.post("/translate", json={"q": NIHAO, "source": "zh", "target": "zh"}).json() == {
        "translatedText": NIHAO
    }


def test_languages_list_what_the_models_offer(pair, lone):
    client, _, _ = pair
    chinese_targets = ["zh", "zh-Hans", "zh-CN", "zt", "zh-Hant", "zh-TW", "zh-HK"]
    assert client.get("/languages").json() == [
        {"code": "en", "name": "English", "targets": chinese_targets},
        {"code": "zh", "name": "Chinese", "targets": ["en"]},
        {"code": "zh-Hans", "name": "Chinese (Simplified)", "targets": ["en"]},
        {"code": "zt", "name": "Chinese (Traditional)", "targets": ["en"]},
        {"code": "zh-Hant", "name": "Chinese (Traditional)", "targets": ["en"]},
    ]
    assert lone.get("/languages").json() == [
        {"code": "en", "name": "English", "targets": chinese_targets},
        {"code": "zh", "name": "Chinese", "targets": []},
        {"code": "zh-Hans", "name": "Chinese (Simplified)", "targets": []},
        {"code": "zt", "name": "Chinese (Traditional)", "targets": []},
        {"code": "zh-Hant", "name": "Chinese (Traditional)", "targets": []},
    ]
    with in_process(ServeOptions(), FakeZhEnTranslator()) as only_english:  # Chinese->English alone
        listed = only_english.get("/languages").json()
        assert listed[0] == {"code": "en", "name": "English", "targets": []}
        assert all(entry["targets"] == ["en"] for entry in listed[1:]) and len(listed) == 5
        assert only_english.post("/translate", json={"q": NIHAO, "source": "zh", "target": "en"}).json() == {
            "translatedText": fake_english(NIHAO)
        }
        settings = only_english.get("/frontend/settings").json()
        assert settings["language"]["source"]["code"] == "zh" and settings["language"]["target"]["code"] == "en"


def test_frontend_settings_and_readiness_report_every_model(pair):
    client, _, _ = pair
    enzh = client.get("/frontend/settings").json()["enzh"]
    assert enzh["models"] == [
        {"name": "fake (fp32)", "directions": ["en-zh"], "demo": False},
        {"name": "fake-zh-en (fp32)", "directions": ["zh-en"], "demo": False},
    ]
    assert enzh["directions"] == ["en-zh", "zh-en"] and enzh["model"] == "fake (fp32), fake-zh-en (fp32)"
    ready = client.get("/readyz").json()
    assert ready == {
        "status": "ready",
        "model": "fake (fp32), fake-zh-en (fp32)",
        "models": ["fake (fp32)", "fake-zh-en (fp32)"],
    }


def test_v1_takes_source_and_target(pair):
    client, _, _ = pair
    auto = client.post("/v1/translate", json={"text": [HELLO, NIHAO], "target": "en"}).json()
    assert auto["translations"] == [HELLO, fake_english(NIHAO)]
    assert auto["source"] == "auto" and auto["target"] == "en" and auto["model"] == "fake-zh-en (fp32)"
    both = client.post("/v1/translate", json={"text": [HELLO, NIHAO]}).json()  # default target: zh-Hans
    assert both["translations"] == [fake_translation(HELLO), NIHAO] and both["model"] == "fake (fp32)"
    explicit = client.post("/v1/translate", json={"text": NIHAO, "source": "zh", "target": "en", "beam_size": 1})
    assert explicit.json()["translations"] == [fake_english(NIHAO)] and explicit.json()["beam_size"] == 1
    bad = client.post("/v1/translate", json={"text": HELLO, "source": "fr"})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
    body = client.get("/openapi.json").json()["paths"]["/v1/translate"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]["properties"]
    assert schema["source"]["default"] == "auto" and "en" in schema["target"]["enum"]


def test_files_are_translated_by_the_model_of_their_direction(pair):
    client, _, _ = pair
    text = f"{NIHAO}\n\n{NIHAO}\n"
    for fields in ({"source": "zh", "target": "en"}, {"source": "auto", "target": "en"}):
        answer = client.post("/translate_file", files={"file": ("notes.txt", text.encode())}, data=fields)
        url = answer.json()["translatedFileUrl"]
        assert urlsplit(url).path.endswith("/notes.txt")
        assert client.get(url).text == f"{fake_english(NIHAO)}\n\n{fake_english(NIHAO)}\n", fields
    english = client.post("/translate_file", files={"file": ("a.txt", f"{HELLO}\n".encode())}, data={"target": "zh"})
    assert client.get(english.json()["translatedFileUrl"]).text == f"{fake_translation(HELLO)}\n"
    kept = client.post("/translate_file", files={"file": ("b.txt", f"{HELLO}\n".encode())}, data={"target": "en"})
    assert client.get(kept.json()["translatedFileUrl"]).text == f"{HELLO}\n"  # already English


def test_ready_only_when_every_model_is_loaded(monkeypatch):
    release = threading.Event()
    stand_ins = {"en-zh": FakeTranslator(), "zh-en": FakeZhEnTranslator()}

    def load(self, directory):
        if directory == "zh-en":
            release.wait(30)
        return stand_ins[directory]

    monkeypatch.setattr(Service, "_load", load)
    with in_process(ServeOptions(model_dirs=("en-zh", "zh-en")), wait_ready=False) as client:
        time.sleep(0.2)
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "loading"
        assert client.post("/translate", json={"q": HELLO, "target": "zh"}).status_code == 503
        release.set()
        deadline = time.monotonic() + 30
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert client.post("/translate", json={"q": NIHAO, "source": "zh", "target": "en"}).json() == {
            "translatedText": fake_english(NIHAO)
        }


def test_one_model_failing_to_load_fails_the_server(tmp_path, monkeypatch):
    real_load = Service._load

    def load(self, directory):
        return FakeTranslator() if directory == "en-zh" else real_load(self, directory)

    monkeypatch.setattr(Service, "_load", load)
    with in_process(ServeOptions(model_dirs=("en-zh", str(tmp_path / "missing"))), wait_ready=False) as client:
        deadline = time.monotonic() + 30
        while (ready := client.get("/readyz")).json()["status"] == "loading":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert ready.status_code == 503 and ready.json()["status"] == "load_failed"
        assert client.get("/livez").status_code == 503


def test_a_dead_worker_of_one_model_flips_readiness():
    with in_process(ServeOptions(), [FakeTranslator(), FakeZhEnTranslator()]) as client:

        def engine(sources, beam, target=None):
            raise SystemExit("the worker dies")

        client.app.state.service.models[1].scheduler.engine = engine
        dead = client.post("/translate", json={"q": NIHAO, "source": "zh", "target": "en"})
        assert dead.status_code == 503
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "worker_dead"
        assert "fake-zh-en" in ready.json()["detail"]
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "enzh_worker_alive", direction="zh-en") == 0
        assert metric_value(metrics, "enzh_worker_alive", direction="en-zh") == 1
