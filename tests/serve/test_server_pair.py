"""The embedded pair in one server (English->Chinese ``assets/demo`` and Chinese->English ``assets/demo-zh-en``):
the server's default with no model given, both directions through the LibreTranslate API and /v1, source=auto
over a mixed list, HTML, alternatives and files, each answer equal to its model's own translation."""

from __future__ import annotations

import httpx
import pytest
from server_harness import embedded_pair, in_process, metric_value, running

from enzh.serve.options import ServeOptions

WEATHER_ZH = "今天天气很好。"
WEATHER_EN = "The weather is nice today."
COFFEE_ZH = "我想要一杯咖啡。"


@pytest.fixture(scope="module")
def pair():
    return embedded_pair()


@pytest.fixture(scope="module")
def client(pair):
    with in_process(ServeOptions(), pair) as c:
        yield c


def test_chinese_to_english(client, pair):
    _, zh_en = pair
    answer = client.post("/translate", json={"q": WEATHER_ZH, "source": "zh", "target": "en"})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"translatedText": "The weather is nice today."}
    assert answer.json()["translatedText"] == zh_en.translate([WEATHER_ZH])[0]
    two = client.post(
        "/translate", data={"q": f"{WEATHER_ZH}{COFFEE_ZH}\n{WEATHER_ZH}", "source": "zh", "target": "en"}
    )
    assert two.json() == {"translatedText": zh_en.translate([f"{WEATHER_ZH}{COFFEE_ZH}\n{WEATHER_ZH}"])[0]}


def test_english_to_chinese_as_before(client, pair):
    en_zh, _ = pair
    for target, variant in (("zh", "zh-Hans"), ("zt", "zh-Hant")):
        answer = client.post("/translate", json={"q": WEATHER_EN, "source": "en", "target": target}).json()
        assert answer == {"translatedText": en_zh.translate([WEATHER_EN], target=variant)[0]}


def test_a_mixed_list_with_source_auto(client, pair):
    en_zh, zh_en = pair
    q = [WEATHER_EN, WEATHER_ZH, COFFEE_ZH, "Where is the train station?", "2024"]
    into_english = client.post("/translate", json={"q": q, "source": "auto", "target": "en"}).json()
    assert into_english["translatedText"] == [q[0], *zh_en.translate(q[1:3]), q[3], q[4]]
    assert [d["language"] for d in into_english["detectedLanguage"]] == ["en", "zh", "zh", "en", "en"]
    into_chinese = client.post("/translate", json={"q": q, "source": "auto", "target": "zh"}).json()
    assert into_chinese["translatedText"] == [en_zh.translate([q[0]])[0], q[1], q[2], en_zh.translate([q[3]])[0], q[4]]
    v1 = client.post("/v1/translate", json={"text": q, "target": "en"}).json()
    assert v1["translations"] == into_english["translatedText"] and v1["model"] == "enzh-demo-zh-en (fp32)"


def test_html_and_alternatives_from_chinese(client, pair):
    _, zh_en = pair
    html = client.post(
        "/translate", json={"q": f"<p>{WEATHER_ZH}</p>", "source": "zh", "target": "en", "format": "html"}
    )
    assert html.json() == {"translatedText": f"<p>{zh_en.translate([WEATHER_ZH])[0]}</p>"}
    body = {"q": WEATHER_ZH, "source": "zh", "target": "en", "alternatives": 2}
    answer = client.post("/translate", json=body).json()
    assert answer["translatedText"] == zh_en.translate([WEATHER_ZH])[0]  # the best is the plain translation
    assert len(answer["alternatives"]) <= 2 and answer["translatedText"] not in answer["alternatives"]


def test_a_chinese_file_into_english(client, pair):
    _, zh_en = pair
    text = f"{WEATHER_ZH}\n\n{COFFEE_ZH}\n"
    for fields in ({"source": "zh", "target": "en"}, {"source": "auto", "target": "en"}):
        answer = client.post("/translate_file", files={"file": ("notes.txt", text.encode())}, data=fields)
        assert answer.status_code == 200, answer.text
        translated = client.get(answer.json()["translatedFileUrl"]).text
        assert translated == "\n\n".join(zh_en.translate([WEATHER_ZH, COFFEE_ZH])) + "\n", fields


def test_languages_settings_and_metrics_of_the_pair(client):
    listed = {entry["code"]: entry["targets"] for entry in client.get("/languages").json()}
    assert listed["en"][:3] == ["zh", "zh-Hans", "zh-CN"] and "zt" in listed["en"]
    assert listed["zh"] == listed["zh-Hans"] == listed["zt"] == listed["zh-Hant"] == ["en"]
    enzh = client.get("/frontend/settings").json()["enzh"]
    assert [m["name"] for m in enzh["models"]] == ["enzh-demo (fp32)", "enzh-demo-zh-en (fp32)"]
    assert enzh["demo"] is True and enzh["directions"] == ["en-zh", "zh-en"]
    metrics = client.get("/metrics").text
    assert metric_value(metrics, "enzh_batch_size_count", model="enzh-demo-zh-en (fp32)", direction="zh-en") >= 1


def test_the_server_loads_the_embedded_pair_by_default(pair):
    with in_process(ServeOptions(warmup=False)) as loaded:
        assert loaded.get("/readyz").json()["models"] == ["enzh-demo (fp32)", "enzh-demo-zh-en (fp32)"]
        answer = loaded.post("/translate", json={"q": WEATHER_ZH, "source": "auto", "target": "en"}).json()
        assert answer["translatedText"] == pair[1].translate([WEATHER_ZH])[0]


def test_the_load_benchmark_sends_both_directions(pair):
    """``server_bench --mix both``: English and Chinese requests against one server, every one answered, and each
    Chinese request comes back in English."""
    from enzh.tools.server_bench import measure, single_latencies, workload

    requests = workload(mix="both")
    chinese = [r for r in requests if r.target == "en"]
    assert 150 < len(chinese) < 350 and all(not r.text.isascii() for r in chinese)
    with running(ServeOptions(), pair) as server:
        answer = httpx.post(f"{server.url}/v1/translate", json={"text": chinese[0].text, "target": "en"}).json()
        assert answer["translations"][0].isascii()
        single = single_latencies(server.url, 1, n=3, mix="both")
        result = measure(server.url, "dynamic batching", 4, 1.0, 1, single, "both")
        assert result.requests > 0 and result.errors == 0
