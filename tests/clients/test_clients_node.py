"""The npm ``libretranslate`` package (1.0.1, pinned in tests/clients/package-lock.json) run by node against a real
server. It asks /languages first (with a JSON content type and no body) and checks ``source`` and ``target``
against the listed codes, then posts JSON with ``apiKey``; it reads only ``translatedText``.

scripts/ci_deps.sh installs node, npm and the package (``npm ci`` here); without them the test is skipped,
except in CI, where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from client_harness import embedded_pair, running, shared_translator

from enzh.serve.keys import KeyStore
from enzh.serve.options import ServeOptions

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "node_modules" / "libretranslate"
NODE = shutil.which("node") or shutil.which("nodejs")

pytestmark = pytest.mark.skipif(
    (NODE is None or not PACKAGE.is_dir()) and not os.environ.get("CI"),
    reason="node or the npm libretranslate package is missing (scripts/ci_deps.sh installs them)",
)

SCRIPT = """
const { translate } = require("libretranslate");
(async () => {
  const calls = JSON.parse(process.argv[1]);
  const answers = [];
  for (const call of calls) {
    try {
      answers.push({ ok: await translate(call) });
    } catch (err) {
      answers.push({ error: String(err.message) });
    }
  }
  process.stdout.write(JSON.stringify(answers));
})();
"""


def run_node(calls: list[dict]) -> list[dict]:
    assert NODE is not None, "node is not installed: run scripts/ci_deps.sh"
    assert PACKAGE.is_dir(), "the npm libretranslate package is not installed: run scripts/ci_deps.sh"
    done = subprocess.run(
        [NODE, "-e", SCRIPT, json.dumps(calls)], cwd=HERE, capture_output=True, text=True, timeout=120, check=True
    )
    answers: list[dict] = json.loads(done.stdout)
    return answers


def test_npm_client_translate(demo_dir):
    demo = shared_translator(demo_dir)
    weather, station = "The weather is nice today.", "Where is the train station?"
    with running(ServeOptions(), demo) as server:
        calls = [
            {"query": weather, "source": "en", "target": "zh", "apiurl": server.url},
            {"query": station, "source": "auto", "target": "zh-Hans", "apiurl": server.url, "apiKey": "k"},
            {"query": weather, "source": "en", "target": "zt", "format": "text", "apiurl": server.url},
            {"query": "<p>Where is the train station?</p>", "target": "zh", "format": "html", "apiurl": server.url},
            {"query": weather, "source": "en", "target": "es", "apiurl": server.url},  # not listed: the client refuses
        ]
        answers = run_node(calls)
    assert answers == [
        {"ok": demo.translate([weather])[0]},
        {"ok": demo.translate([station])[0]},
        {"ok": demo.translate([weather], target="zh-Hant")[0]},
        {"ok": f"<p>{demo.translate([station])[0]}</p>"},
        {"error": "This language was not found/does not exist."},
    ]


def test_npm_client_with_keys(demo_dir, tmp_path):
    demo = shared_translator(demo_dir)
    path = tmp_path / "keys.db"
    with KeyStore(path, create=True) as store:
        key = store.add(name="npm")
    weather = "The weather is nice today."
    with running(ServeOptions(api_keys=str(path)), demo) as server:
        call = {"query": weather, "source": "en", "target": "zh", "apiurl": server.url}
        answers = run_node([{**call, "apiKey": key}, call])
    # The client sends its key as apiKey; without one it is refused (403) and, reading no status, gets undefined.
    assert answers == [{"ok": demo.translate([weather])[0]}, {}]


def test_npm_client_both_directions_against_one_server():
    """With the embedded pair the client finds Chinese sources in /languages and translates zh->en as well."""
    en_zh, zh_en = embedded_pair()
    weather, chinese = "The weather is nice today.", "今天天气很好。"
    with running(ServeOptions(), [en_zh, zh_en]) as server:
        calls = [
            {"query": chinese, "source": "zh", "target": "en", "apiurl": server.url},
            {"query": weather, "source": "en", "target": "zh", "apiurl": server.url},
            {"query": chinese, "source": "zh-Hans", "target": "en", "apiurl": server.url},
            {"query": chinese, "source": "auto", "target": "en", "apiurl": server.url},
        ]
        answers = run_node(calls)
    english = zh_en.translate([chinese])[0]
    assert answers == [{"ok": english}, {"ok": en_zh.translate([weather])[0]}, {"ok": english}, {"ok": english}]
