#!/usr/bin/env bash
# The npm packages the Node dialect tests drive (LangChain.js with OpenInference JS, the Vercel
# AI SDK 5 and 6, the standard OTLP exporters), installed exactly as pinned by
# tests/dialects/node/package-lock.json (npm ci) once, cached at $RAGTRACE_CACHE/node-deps and
# reinstalled when the lock file changes. tests/dialects/node/node_modules is linked to it, so the
# apps there resolve their imports (ES modules ignore NODE_PATH). Prints the cached folder.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
APPS="$ROOT/tests/dialects/node"
CACHE="${RAGTRACE_CACHE:-$HOME/.cache/ragtrace}"
DEPS="$CACHE/node-deps"
command -v npm >/dev/null || { echo "node_deps.sh: npm not found (Node.js 20 or later)" >&2; exit 1; }
LOCK_SUM="$(sha256sum "$APPS/package-lock.json" | cut -d' ' -f1)"
if [[ ! -d "$DEPS/node_modules" || "$(cat "$DEPS/.lock-sha256" 2>/dev/null)" != "$LOCK_SUM" ]]; then
  rm -rf "$DEPS"
  mkdir -p "$DEPS"
  cp "$APPS/package.json" "$APPS/package-lock.json" "$DEPS/"
  (cd "$DEPS" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$LOCK_SUM" > "$DEPS/.lock-sha256"
fi
ln -sfn "$DEPS/node_modules" "$APPS/node_modules"
echo "$DEPS"
