"""The web page in a real headless browser: Debian's chromium driven by Playwright (no browser download).

One real server with the demo model serves every test; each test gets a fresh browser context. A few error
paths the real server cannot be made to take on demand (429, a dropped connection, a key required) are
produced by Playwright's request routing; everything else goes to the server.

``ENZH_SCREENSHOTS=docs/images`` also saves the page's screenshots (desktop and narrow) into that folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import httpx
import pytest
from playwright import sync_api
from playwright.sync_api import expect
from server_harness import embedded_pair, running

from enzh.serve.keys import KeyStore
from enzh.serve.options import ServeOptions

CHROMIUM = os.environ.get("ENZH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
TIMEOUT_MS = 20_000
SCREENSHOTS = os.environ.get("ENZH_SCREENSHOTS")
WEATHER = "The weather is nice today."

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
    reason="chromium is not installed (scripts/ci_deps.sh installs it; CI fails instead of skipping)",
)


@pytest.fixture(scope="module")
def server(demo_translator):
    with running(ServeOptions(), demo_translator) as srv:
        yield srv


@pytest.fixture(scope="module")
def settings(server):
    response = httpx.get(server.url + "/frontend/settings")
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def context(browser, server):
    context = browser.new_context(
        base_url=server.url,
        locale="en-US",
        viewport={"width": 1280, "height": 900},
        permissions=["clipboard-read", "clipboard-write"],
        accept_downloads=True,
    )
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


def new_page(context) -> tuple[sync_api.Page, list[str]]:
    """A page of ``context``, and the uncaught exceptions its script raises (none, the tests check)."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


@pytest.fixture
def page(context):
    page, errors = new_page(context)
    yield page
    assert errors == [], errors


def translate_requests(page) -> list[dict]:
    """Record the JSON bodies the page POSTs to /translate, in order."""
    sent: list[dict] = []

    def record(request) -> None:
        if request.method == "POST" and request.url.endswith("/translate"):
            sent.append(request.post_data_json)

    page.on("request", record)
    return sent


def test_type_and_the_translation_appears(page, settings):
    sent = translate_requests(page)
    page.goto("/")
    assert page.title().startswith("enzh")
    source = page.get_by_label("English", exact=True)  # the textarea has its label
    source.press_sequentially(WEATHER, delay=15)  # translate as you type: no click
    result = page.locator("#result")
    expect(result).to_have_text("今天天气很好。")
    assert result.get_attribute("aria-live") == "polite"
    expect(page.locator("#count")).to_have_text(f"{len(WEATHER)} / {settings['charLimit']:,} characters")
    # debounced: typing 26 characters sent one request (or two at most on a slow machine), the last with all of it
    assert 1 <= len(sent) <= 2 and sent[-1]["q"] == WEATHER and sent[-1]["target"] == "zh-Hans", sent

    source.fill("The weather is nice today. I would like a cup of coffee.\n\nWhere is the train station?")
    page.get_by_role("button", name="Translate", exact=True).click()
    expect(result).to_have_text("今天天气很好。我想要一杯咖啡。\n\n车站在哪里？")

    notice = page.locator("#demo-notice")  # the demo model is loaded: the page says so, and how to do better
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(settings["enzh"]["demoNotice"])
    expect(notice).to_contain_text("enzh export Helsinki-NLP/opus-mt-en-zh DIR && enzh serve --model DIR")
    expect(page.locator("#key-row")).to_be_hidden()  # no keys on this server

    if SCREENSHOTS:
        page.locator("#alternatives-button").click()
        expect(page.locator("#alternatives button").first).to_be_visible()
        save_screenshots(page, Path(SCREENSHOTS))


def save_screenshots(page, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / "page-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(folder / "page-narrow.png"), full_page=True)


def test_narrow_screen_stacks_the_panes(page):
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto("/")
    page.locator("#source").fill(WEATHER)
    expect(page.locator("#result")).to_have_text("今天天气很好。")
    source, result = page.locator("#source").bounding_box(), page.locator("#result").bounding_box()
    assert result["y"] >= source["y"] + source["height"]  # one column: the translation under the text
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling


def test_traditional_and_copy(page, demo_translator):
    sent = translate_requests(page)
    page.goto("/")
    page.locator("#source").fill("The meeting has been postponed.")
    result = page.locator("#result")
    expect(result).to_have_text("会议已被推迟。")
    page.get_by_label("Traditional").check()  # switching the script translates again at once
    expected = demo_translator.translate(["The meeting has been postponed."], target="zh-Hant")[0]
    expect(result).to_have_attribute("lang", "zh-Hant")
    expect(result).to_have_text(expected)
    assert sent[-1]["target"] == "zh-Hant"

    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == expected

    page.reload()  # the choice of script is remembered
    expect(page.get_by_label("Traditional")).to_be_checked()


def test_copy_falls_back_without_the_clipboard_api(context):
    context.add_init_script(
        "window.realClipboard = navigator.clipboard;"
        "Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});"
    )
    page, errors = new_page(context)
    page.goto("/")
    page.locator("#source").fill(WEATHER)
    expect(page.locator("#result")).to_have_text("今天天气很好。")
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("window.realClipboard.readText()") == "今天天气很好。"
    assert errors == []


def test_alternatives_on_click(page, demo_translator):
    sent = translate_requests(page)
    page.goto("/")
    page.locator("#source").fill(WEATHER)
    result = page.locator("#result")
    expect(result).to_have_text("今天天气很好。")
    expect(page.locator("#alternatives-box")).to_be_hidden()

    button = page.get_by_role("button", name="Alternatives")
    button.click()
    options = page.locator("#alternatives button")
    expect(options.first).to_have_text("今天天气很好。")  # the best one first, marked as the one in use
    expect(options.first).to_have_attribute("aria-pressed", "true")
    assert sent[-1]["alternatives"] == 3 and sent[-1]["q"] == WEATHER
    texts = options.all_inner_texts()
    # beam search's n-best at the model's beam size (4): the translation and its 3 alternatives, best first
    n_best = demo_translator.translate_detailed([WEATHER], alternatives=4)[0].alternatives
    assert texts == list(dict.fromkeys(a.text for a in n_best)) and len(texts) >= 2, texts
    assert button.get_attribute("aria-expanded") == "true"

    options.nth(1).click()  # use another one: it replaces the translation, and Copy copies it
    expect(result).to_have_text(texts[1])
    expect(options.nth(1)).to_have_attribute("aria-pressed", "true")
    page.get_by_role("button", name="Copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == texts[1]

    page.locator("#source").fill("Where is the school?")  # a new text: the alternatives go away
    expect(result).to_have_text("学校在哪里？")
    expect(page.locator("#alternatives-box")).to_be_hidden()


def test_file_upload_and_download(page, tmp_path):
    page.goto("/")
    text = "Where is the school?\nThe weather is nice today.\n"
    page.locator("#file").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": text.encode()}]
    )
    link = page.locator("#download")
    expect(link).to_be_visible()
    expect(page.locator("#file-state")).to_have_text("Done.")
    with page.expect_download() as info:
        link.click()
    download = info.value
    assert Path(download.path()).read_text(encoding="utf-8") == "学校在哪里？\n今天天气很好。\n"
    assert download.suggested_filename.endswith(".txt")

    # Drop a file on the zone (a real drop event with a DataTransfer holding the file).
    page.evaluate(
        """() => {
            const data = new DataTransfer();
            data.items.add(new File(["The meeting has been postponed.\\n"], "dropped.md", {type: "text/markdown"}));
            document.getElementById("drop").dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true}));
        }"""
    )
    expect(page.locator("#file-name")).to_contain_text("dropped.md")
    expect(page.locator("#file-state")).to_have_text("Done.")
    with page.expect_download() as info:
        link.click()
    assert Path(info.value.path()).read_text(encoding="utf-8") == "会议已被推迟。\n"

    page.locator("#file").set_input_files(
        files=[{"name": "scan.pdf", "mimeType": "application/pdf", "buffer": b"%PDF"}]
    )
    expect(page.locator("#file-error")).to_contain_text("scan.pdf: .pdf files cannot be translated")
    expect(link).to_be_hidden()


def test_over_the_char_limit_is_refused_in_the_page(page, settings):
    sent = translate_requests(page)
    page.goto("/")
    limit = settings["charLimit"]
    page.locator("#source").fill("x" * (limit + 1))
    expect(page.locator("#error")).to_have_text(
        f"The text is {limit + 1:,} characters long; this server translates at most {limit:,} characters at a "
        "time. Shorten it to translate."
    )
    expect(page.locator("#count")).to_have_class("count over")
    page.get_by_role("button", name="Translate", exact=True).click()
    assert sent == []  # nothing was sent
    page.locator("#source").fill(WEATHER)  # back under the limit: the error goes, the translation comes
    expect(page.locator("#result")).to_have_text("今天天气很好。")
    expect(page.locator("#error")).to_have_text("")


def test_server_errors_are_shown(page, server, settings):
    limit = settings["charLimit"]
    # A page that believes in a larger limit sends the text, and shows the server's own 400 message.
    page.route("**/frontend/settings", lambda route: route.fulfill(json={**settings, "charLimit": 10 * limit}))
    page.goto("/")
    text = "x" * (limit + 1)
    answer = httpx.post(server.url + "/translate", json={"q": text, "source": "en", "target": "zh-Hans"})
    assert answer.status_code == 400, answer.text
    page.locator("#source").fill(text)
    expect(page.locator("#error")).to_contain_text(f"Error 400: {answer.json()['error']}")

    page.route("**/translate", lambda route: route.abort("connectionrefused"))
    page.get_by_role("button", name="Translate", exact=True).click()
    expect(page.locator("#error")).to_contain_text("Cannot reach the server")


def test_a_model_without_traditional_nor_alternatives(page, settings):
    enzh = {**settings["enzh"], "targets": ["zh-Hans"], "maxAlternatives": 0}
    page.route("**/frontend/settings", lambda route: route.fulfill(json={**settings, "enzh": enzh}))
    page.goto("/")
    expect(page.get_by_label("Traditional")).to_be_disabled()
    expect(page.get_by_label("Simplified")).to_be_checked()
    page.locator("#source").fill(WEATHER)
    expect(page.locator("#result")).to_have_text("今天天气很好。")
    expect(page.get_by_role("button", name="Alternatives")).to_be_hidden()


def test_keys_403_429_and_the_key_field(browser, demo_translator, tmp_path):
    """A server with --api-keys and a key limited to 3 requests a minute: the page shows the key field, the
    403 without a key, works with the key (text and file), then shows the 429 with its Retry-After."""
    store = KeyStore(tmp_path / "keys.db", create=True)
    key = store.add(name="page", req_limit=3)
    store.close()
    with running(ServeOptions(api_keys=str(tmp_path / "keys.db")), demo_translator) as srv:
        context = browser.new_context(base_url=srv.url, locale="en-US", accept_downloads=True)
        context.set_default_timeout(TIMEOUT_MS)
        page, errors = new_page(context)
        sent = translate_requests(page)
        page.goto("/")
        field = page.get_by_label("API key")
        expect(field).to_be_visible()  # keyRequired is true
        page.locator("#source").fill(WEATHER)
        error = page.locator("#error")
        refused = httpx.post(srv.url + "/translate", json={"q": WEATHER, "source": "en", "target": "zh-Hans"})
        assert refused.status_code == 403, refused.text
        expect(error).to_have_text(f"Access refused: {refused.json()['error'].rstrip('.')}. Check the API key.")
        assert "api_key" not in sent[-1]

        field.fill(key)
        page.get_by_role("button", name="Translate", exact=True).click()  # 1st request with the key
        expect(page.locator("#result")).to_have_text("今天天气很好。")
        expect(error).to_have_text("")
        assert sent[-1]["api_key"] == key

        page.locator("#file").set_input_files(  # 2nd
            files=[{"name": "a.txt", "mimeType": "text/plain", "buffer": b"Where is the school?\n"}]
        )
        expect(page.locator("#file-state")).to_have_text("Done.")
        with page.expect_download() as info:
            page.locator("#download").click()
        assert Path(info.value.path()).read_text(encoding="utf-8") == "学校在哪里？\n"

        page.get_by_role("button", name="Translate", exact=True).click()  # 3rd: still fine
        expect(page.locator("#timing")).to_contain_text("ms")
        page.get_by_role("button", name="Translate", exact=True).click()  # 4th: over the key's limit
        expect(error).to_have_text(re.compile(r"^Too many requests: .+\. Try again in \d+ seconds?\.$"))

        page.reload()  # the key is kept in localStorage
        expect(page.get_by_label("API key")).to_have_value(key)
        assert errors == []
        context.close()


def test_switch_direction_swap_and_translate_from_chinese(browser):
    """A server with the embedded pair: From and To are filled from /languages, Chinese->English is chosen and
    translates, the swap turns the direction (and the translation into the text), and Detect language routes the
    text by itself and lets the swap take the detected language."""
    en_zh, zh_en = embedded_pair()
    chinese = "今天天气很好。"
    english = zh_en.translate([chinese])[0]
    with running(ServeOptions(), [en_zh, zh_en]) as srv:
        context = browser.new_context(base_url=srv.url, locale="en-US")
        context.set_default_timeout(TIMEOUT_MS)
        page, errors = new_page(context)
        sent = translate_requests(page)
        page.goto("/")
        expect(page.locator("#heading")).to_have_text("English ↔ Chinese")
        source_language, target_language = page.get_by_label("From", exact=True), page.get_by_label("To", exact=True)
        expect(source_language.locator("option")).to_have_text(["Detect language", "English", "Chinese"])
        expect(source_language).to_have_value("en")
        expect(target_language).to_have_value("zh")
        expect(page.locator("#scripts")).to_be_visible()

        source_language.select_option("zh")  # Chinese into English: To follows, the script choice goes away
        expect(target_language).to_have_value("en")
        expect(page.locator("#scripts")).to_be_hidden()
        page.get_by_label("Chinese", exact=True).fill(chinese)  # the text's label names its language
        result = page.locator("#result")
        expect(result).to_have_text(english)
        expect(result).to_have_attribute("lang", "en")
        assert sent[-1]["source"] == "zh" and sent[-1]["target"] == "en" and sent[-1]["q"] == chinese

        page.get_by_role("button", name="Swap languages").click()  # English into Chinese, the translation as text
        expect(source_language).to_have_value("en")
        expect(target_language).to_have_value("zh")
        expect(page.locator("#source")).to_have_value(english)
        expect(result).to_have_text(en_zh.translate([english])[0])
        assert sent[-1]["source"] == "en" and sent[-1]["target"] == "zh-Hans"

        source_language.select_option("auto")  # detected by the server, routed to the Chinese->English model
        target_language.select_option("en")
        page.locator("#source").fill(chinese)
        expect(result).to_have_text(english)
        expect(page.locator("#detected")).to_have_text("Detected: Chinese")
        assert sent[-1]["source"] == "auto"
        page.get_by_role("button", name="Swap languages").click()
        expect(source_language).to_have_value("en")
        expect(target_language).to_have_value("zh")

        page.reload()  # the direction is remembered
        expect(source_language).to_have_value("en")
        expect(target_language).to_have_value("zh")
        assert errors == []
        context.close()


def test_settings_and_page_assets_are_served(server):
    page = httpx.get(server.url + "/")
    assert page.status_code == 200 and "static/app.js" in page.text and "static/style.css" in page.text
    for name, kind in (
        ("app.js", "javascript"),
        ("api.js", "javascript"),
        ("files.js", "javascript"),
        ("style.css", "text/css"),
    ):
        asset = httpx.get(f"{server.url}/static/{name}")
        assert asset.status_code == 200 and kind in asset.headers["content-type"], (name, asset.headers)
    assert httpx.get(server.url + "/static/nothing.js").status_code == 404
    settings = json.loads(httpx.get(server.url + "/frontend/settings").text)
    assert settings["enzh"]["demo"] is True and settings["charLimit"] > 0 and settings["keyRequired"] is False


def test_low_confidence_mark_with_a_tooltip(page, demo_translator):
    """Out-of-domain text gets the low-confidence mark, its score and flags in the tooltip; in-domain text none."""
    sent = translate_requests(page)
    page.goto("/")
    mark = page.locator("#confidence")
    outside = "Hello world"
    found = demo_translator.translate_detailed([outside])[0]
    assert found.confidence is not None and found.confidence.low  # the premise: the server flags it
    page.locator("#source").fill(outside)
    expect(page.locator("#result")).to_have_text(found.text)
    expect(mark).to_be_visible()
    expect(mark).to_have_attribute("title", re.compile(rf"Score {found.confidence.score:.2f} \(mean token"))
    expect(mark).to_have_attribute("title", re.compile("the model was unsure"))
    assert sent[-1]["scores"] is True and sent[-1]["q"] == outside
    page.locator("#source").fill(WEATHER)
    expect(page.locator("#result")).to_have_text("今天天气很好。")
    expect(mark).to_be_hidden()
