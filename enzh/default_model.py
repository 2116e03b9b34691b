"""The embedded default: the demo model shipped inside the package, exported into a cache on first use."""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path

logger = logging.getLogger("enzh")

DEMO_SOURCE = Path(__file__).resolve().parent / "demo" / "model"


def cache_root() -> Path:
    """$ENZH_CACHE, else $XDG_CACHE_HOME/enzh, else ~/.cache/enzh."""
    if os.environ.get("ENZH_CACHE"):
        return Path(os.environ["ENZH_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "enzh"


def _fingerprint(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(directory.iterdir()):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def default_model_dir() -> Path:
    """Return the exported demo model, exporting it into the cache the first time (needs the [export] extra)."""
    from enzh.manifest import FORMAT_VERSION, MANIFEST

    if not (DEMO_SOURCE / "config.json").is_file():
        raise FileNotFoundError(
            f"the embedded demo model is missing from {DEMO_SOURCE}; reinstall enzh-onnx or pass --model DIR"
        )
    target = cache_root() / f"demo-v{FORMAT_VERSION}-{_fingerprint(DEMO_SOURCE)}"
    if (target / MANIFEST).is_file():
        return target
    try:
        from enzh.export import ExportOptions, export
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RuntimeError(
            "exporting the embedded demo model needs the export extra: pip install 'enzh-onnx[export]' "
            "(or pass --model DIR with an exported model)"
        ) from exc
    print(f"enzh: exporting the embedded demo model to {target} (first use only) ...", file=sys.stderr)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    export(str(DEMO_SOURCE), tmp, ExportOptions(force=True, progress=False))
    try:
        tmp.rename(target)
    except OSError:  # another process finished first; use its copy
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return target
