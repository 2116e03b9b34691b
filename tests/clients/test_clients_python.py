"""Real LibreTranslate clients against a real server (uvicorn on a socket, the demo model): libretranslatepy
itself, and the requests Mastodon and Weblate send, checking exactly the fields those clients read."""

from __future__ import annotations

import urllib.error

import httpx
import pytest
from client_harness import embedded_pair, running
from libretranslatepy import LibreTranslateAPI

from enzh.serve.keys import KeyStore
from enzh.serve.options import ServeOptions

WEATHER = "The weather is nice today."
STATION = "Where is the train station?"


@pytest.fixture(scope="module")
def demo(demo_translator):
    return demo_translator


@pytest.fixture(scope="module")
def server(demo):
    with running(ServeOptions(), demo) as srv:
        yield srv


# -- libretranslatepy 2.1.4 (form bodies, a form body even on GET /languages) --------------------------------


def test_libretranslatepy_translate_detect_languages(server, demo):
    for api in (LibreTranslateAPI(server.url), LibreTranslateAPI(server.url + "/", api_key="some-key")):
        assert api.translate(WEATHER, source="en", target="zh") == demo.translate([WEATHER])[0]
        assert (
            api.translate(f"{WEATHER}\n{STATION}", "en", "zh-Hant")
            == demo.translate([f"{WEATHER}\n{STATION}"], target="zh-Hant")[0]
        )
        detected = api.detect(WEATHER)
        assert detected[0] == {"confidence": 100.0, "language": "en"}
        languages = api.languages()
        assert {"en", "zh"} <= {language["code"] for language in languages}


def test_libretranslatepy_both_directions_against_one_server():
    """The embedded pair behind one server: libretranslatepy translates zh->en and en->zh, lists both
    directions, and a Mastodon-style source=auto list goes to both models."""
    en_zh, zh_en = embedded_pair()
    chinese = "今天天气很好。"
    with running(ServeOptions(), [en_zh, zh_en]) as pair_server:
        api = LibreTranslateAPI(pair_server.url)
        assert api.translate(chinese, source="zh", target="en") == zh_en.translate([chinese])[0]
        assert api.translate(WEATHER, source="en", target="zh") == en_zh.translate([WEATHER])[0]
        assert api.translate(chinese, source="auto", target="en") == zh_en.translate([chinese])[0]
        listed = {language["code"]: language["targets"] for language in api.languages()}
        assert "zh" in listed["en"] and listed["zh"] == ["en"]
        body = {"q": [f"<p>{chinese}</p>", f"<p>{WEATHER}</p>"], "source": "auto", "target": "en", "format": "html"}
        answer = httpx.post(f"{pair_server.url}/translate", json=body, timeout=60).json()
        assert answer["translatedText"] == [f"<p>{zh_en.translate([chinese])[0]}</p>", f"<p>{WEATHER}</p>"]
        assert [d["language"] for d in answer["detectedLanguage"]] == ["zh", "en"]


def test_libretranslatepy_sees_errors_as_http_errors(server):
    api = LibreTranslateAPI(server.url)
    with pytest.raises(urllib.error.HTTPError) as caught:
        api.translate(WEATHER, source="en", target="es")
    assert caught.value.code == 400
    assert caught.value.read() == b'{"error":"es is not supported"}'


def test_clients_with_keys(tmp_path, demo):
    path = tmp_path / "keys.db"
    with KeyStore(path, create=True) as store:
        key = store.add(name="clients")
    with running(ServeOptions(api_keys=str(path)), demo) as server:
        assert LibreTranslateAPI(server.url, api_key=key).translate(WEATHER, "en", "zh") == demo.translate([WEATHER])[0]
        assert LibreTranslateAPI(server.url).languages()  # needs no key
        for api in (LibreTranslateAPI(server.url), LibreTranslateAPI(server.url, api_key="wrong")):
            with pytest.raises(urllib.error.HTTPError) as caught:
                api.translate(WEATHER, "en", "zh")
            assert caught.value.code == 403
        mastodon = {"q": [f"<p>{WEATHER}</p>"], "source": "auto", "target": "zh", "format": "html"}
        ok = httpx.post(f"{server.url}/translate", json={**mastodon, "api_key": key})
        assert ok.status_code == 200 and ok.json()["translatedText"] == [f"<p>{demo.translate([WEATHER])[0]}</p>"]
        refused = httpx.post(f"{server.url}/translate", json={**mastodon, "api_key": "wrong"})
        assert refused.status_code == 403 and refused.json() == {"error": "Invalid API key"}


# -- Mastodon (TranslationService::LibreTranslate) -------------------------------------------------------------

STATUS = '<p>Where is the <a href="https://example.com/station" rel="nofollow noopener" target="_blank">train station</a>?</p>'  # noqa: E501
POLL = "<p>The weather is nice today.<br>Where is the train station?</p>"


def mastodon_languages(listing: list[dict]) -> dict[str | None, list[str]]:
    """What Mastodon builds from /languages: each code's targets without itself, and None (auto) -> all targets."""
    languages: dict[str | None, list[str]] = {
        item["code"]: [t for t in item["targets"] if t != item["code"]] for item in listing
    }
    languages[None] = sorted({t for item in listing for t in item["targets"]})
    return languages


def test_mastodon(server, demo):
    headers = {"Content-Type": "application/json"}
    listing = httpx.get(f"{server.url}/languages", headers=headers).json()  # a JSON content type, no body
    languages = mastodon_languages(listing)
    for locale in ("zh", "zh-CN", "zh-TW"):  # a status in English (or of unknown language) can be translated
        assert locale in languages["en"] and locale in languages[None]
    chinese = "<p>今天天气很好。</p>"
    for key in (None, "a-key"):  # Mastodon sends "api_key": null when it has none
        body = {"q": [STATUS, POLL, chinese], "source": "auto", "target": "zh-CN", "format": "html", "api_key": key}
        response = httpx.post(f"{server.url}/translate", json=body, headers=headers, timeout=60)
        assert response.status_code == 200 and response.headers["content-type"] == "application/json"
        data = response.json()
        assert isinstance(data, dict) and isinstance(data["translatedText"], list) and len(data["translatedText"]) == 3
        assert demo.translate([STATION])[0] == "车站在哪里？"
        link = '<a href="https://example.com/station" rel="nofollow noopener" target="_blank">'
        assert data["translatedText"][0] == f"<p>{link}车站</a>在哪里？</p>"  # the link on its words (aligner)
        assert data["translatedText"][1] == "<p>{}<br>{}</p>".format(*demo.translate([WEATHER, STATION]))
        assert data["translatedText"][2] == chinese  # already Chinese: unchanged
        assert [data["detectedLanguage"][i]["language"] for i in range(3)] == ["en", "en", "zh"]
    single = httpx.post(f"{server.url}/translate", json={"q": STATUS, "source": "en", "target": "zh", "format": "html"})
    assert isinstance(single.json()["translatedText"], str)  # Mastodon 4.0 sent one string and read one


def test_mastodon_maps_statuses(server):
    """Mastodon reacts to 403 and 429 and treats anything else that is not 2xx as unexpected: bad input is 400."""
    bad = httpx.post(f"{server.url}/translate", json={"q": ["<p>Bonjour à tous, comment ça va?</p>"],
                                                     "source": "auto", "target": "zh", "format": "html"})  # fmt: skip
    assert bad.status_code == 400 and set(bad.json()) == {"error"}


# -- Weblate (weblate/machinery/libretranslate.py) ---------------------------------------------------------------


def test_weblate(server, demo):
    codes = [item["code"] for item in httpx.get(f"{server.url}/languages").json()]
    assert "en" in codes and "zh" in codes  # Weblate sends zh for zh_Hans
    texts = [WEATHER, STATION, "Save %s files"]
    batch = httpx.post(f"{server.url}/translate", json={"api_key": "k", "q": texts, "source": "en", "target": "zh"})
    payload = batch.json()
    assert [payload["translatedText"][i] for i in range(len(texts))] == demo.translate(texts)
    old = httpx.post(f"{server.url}/translate", data={"q": WEATHER, "source": "en", "target": "zh"})  # 2021: a form
    assert old.json()["translatedText"] == demo.translate([WEATHER])[0]
    old.raise_for_status()
