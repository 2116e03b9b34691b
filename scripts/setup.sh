#!/usr/bin/env bash
# Create .venv (if missing) and install enzh in it with the given extras (default: export).
#   bash scripts/setup.sh          # runtime + exporter (torch, transformers, onnx)
#   bash scripts/setup.sh dev      # + test and lint tools
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-export}"
# A venv whose creation was interrupted has a python but no pip: make it anew.
.venv/bin/python -m pip --version >/dev/null 2>&1 || python3 -m venv --clear .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first and pinned: pip takes the CPU build of 2.13.0 from this machine's disk (an unpinned torch
# would pull a multi-GB CUDA build).
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[${extras}]"
