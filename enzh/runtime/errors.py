"""One vocabulary for errors: every error enzh raises on purpose is an :class:`EnzhError`.

Messages name what was wrong, the accepted values and the fix. The command line catches ``EnzhError`` once
and prints its message (exit code 2, no traceback).
"""

from __future__ import annotations


class EnzhError(Exception):
    """Base class of the errors enzh raises on purpose."""


class OptionsError(EnzhError, ValueError):
    """An option or argument has a value outside the accepted ones."""


class ModelDirError(EnzhError):
    """The model directory is missing, incomplete, corrupted or of an unknown format."""


class MissingExtraError(EnzhError, ImportError):
    """An optional part of enzh was used without the extra that installs its dependencies."""


class ExportError(EnzhError):
    """The export could not be completed; the message says why and what to do."""


class QuantizeError(EnzhError):
    """A precision variant could not be written; the message says why and what to do."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`OptionsError` with ``message`` unless ``condition`` holds (options' ``__post_init__``)."""
    if not condition:
        raise OptionsError(message)
