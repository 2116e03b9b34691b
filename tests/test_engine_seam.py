"""The engine seam: above the runtime, a translator is used through :class:`enzh.runtime.engine.Engine` only.

Checked on the source: no module of serve, documents, scale, cli or tools reads a translator's tokenizer, model
adapter or sessions, calls a translator's (or engine's) private methods, or builds the Marian adapter or the
sessions itself. The profilers are the named exception: they time and instrument ONNX Runtime's sessions and
the decoders on purpose (white-box tools of the runtime).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from enzh.runtime.engine import Engine

PACKAGE = Path(__file__).resolve().parents[1] / "enzh"
ABOVE = ("serve", "documents", "scale", "cli", "tools")
INTERNALS = ("adapter", "tokenizer", "sessions")
# Tools that time or profile ONNX Runtime's sessions and the decoders (they wrap their run methods).
PROFILERS = {
    "tools/profile.py",
    "tools/profile_loop.py",
    "tools/loop_bound.py",
    "tools/shortlist_report.py",
    "tools/precision_report.py",
    "tools/lane_bench.py",  # (times the running batches' steps and a joining sentence's encoder pass)
}


def _modules() -> list[Path]:
    return sorted(p for layer in ABOVE for p in (PACKAGE / layer).rglob("*.py"))


def _offences(source: str, relative: str) -> list[str]:
    """What in ``source`` (the module at ``relative``, a path inside enzh/) reaches past the seam."""
    found: list[str] = []
    if relative in PROFILERS:
        return found
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if name in INTERNALS:
                found.append(f"{relative}:{node.lineno} .{name}")
            # a translator's or engine's private attribute (e.g. translator._encode_parts)
            owner = node.value.id if isinstance(node.value, ast.Name) else ""
            if name.startswith("_") and not name.startswith("__") and ("translator" in owner or "engine" in owner):
                found.append(f"{relative}:{node.lineno} {owner}.{name}")
        if isinstance(node, ast.ImportFrom) and node.module in ("enzh.runtime.adapter", "enzh.runtime.sessions"):
            names = {alias.name for alias in node.names}
            if names & {"MarianAdapter", "ModelSessions"}:
                found.append(f"{relative}:{node.lineno} imports {', '.join(sorted(names))} from {node.module}")
    return sorted(found, key=lambda o: (o.split(":")[0], int(o.split(":")[1].split()[0])))


def test_nothing_above_the_runtime_reaches_into_a_translator() -> None:
    offences = [
        o
        for path in _modules()
        for o in _offences(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix())
    ]
    assert offences == []


def test_the_check_finds_what_it_looks_for() -> None:
    source = (
        "from enzh.runtime.adapter import MarianAdapter\n"
        "def f(translator):\n"
        "    translator.adapter.resolve_target(None)\n"
        "    translator.sessions.encoder\n"
        "    return translator._encode_parts('x', None)\n"
    )
    assert _offences(source, "serve/probe.py") == [
        "serve/probe.py:1 imports MarianAdapter from enzh.runtime.adapter",
        "serve/probe.py:3 .adapter",
        "serve/probe.py:4 .sessions",
        "serve/probe.py:5 translator._encode_parts",
    ]
    assert _offences("def f(t):\n    return t.sessions.encoder\n", "tools/profile.py") == []


def test_the_translator_and_the_service_stand_in_are_engines(demo_translator) -> None:
    spec = importlib.util.spec_from_file_location(
        "fake_translator", Path(__file__).parent / "serve" / "fake_translator.py"
    )
    assert spec is not None and spec.loader is not None
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    FakeTranslator = fake.FakeTranslator

    assert isinstance(demo_translator, Engine)
    assert isinstance(FakeTranslator(), Engine)
    info = demo_translator.info
    assert (info.name, info.precision, info.embedded, info.max_positions) == ("enzh-demo", "fp32", True, 512)
    assert info.targets == (">>cmn_Hans<<", ">>cmn_Hant<<") and info.default_target == ">>cmn_Hans<<"
    with pytest.raises(ValueError, match="unknown target 'fr'"):
        demo_translator.resolve_target("fr")
