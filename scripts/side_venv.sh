#!/usr/bin/env bash
# side_venv.sh NAME PIN...: a virtualenv of exactly PIN... at $RAGTRACE_CACHE/NAME-venv, made
# once and remade when the pins change, for packages the project's .venv cannot hold beside its
# own (another major of a framework, a conflicting pin). Prints the venv's path.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: side_venv.sh NAME PIN..." >&2; exit 2; }
NAME=$1; shift
CACHE="${RAGTRACE_CACHE:-$HOME/.cache/ragtrace}"
VENV="$CACHE/$NAME-venv"
PINS="$*"
if [[ ! -x "$VENV/bin/python" || "$(cat "$VENV/.version" 2>/dev/null)" != "$PINS" ]]; then
  mkdir -p "$CACHE"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q "$@" >&2
  echo "$PINS" > "$VENV/.version"
fi
echo "$VENV"
