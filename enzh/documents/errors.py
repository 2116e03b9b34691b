"""The one error of document translation: bad input files and arguments, named in one line with the fix."""

from __future__ import annotations

from enzh.runtime.errors import EnzhError


class DocumentError(EnzhError):
    """The input cannot be translated as asked (unknown format, undecodable bytes, missing field, bad path)."""
