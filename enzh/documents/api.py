"""``translate_document(translator, data, format=...)``: a whole document in, the translated document out.

The Python API (``enzh.translate_document``) and the file translation (:mod:`enzh.documents.files`) share this
path: parse with the format, translate every block's sentences in one call, write the format back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from enzh.documents.encoding import DecodedText, decode_text
from enzh.documents.errors import DocumentError
from enzh.documents.formats import Format, Units, get_format, resolve_format
from enzh.documents.inline import SentenceTranslator, translate_blocks
from enzh.documents.limits import check_blocks
from enzh.documents.options import DocumentOptions
from enzh.runtime.glossary import Glossary
from enzh.runtime.router import detect_script
from enzh.runtime.segment import reading

if TYPE_CHECKING:
    from enzh.runtime.engine import Engine


@dataclass
class Parsed:
    """A document read by its format; ``decoded`` is None for binary formats and for ``str`` input."""

    format: Format
    units: Units
    decoded: DecodedText | None


def parse(data: str | bytes, options: DocumentOptions, name: str = "the input") -> Parsed:
    """Read ``data`` with the format of ``options`` (bytes are decoded as UTF-8 for text formats); the pieces to
    translate are those in ``options.source``'s script."""
    with reading(options.script):
        return _parse(data, options, name)


def _parse(data: str | bytes, options: DocumentOptions, name: str) -> Parsed:
    implementation = get_format(options.format)
    configure = getattr(implementation, "configure", None)  # formats with options of their own (po, xliff, xlsx)
    if configure is not None:
        implementation = configure(options)
    decoded = None
    source: Any = data
    if implementation.binary:
        if isinstance(data, str):
            raise DocumentError(f"the {options.format} format needs bytes, not str")
    elif isinstance(data, bytes | bytearray):
        decoded = decode_text(bytes(data), name)
        source = decoded.text
    elif not isinstance(data, str):
        raise DocumentError(f"data must be str or bytes, got {type(data).__name__}")
    units = implementation.read(source, options.field)
    check_blocks(units.blocks)  # every format: marks in all and their nesting (enzh.documents.limits)
    return Parsed(implementation, units, decoded)


def detect_language(data: str | bytes, options: DocumentOptions, name: str = "the input") -> str | None:
    """The language of a document's text (en or zh; None: no letters), told from the text its format reads (not
    its markup) by :func:`enzh.runtime.router.detect_script` over the first 20,000 characters."""
    with reading("any"):
        blocks = _parse(data, options, name).units.blocks
    sample = "\n".join(block.text for block in blocks)[:20_000]
    return detect_script(sample)


def render(parsed: Parsed, translate: SentenceTranslator, options: DocumentOptions | None = None) -> str | bytes:
    """The translated document, as ``str`` or ``bytes`` like the input (binary formats: bytes); ``options``: those
    it was parsed with (its source language's script picks the pieces to translate; None: English)."""
    blocks = parsed.units.blocks
    with reading(options.script if options is not None else "latin"):
        translated = translate_blocks(blocks, translate) if blocks else []
    output = parsed.format.write(parsed.units, translated)
    if parsed.decoded is not None:
        return parsed.decoded.encode(output)
    return output


def translate_document(
    translator: Engine,
    data: str | bytes,
    *,
    format: str,
    field: str | None = None,
    beam_size: int | None = None,
    target: str | None = None,
    convert: str | None = None,
    source: str = "en",
    fuzzy: bool = True,
    retranslate: bool = False,
    glossary: Glossary | None = None,
    sheet_names: bool = False,
) -> str | bytes:
    """Translate a whole document and keep its structure (docs/documents.md).

    ``format``: ``txt``, ``html``, ``md``, ``srt``, ``vtt``, ``docx``, ``pptx``, ``xlsx``, ``odt``, ``odp``,
    ``epub``, ``jsonl``, ``tsv``, ``csv``, ``po`` or ``xliff``; ``data``: ``str`` or UTF-8 ``bytes`` for the text
    formats (the result has the same type; a BOM is kept), ``bytes`` for the packages (docx, pptx, xlsx, odt, odp,
    epub) and xliff. ``field``: the jsonl field or tsv/csv column (default ``text``); ``beam_size``, ``target``: as
    :meth:`Translator.translate`; ``convert``: ``s2t``, ``s2tw``, ``s2twp`` or ``s2hk`` converts the output to
    Traditional characters with OpenCC; ``source``: the document's language, ``en`` or ``zh`` (the translator
    must be a model from it); ``fuzzy`` (po, xliff): mark machine translations as needing review;
    ``retranslate`` (po, xliff): translate entries that already have a translation too; ``sheet_names`` (xlsx):
    translate the sheets' names too; ``glossary``: terms with a fixed translation
    (:class:`enzh.runtime.glossary.Glossary`).
    """
    from enzh.documents.sentences import SentenceEngine

    options = DocumentOptions(
        format=resolve_format(format),
        field=field,
        beam_size=beam_size,
        target=target,
        convert=convert,
        source=source,
        fuzzy=fuzzy,
        retranslate=retranslate,
        glossary=glossary,
        sheet_names=sheet_names,
    )
    parsed = parse(data, options)
    return render(parsed, SentenceEngine(translator, options), options)
