#!/usr/bin/env bash
# haystack-ai 2.x with OpenInference's Haystack instrumentation in its own virtualenv, cached
# outside the work tree: the project's .venv holds haystack-ai 3.x (one major per venv; both
# install as the `haystack` package). Prints the venv's path.
set -euo pipefail
CACHE="${RAGTRACE_CACHE:-$HOME/.cache/ragtrace}"
VENV="$CACHE/haystack2-venv"
PINS="haystack-ai==2.31.0 openinference-instrumentation-haystack==0.1.46 opentelemetry-sdk==1.45.1 opentelemetry-exporter-otlp-proto-http==1.45.1 typing-extensions"
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
