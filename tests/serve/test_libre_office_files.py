"""LibreTranslate's /translate_file with the package formats (pptx, xlsx, odt, odp, epub): offered in the
settings the web page's file picker reads, translated, downloaded with their media type; a hostile package and
a PDF are a 400 with one line."""

from __future__ import annotations

import io
import zipfile

import pytest
from fake_translator import FakeTranslator, fake_translation
from server_harness import in_process

from enzh.serve.options import ServeOptions

pptx = pytest.importorskip("pptx")
SENTENCE = "The weather is nice today."


@pytest.fixture(scope="module")
def client():
    with in_process(ServeOptions(), FakeTranslator()) as c:
        yield c


def slides() -> bytes:
    presentation = pptx.Presentation()
    presentation.slides.add_slide(presentation.slide_layouts[0]).shapes.title.text = SENTENCE
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def test_settings_offer_the_package_formats(client):
    formats = client.get("/frontend/settings").json()["supportedFilesFormat"]
    assert {".pptx", ".xlsx", ".odt", ".odp", ".epub"} <= set(formats) and ".pdf" not in formats


def test_a_pptx_is_translated_and_downloaded_with_its_media_type(client):
    answer = client.post("/translate_file", files={"file": ("deck.pptx", slides())}, data={"source": "en"})
    download = client.get(answer.json()["translatedFileUrl"])
    assert download.status_code == 200
    assert (
        download.headers["content-type"] == "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    )
    title = pptx.Presentation(io.BytesIO(download.content)).slides[0].shapes.title.text
    assert title == fake_translation(SENTENCE)


def test_a_truncated_package_and_a_pdf_are_one_line_400s(client):
    data = slides()
    broken = client.post("/translate_file", files={"file": ("deck.pptx", data[: len(data) // 2])})
    assert broken.status_code == 400
    message = broken.json()["error"]
    assert (
        message.startswith("Invalid request: the input is not a .pptx file (not a zip package") and "\n" not in message
    )
    pdf = client.post("/translate_file", files={"file": ("paper.pdf", b"%PDF-1.7\n")})
    assert pdf.status_code == 400 and "convert it to .docx or .odt first" in pdf.json()["error"]
    assert zipfile.is_zipfile(io.BytesIO(data))
