"""Bytes <-> text for the text formats: UTF-8 with or without a BOM, kept as it came.

Line ends are never touched (the text keeps ``\\r\\n`` as two characters), so a file written back has exactly
the bytes of its untranslated parts.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from enzh.documents.errors import DocumentError

_UTF8_BOM = codecs.BOM_UTF8
_OTHER_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
EXPECTED = "enzh reads text files as UTF-8, with or without a BOM"


@dataclass(frozen=True)
class DecodedText:
    text: str
    bom: bool

    def encode(self, text: str) -> bytes:
        """``text`` as UTF-8, with the BOM again when the input had one."""
        return (_UTF8_BOM if self.bom else b"") + text.encode("utf-8")


def decode_text(data: bytes, name: str = "the input") -> DecodedText:
    """Decode UTF-8 (a leading BOM is remembered); one-line :class:`DocumentError` for anything else."""
    for mark, encoding in _OTHER_BOMS:
        if data.startswith(mark):
            raise DocumentError(f"{name} is {encoding} text (it starts with a {encoding} BOM); {EXPECTED}: re-save it")
    if b"\x00" in data:
        raise DocumentError(f"{name} looks binary (it contains NUL bytes); {EXPECTED}")
    bom = data.startswith(_UTF8_BOM)
    body = data[len(_UTF8_BOM) :] if bom else data
    try:
        return DecodedText(body.decode("utf-8"), bom)
    except UnicodeDecodeError as exc:
        offset = exc.start + (len(_UTF8_BOM) if bom else 0)
        raise DocumentError(
            f"{name} is not UTF-8: byte 0x{body[exc.start]:02x} at offset {offset} cannot be decoded; "
            f"{EXPECTED} (re-save it as UTF-8)"
        ) from None
