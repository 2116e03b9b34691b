#!/usr/bin/env bash
# System packages the tests need beyond Python: Debian's chromium for the web page's headless-browser test
# (Playwright drives it through executable_path; no browser is ever downloaded). Installs only what is missing.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "scripts/ci_deps.sh: chromium is missing; install it with: sudo apt-get install -y chromium" >&2
    fi
fi
