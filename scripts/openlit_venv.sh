#!/usr/bin/env bash
# OpenLIT in its own virtualenv, cached outside the work tree: openlit pins anthropic<1, which
# the project's .venv (anthropic 2.x) cannot hold. Prints the venv's path.
set -euo pipefail
CACHE="${RAGTRACE_CACHE:-$HOME/.cache/ragtrace}"
VENV="$CACHE/openlit-venv"
PINS="openlit==1.45.0 openai==2.54.0 opentelemetry-sdk==1.45.1 opentelemetry-exporter-otlp-proto-http==1.45.1 typing-extensions"
if [[ ! -x "$VENV/bin/python" || "$(cat "$VENV/.version" 2>/dev/null)" != "$PINS" ]]; then
  mkdir -p "$CACHE"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install -q $PINS >&2
  echo "$PINS" > "$VENV/.version"
fi
echo "$VENV"
