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
from enzh.documents.options import DocumentOptions

if TYPE_CHECKING:
    from enzh.runtime.engine import Engine


@dataclass
class Parsed:
    """A document read by its format; ``decoded`` is None for binary formats and for ``str`` input."""

    format: Format
    units: Units
    decoded: DecodedText | None


def parse(data: str | bytes, options: DocumentOptions, name: str = "the input") -> Parsed:
    """Read ``data`` with the format of ``options`` (bytes are decoded as UTF-8 for text formats)."""
    implementation = get_format(options.format)
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
    return Parsed(implementation, implementation.read(source, options.field), decoded)


def render(parsed: Parsed, translate: SentenceTranslator) -> str | bytes:
    """The translated document, as ``str`` or ``bytes`` like the input (binary formats: bytes)."""
    blocks = parsed.units.blocks
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
) -> str | bytes:
    """Translate a whole document and keep its structure (docs/documents.md).

    ``format``: ``txt``, ``html``, ``md``, ``srt``, ``vtt``, ``docx``, ``jsonl`` or ``tsv``; ``data``: ``str``
    or UTF-8 ``bytes`` for the text formats (the result has the same type; a BOM is kept), ``bytes`` for docx.
    ``field``: the jsonl field or tsv column (default ``text``); ``beam_size``, ``target``: as
    :meth:`Translator.translate`; ``convert``: ``s2t``, ``s2tw``, ``s2twp`` or ``s2hk`` converts the output to
    Traditional characters with OpenCC.
    """
    from enzh.documents.sentences import SentenceEngine

    options = DocumentOptions(
        format=resolve_format(format), field=field, beam_size=beam_size, target=target, convert=convert
    )
    parsed = parse(data, options)
    return render(parsed, SentenceEngine(translator, options))
