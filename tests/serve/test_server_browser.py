"""The web page in a real headless browser: Debian's chromium driven by Playwright (no browser download)."""

from __future__ import annotations

import os
import shutil

import pytest
from playwright import sync_api
from server_harness import running, shared_translator

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

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
    reason="chromium is not installed (scripts/ci_deps.sh installs it; CI fails instead of skipping)",
)


@pytest.fixture(scope="module")
def demo_translator(demo_dir):
    return shared_translator(demo_dir)


def test_type_click_and_read_the_translation(demo_translator):
    with running(ServeOptions(), demo_translator) as srv, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(srv.url + "/")
            assert page.title().startswith("enzh")

            page.fill(
                "#source", "The weather is nice today. I would like a cup of coffee.\n\nWhere is the train station?"
            )
            page.click("#translate")
            result = page.locator("#result")
            sync_api.expect(result).to_have_text("今天天气很好。我想要一杯咖啡。\n\n车站在哪里？", timeout=30_000)
            status = page.locator("#status").inner_text()
            assert "3 sentence(s)" in status and "ms" in status and "inference" in status

            page.select_option("#target", "zh-Hant")
            page.fill("#source", "The meeting has been postponed.")
            page.click("#translate")
            expected = demo_translator.translate(["The meeting has been postponed."], target="zh-Hant")[0]
            sync_api.expect(result).to_have_text(expected, timeout=30_000)

            page.fill("#source", "x" * 20_000)  # over max_chars_per_text: the page shows the error
            page.click("#translate")
            sync_api.expect(page.locator("#status")).to_contain_text("text_too_long", timeout=30_000)
            assert errors == []
        finally:
            browser.close()
