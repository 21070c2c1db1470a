#!/usr/bin/env bash
# scripts/dev-stack.sh up|down|status|env|clean — the service stack on fixed local ports
# (see scripts/dev_stack.py and scripts/README.md). Run `make provision` first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY=python3
cd "$ROOT"
exec "$PY" -m scripts.dev_stack "$@"
