"""Shared by the tests of real LibreTranslate clients: one real server (uvicorn on a socket) with the demo model.

The server helpers live with the server tests (tests/serve/server_harness.py); this puts that folder on the path.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))

from server_harness import ThreadServer, embedded_pair, running, shared_translator

__all__ = ["ThreadServer", "embedded_pair", "running", "shared_translator"]
