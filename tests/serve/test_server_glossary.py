"""Glossaries over HTTP: /v1's ``glossary`` field, the server's ``--glossary`` files (ServeOptions.glossaries) and
the LibreTranslate extension field ``glossary``, with the embedded pair in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from server_harness import embedded_pair, in_process

from enzh.runtime.errors import OptionsError
from enzh.runtime.router import Translators
from enzh.serve.options import ServeOptions

TERMS = {"Mary": "玛莉", "Beijing": "北京市"}
TEXTS = ["Mary was born in Chengdu in 1985.", "Sarah is from Beijing.", "Where is the school?", "今天天气很好。"]


@pytest.fixture(scope="module")
def pair() -> list[Any]:
    return embedded_pair()


@pytest.fixture(scope="module")
def client(pair):
    with in_process(ServeOptions(), pair) as c:
        yield c


def expected(pair: list[Any], texts: list[str], **kwargs: Any) -> list[str]:
    return Translators(pair).translate(texts, target="zh-Hans", **kwargs)


def test_v1_glossary_equals_the_python_api(client, pair):
    body = client.post("/v1/translate", json={"text": TEXTS, "glossary": TERMS, "scores": True})
    assert body.status_code == 200, body.text
    answer = body.json()
    assert answer["translations"] == expected(pair, TEXTS, glossary=TERMS)
    first, second, third, fourth = answer["translations"]
    assert first.count("玛莉") == 1 and second.count("北京市") == 1
    assert [third, fourth] == expected(pair, TEXTS[2:])  # no term: as without a glossary
    assert len(answer["scores"]) == 4
    # without the field, as before
    plain = client.post("/v1/translate", json={"text": TEXTS}).json()
    assert plain["translations"] == expected(pair, TEXTS)


def test_v1_glossary_with_html_and_beam_size(client, pair):
    html = "<p>Mary was born in Chengdu in 1985.</p><p>Where is the <b>school</b>?</p>"
    answer = client.post("/v1/translate", json={"text": html, "format": "html", "glossary": TERMS}).json()
    assert answer["translations"][0].count("玛莉") == 1 and "玛丽" not in answer["translations"][0]
    answer = client.post("/v1/translate", json={"text": TEXTS[0], "glossary": TERMS, "beam_size": 1}).json()
    assert answer["translations"] == expected(pair, TEXTS[:1], glossary=TERMS, beam_size=1)


@pytest.mark.parametrize(
    ("glossary", "message"),
    [
        ({"Mary": "玛瑪"}, "glossary entry 'Mary': the model's target vocabulary cannot write '玛瑪' (no piece '瑪')"),
        ({"Mary": " 玛莉"}, "glossary entry 'Mary': the target term ' 玛莉' starts or ends with whitespace"),
        ({"Mary": ""}, "glossary"),
        (["Mary"], "glossary"),
    ],
)
def test_v1_bad_glossaries_are_422(client, glossary, message):
    body = client.post("/v1/translate", json={"text": TEXTS[0], "glossary": glossary})
    assert body.status_code == 422, body.text
    assert message in body.json()["error"]["message"]


def test_libretranslate_extension_field(client, pair):
    answer = client.post("/translate", json={"q": TEXTS[:2], "source": "en", "target": "zh", "glossary": TERMS})
    assert answer.status_code == 200, answer.text
    assert answer.json()["translatedText"] == expected(pair, TEXTS[:2], glossary=TERMS)
    form = client.post(
        "/translate", data={"q": TEXTS[1], "source": "en", "target": "zh", "glossary": json.dumps(TERMS)}
    )
    assert form.status_code == 200, form.text
    assert form.json()["translatedText"] == expected(pair, TEXTS[1:2], glossary=TERMS)[0]
    bad = client.post("/translate", data={"q": TEXTS[1], "source": "en", "target": "zh", "glossary": "Beijing"})
    assert bad.status_code == 400
    assert "glossary must be a JSON object of source term to target term" in bad.json()["error"]


def test_server_glossary_files(pair, tmp_path: Path):
    path = tmp_path / "terms.tsv"
    path.write_text("Mary\t玛莉\n", encoding="utf-8")
    with in_process(ServeOptions(glossaries=(str(path),)), pair) as client:
        answer = client.post("/v1/translate", json={"text": TEXTS[:3]}).json()
        assert answer["translations"] == expected(pair, TEXTS[:3], glossary={"Mary": "玛莉"})
        # a request's own entries add to the server's, and win for the same source term
        answer = client.post("/v1/translate", json={"text": TEXTS[:2], "glossary": {"mary": "玛丽亚"}}).json()
        assert answer["translations"] == expected(pair, TEXTS[:2], glossary={"Mary": "玛丽亚"})


def test_glossary_files_count_is_checked():
    with pytest.raises(OptionsError, match=r"give one glossary for every model or one per model \(2\), got 3"):
        ServeOptions(glossaries=("a", "b", "c"))


def test_serve_refuses_a_bad_glossary_file_before_starting(tmp_path: Path):
    path = tmp_path / "bad.tsv"
    path.write_text("Mary\t玛莉\tbold\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "enzh", "serve", "--port", "0", "--glossary", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().endswith(f"{path}:1: unknown flag 'bold'; accepted: case-sensitive, inside-words")
