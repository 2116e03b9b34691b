"""Write the embedded defaults: export the trained demo models (``assets/demo-hf``, ``assets/demo-zh-en-hf``) into
the package.

``python -m enzh.demo.ship [--direction zh-en]`` rewrites ``enzh/runtime/assets/demo`` (``.../demo-zh-en``): an
fp32 enzh model directory plus the model card and the held-out test set, so a runtime-only install translates with
no export step and no torch. Run it after retraining (``enzh train-demo``); a test checks that each shipped
directory translates its test set exactly as a fresh export of the HF weights does.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from enzh.demo import DIRECTIONS, direction
from enzh.export.pipeline import ExportOptions, export
from enzh.runtime.default_model import DEMO_DIR, DEMO_NAMES, DEMO_ZH_EN_DIR

EXTRA_FILES = ("README.md", "test.tsv")  # the model card and the held-out pairs `enzh eval` uses by default
SHIPPED = {"en-zh": DEMO_DIR, "zh-en": DEMO_ZH_EN_DIR}  # where each direction's export goes in the package


def ship(source: Path, target: Path) -> Path:
    """Export ``source`` into ``target`` (replaced as a whole only once the export has validated)."""
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staged = Path(tmp) / target.name
        export(str(source), staged, ExportOptions(force=True, source_id=DEMO_NAMES[target]))
        for name in EXTRA_FILES:
            shutil.copyfile(source / name, staged / name)
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.demo.ship", description=__doc__.splitlines()[0])
    parser.add_argument("--direction", choices=tuple(DIRECTIONS), default="en-zh", help="the demo model to ship")
    parser.add_argument("--source", type=Path, help="HF demo model (default: the direction's, in assets/)")
    args = parser.parse_args(argv)
    way = direction(args.direction)
    print(f"wrote {ship(args.source or way.hf_dir, SHIPPED[way.name])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
