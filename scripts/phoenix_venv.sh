#!/usr/bin/env bash
# Arize Phoenix (the real `phoenix serve`) in its own virtualenv, cached outside the work tree:
# it is heavy and its pins must not touch the project's .venv. Prints the venv's path.
set -euo pipefail
CACHE="${RAGTRACE_CACHE:-$HOME/.cache/ragtrace}"
VENV="$CACHE/phoenix-venv"
VERSION="${RAGTRACE_PHOENIX_VERSION:-20.26.1}"
if [[ ! -x "$VENV/bin/phoenix" || "$(cat "$VENV/.version" 2>/dev/null)" != "$VERSION" ]]; then
  mkdir -p "$CACHE"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q "arize-phoenix==$VERSION" >&2
  echo "$VERSION" > "$VENV/.version"
fi
echo "$VENV"
