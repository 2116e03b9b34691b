#!/usr/bin/env bash
# Install the dev extra, then lint, type-check, check the import contracts, run the runtime-only install job and
# the whole test suite (slow tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/ci_deps.sh
.venv/bin/ruff format --check enzh tests
.venv/bin/ruff check enzh tests
.venv/bin/mypy enzh
.venv/bin/lint-imports
bash scripts/test_runtime_only.sh
.venv/bin/python -m pytest -q "$@"
