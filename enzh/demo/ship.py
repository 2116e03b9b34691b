"""Write the embedded default: export the trained demo model (``assets/demo-hf``) into the package.

``python -m enzh.demo.ship`` rewrites ``enzh/runtime/assets/demo`` (an fp32 enzh model directory plus the
model card and the held-out test set), so a runtime-only install translates with no export step and no torch.
Run it after retraining (``enzh train-demo``); a test checks that the shipped directory translates the test set
exactly as a fresh export of the HF weights does.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from enzh.demo import HF_MODEL_DIR
from enzh.export.pipeline import ExportOptions, export
from enzh.runtime.default_model import DEMO_DIR, DEMO_NAME

EXTRA_FILES = ("README.md", "test.tsv")  # the model card and the held-out pairs `enzh eval` uses by default


def ship(source: Path = HF_MODEL_DIR, target: Path = DEMO_DIR) -> Path:
    """Export ``source`` into ``target`` (replaced as a whole only once the export has validated)."""
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staged = Path(tmp) / "demo"
        export(str(source), staged, ExportOptions(force=True, source_id=DEMO_NAME))
        for name in EXTRA_FILES:
            shutil.copyfile(source / name, staged / name)
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.demo.ship", description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=HF_MODEL_DIR, help=f"HF demo model (default {HF_MODEL_DIR})")
    parser.add_argument("--target", type=Path, default=DEMO_DIR, help=f"directory to write (default {DEMO_DIR})")
    args = parser.parse_args(argv)
    print(f"wrote {ship(args.source, args.target)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
