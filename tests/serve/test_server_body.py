"""One request path (issue 26 item 4): one list of routes (enzh.serve.routes) that matches the app's, and one
body reader (enzh.serve.body) whose result the key and limit checks and the route share: a body is parsed once."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fake_translator import FakeTranslator, fake_translation
from server_harness import in_process
from starlette.routing import Mount

from enzh.serve import body as body_module
from enzh.serve.app import create_app
from enzh.serve.errors import error_for_path
from enzh.serve.options import ServeOptions
from enzh.serve.routes import BY_PATH, GUARDED_PATHS, LIBRE_PATHS, LIBRE_PREFIXES, is_libre_path


def test_the_routes_table_is_the_apps_routes():
    app = create_app(ServeOptions(warmup=False), FakeTranslator())
    methods: dict[str, set[str]] = {}
    for route in app.routes:
        if isinstance(route, Mount):
            assert route.path == "/static"
            continue
        methods.setdefault(route.path, set()).update(getattr(route, "methods", None) or ())
    parameterised = {path for path in methods if "{" in path}
    assert parameterised == {"/download_file/{file_id}/{name}"}
    assert all(path.startswith(LIBRE_PREFIXES) for path in parameterised)
    assert set(methods) - parameterised == set(BY_PATH)
    # the guarded routes are the POST ones, and they take nothing else
    assert {path for path, m in methods.items() if "POST" in m} == GUARDED_PATHS
    assert all(methods[path] == {"POST"} for path in GUARDED_PATHS)
    libre = {"/translate", "/translate_file", "/detect", "/suggest", "/languages", "/frontend/settings"}
    assert {*libre, "/spec", "/health"} == LIBRE_PATHS
    assert is_libre_path("/download_file/abc/a.txt") and not is_libre_path("/v1/translate")
    assert error_for_path("/detect", 422, "x", "bad").status_code == 400  # LibreTranslate's status
    assert error_for_path("/v1/translate", 422, "x", "bad").status_code == 422


@pytest.fixture
def reads(monkeypatch):
    """How many times a body is read and parsed."""
    calls = []
    original = body_module._read

    async def counted(request):
        calls.append(request.url.path)
        return await original(request)

    monkeypatch.setattr(body_module, "_read", counted)
    return calls


@pytest.mark.parametrize("limits", [{}, {"char_limit": 100_000}], ids=["no-checks", "with-checks"])
def test_a_body_is_read_once_by_the_checks_and_the_route(reads, limits):
    with in_process(ServeOptions(**limits), FakeTranslator()) as client:
        reads.clear()
        assert client.post("/v1/translate", json={"text": "Hello."}).json()["translations"] == [
            fake_translation("Hello.")
        ]
        assert client.post("/translate", data={"q": "Hello.", "target": "zh"}).status_code == 200
        files = {"file": ("a.txt", b"Hello.", "text/plain")}
        assert client.post("/translate_file", data={"target": "zh"}, files=files).status_code == 200
        assert client.post("/detect", json={"q": "Hello."}).status_code == 200
        assert reads == ["/v1/translate", "/translate", "/translate_file", "/detect"]


@pytest.mark.parametrize("limits", [{}, {"char_limit": 100_000}], ids=["no-checks", "with-checks"])
def test_bad_bodies_get_the_same_answer_with_or_without_the_checks(limits):
    with in_process(ServeOptions(**limits), FakeTranslator()) as client:
        libre = client.post("/translate", content=b'{"q": ', headers={"Content-Type": "application/json"})
        assert libre.status_code == 400
        assert libre.json() == {"error": "Invalid JSON format: Expecting value"}
        empty = client.post("/v1/translate", content=b" ", headers={"Content-Type": "application/json"})
        assert empty.status_code == 400
        assert empty.json()["error"] == {
            "code": "invalid_json",
            "message": "the request body is empty; send a JSON object",
        }
        form = client.post("/v1/translate", data={"text": "Hello."})
        assert form.status_code == 415
        assert form.json()["error"]["message"] == (
            "Content-Type must be application/json, got 'application/x-www-form-urlencoded'"
        )
        broken = client.post(
            "/translate", content=b"--B\r\nno headers", headers={"Content-Type": "multipart/form-data; boundary=B"}
        )
        assert broken.status_code == 400 and broken.json()["error"].startswith("Invalid request: "), broken.text
        surrogate = client.post(
            "/v1/translate", content=b'{"text": "a\\ud800b"}', headers={"Content-Type": "application/json"}
        )
        assert surrogate.json()["translations"] == [fake_translation("a\ufffdb")]


# -- admission: one place (Service.admitted) for every kind of translation ---------------------------------

KINDS = {
    "plain": ("/v1/translate", {"json": {"text": "Hello."}}),
    "html": ("/v1/translate", {"json": {"text": "<p>Hello.</p>", "format": "html"}}),
    "alternatives": ("/translate", {"json": {"q": "Hello.", "target": "zh", "alternatives": 2}}),
    "file": ("/translate_file", {"data": {"target": "zh"}, "files": {"file": ("a.txt", b"Hello.", "text/plain")}}),
}


class SlowDetailed(FakeTranslator):
    """Slow on the n-best path too (the alternatives' worker thread), not only in batches."""

    def translate_detailed(self, texts, **options):
        time.sleep(self.delay_s)
        return super().translate_detailed(texts, **options)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_of_translation_is_admitted_and_counted_in_flight(kind):
    path, request = KINDS[kind]
    with in_process(ServeOptions(), SlowDetailed(delay_s=0.4)) as client:
        service = client.app.state.service
        seen = []
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(client.post, path, **request)
            deadline = time.monotonic() + 10
            while not answer.done() and time.monotonic() < deadline:
                seen.append(service.in_flight)
                time.sleep(0.01)
            assert answer.result().status_code == 200, answer.result().text
        assert max(seen) == 1 and service.in_flight == 0
        service.draining = True  # what SIGTERM sets: no new work of any kind
        refused = client.post(path, **request)
        assert refused.status_code == 503, refused.text
        assert service.in_flight == 0


@pytest.mark.parametrize("limits", [{}, {"char_limit": 100_000}], ids=["no-checks", "with-checks"])
def test_an_upload_is_read_once_and_translated_as_counted(monkeypatch, limits):
    """With the limit checks on, the reading that counted a file's text is the one the route translates."""
    from enzh.serve import modes, uploads

    readings = []
    for module in (modes, uploads):
        original = module.parse

        def counted(data, options, name="the input", original=original, module=module):
            readings.append((module.__name__.rsplit(".", 1)[1], options.source))
            return original(data, options, name)

        monkeypatch.setattr(module, "parse", counted)
    with in_process(ServeOptions(**limits), FakeTranslator()) as client:
        files = {"file": ("a.txt", b"Hello there.\n\nThe weather is nice.", "text/plain")}
        answer = client.post("/translate_file", data={"target": "zh", "source": "en"}, files=files)
        assert answer.status_code == 200, answer.text
        assert client.get(answer.json()["translatedFileUrl"]).text == "HELLO THERE.\n\nTHE WEATHER IS NICE."
    assert readings == ([("uploads", "en")] if limits else [("modes", "en")])
