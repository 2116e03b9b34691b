"""A glossary through the documents path: terms enforced in a document, and part of the journal's key."""

from __future__ import annotations

import pytest

from enzh.documents.api import translate_document
from enzh.documents.options import DocumentOptions
from enzh.runtime.errors import OptionsError
from enzh.runtime.glossary import Glossary

GLOSSARY = Glossary.from_mapping({"Mary": "玛莉", "Beijing": "北京市"})


def test_a_document_keeps_its_markup_and_gets_the_terms(demo_translator) -> None:
    html = "<p>Mary was born in Chengdu in 1985.</p>\n<p>Where is the <b>school</b>?</p>\n"
    plain = translate_document(demo_translator, html, format="html")
    held = translate_document(demo_translator, html, format="html", glossary=GLOSSARY)
    first, second = held.split("\n")[:2]
    assert first.count("玛莉") == 1 and "玛丽" not in first
    assert second == plain.split("\n")[1]  # the paragraph without a term is translated as without a glossary


def test_the_glossary_is_part_of_the_journal_key() -> None:
    plain = DocumentOptions(format="txt")
    assert "glossary" not in plain.key()  # journals written without a glossary stay valid
    one = DocumentOptions(format="txt", glossary=GLOSSARY).key()
    other = DocumentOptions(format="txt", glossary=Glossary.from_mapping({"Mary": "玛丽"})).key()
    assert one["glossary"] != other["glossary"] and one["glossary"] == GLOSSARY.fingerprint()
    with pytest.raises(OptionsError, match="glossary must be a Glossary"):
        DocumentOptions(format="txt", glossary={"Mary": "玛莉"})  # type: ignore[arg-type]
