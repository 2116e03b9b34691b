"""The one error of the Ray layer: a job or deployment that could not run, named in one line with the fix."""

from __future__ import annotations

from enzh.runtime.errors import EnzhError


class ScaleError(EnzhError):
    """A Ray job failed or could not start; the message says what was kept and how to go on."""
