#!/usr/bin/env bash
# System packages the tests need beyond Python: Debian's chromium for the web page's headless-browser test
# (Playwright drives it through executable_path; no browser is ever downloaded), and Debian's nodejs and npm for
# the npm LibreTranslate client's test, with that client installed from tests/clients/package-lock.json.
# Installs only what is missing.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "scripts/ci_deps.sh: chromium is missing; install it with: sudo apt-get install -y chromium" >&2
    fi
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
        echo "scripts/ci_deps.sh: node or npm is missing; install them with: sudo apt-get install -y nodejs npm" >&2
    fi
fi
clients="$(dirname "$0")/../tests/clients"
if command -v npm >/dev/null 2>&1 && [ ! -d "$clients/node_modules/libretranslate" ]; then
    (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
fi
