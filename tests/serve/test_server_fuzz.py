"""Schema-driven fuzzing of the running server from its own /openapi.json (schemathesis + hypothesis).

Positive cases (data that fits the schema) and negative cases (data that does not), strings with NUL bytes
allowed. Every response must be documented in the schema, match its response schema, never be a 5xx, and
negative data must be rejected with a 4xx. Bounded example counts keep this well under a minute.
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from fake_translator import FakeZhEnTranslator
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance
from server_harness import running

from enzh.serve.errors import is_libre_path
from enzh.serve.options import ServeOptions

EXAMPLES = {"POST": 40, "GET": 5}


@pytest.fixture(scope="module", params=["open", "limited"])
def fuzz_server(request, demo_translator):
    # Small limits so generated inputs reach them; beam 1 by default keeps each call fast. Both directions are
    # served (the schema lists every language code; a direction no model serves is a documented 400/422).
    # "limited": per-client request and character limits on, so every body also goes through the limit checks,
    # which read it (and count an uploaded file's text) before the route does; high enough never to be hit.
    limits = {"req_limit": 1_000_000, "char_limit": 1_000_000_000} if request.param == "limited" else {}
    options = ServeOptions(
        max_chars_per_text=400,
        max_texts_per_request=8,
        max_request_chars=3200,
        default_beam_size=1,
        max_beam_size=4,
        **limits,
    )
    with running(options, [demo_translator, FakeZhEnTranslator()]) as srv:
        yield srv


def _operations(url: str):
    raw = httpx.get(f"{url}/openapi.json").json()
    config = schemathesis.Config()
    config.projects.override.generation.update(allow_x00=True, codec="utf-8")
    schema = schemathesis.openapi.from_dict(raw, config=config)
    return [result.ok() for result in schema.get_all_operations()]


def _fuzz(operation, mode, url: str, seen: dict[str, set[int]]) -> None:
    @settings(
        max_examples=EXAMPLES[operation.method.upper()],
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case):
        response = case.call(base_url=url, timeout=60)
        seen.setdefault(operation.label, set()).add(response.status_code)
        assert response.status_code < 500, (case.body, response.text)
        if response.status_code >= 400:
            error = response.json()["error"]
            if is_libre_path(operation.path):  # LibreTranslate's shape: {"error": message}
                assert isinstance(error, str) and error
            else:
                assert set(error) == {"code", "message"}
        # What a schema cannot say: the language source=auto detects, and a file name's extension, may make
        # schema-valid data a 400 on the LibreTranslate API; and like LibreTranslate, it takes more than its schema
        # says (language codes in any case, empty fields as their defaults).
        excluded = []
        if is_libre_path(operation.path):
            excluded.append(negative_data_rejection)
            if operation.path == "/translate_file" or (
                isinstance(case.body, dict) and case.body.get("source") == "auto"
            ):
                excluded.append(positive_data_acceptance)
        if isinstance(case.body, dict) and case.body.get("glossary") and positive_data_acceptance not in excluded:
            # whether the model can write a target term depends on its vocabulary, which no schema can say
            excluded.append(positive_data_acceptance)
        case.validate_response(response, excluded_checks=excluded)

    check()


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_schema_fuzzing(fuzz_server, mode):
    operations = _operations(fuzz_server.url)
    labels = {op.label for op in operations}
    assert {"POST /v1/translate", "POST /translate", "GET /languages", "GET /readyz"} <= labels
    seen: dict[str, set[int]] = {}
    generation_mode = schemathesis.GenerationMode(mode)
    for operation in operations:
        if generation_mode == schemathesis.GenerationMode.NEGATIVE and operation.method.upper() == "GET":
            continue  # GET operations take no input to break
        _fuzz(operation, generation_mode, fuzz_server.url, seen)
    print(mode, {k: sorted(v) for k, v in seen.items()})
    assert seen
    assert httpx.post(f"{fuzz_server.url}/v1/translate", json={"text": "Hello."}).status_code == 200
