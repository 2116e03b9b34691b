#!/usr/bin/env bash
# The runtime-only install, as a new user gets it: a fresh venv, `pip install .` with no extras (no torch), then
# the README's first command with an empty cache and the runtime tests (tests/runtime_only).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${ENZH_RUNTIME_VENV:-$PWD/.venv-runtime}"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet .
for module in torch transformers onnx fastapi; do
    if "$venv/bin/python" -c "import $module" 2>/dev/null; then
        echo "runtime-only install: $module is importable, but must not be installed" >&2
        exit 1
    fi
done
home="$(mktemp -d)"
location="$(cd "$home" && "$venv/bin/python" -c 'import enzh; print(enzh.__file__)')"
case "$location" in
    */site-packages/enzh/__init__.py) ;;
    *) echo "runtime-only install: enzh imported from $location, not the installed wheel" >&2; exit 1 ;;
esac
trap 'rm -rf "$home"' EXIT
expected=$'今天天气很好。\n我想要一杯咖啡。\n会议已被推迟。'
got="$(cd "$home" && HOME="$home" XDG_CACHE_HOME="$home/cache" "$venv/bin/enzh" translate \
    "The weather is nice today." "I would like a cup of coffee." "The meeting has been postponed.")"
if [ "$got" != "$expected" ]; then
    printf 'runtime-only install: enzh translate printed\n%s\nexpected\n%s\n' "$got" "$expected" >&2
    exit 1
fi
# Chinese goes to the embedded zh->en model, English to the en->zh one, in one call.
expected=$'The weather is nice today.\nI would like a cup of coffee.\n今天天气很好。'
got="$(cd "$home" && HOME="$home" XDG_CACHE_HOME="$home/cache" "$venv/bin/enzh" translate \
    "今天天气很好。" "我想要一杯咖啡。" "The weather is nice today.")"
if [ "$got" != "$expected" ]; then
    printf 'runtime-only install: enzh translate printed\n%s\nexpected\n%s\n' "$got" "$expected" >&2
    exit 1
fi
wheel_dir="$(mktemp -d)"
"$venv/bin/python" -m pip wheel --quiet --no-deps --wheel-dir "$wheel_dir" . >/dev/null
echo "runtime-only install: wheel $(du -k "$wheel_dir"/*.whl | cut -f1) KiB"
rm -rf "$wheel_dir"
echo "runtime-only install: enzh translate printed the README's translations, both ways"
"$venv/bin/python" -m pip install --quiet "pytest==9.2.0"
# From a temporary directory, so the installed package (not the source tree) is what the tests import.
cp -r tests "$home/tests"
cp pyproject.toml "$home/"
(cd "$home" && "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/runtime_only)
