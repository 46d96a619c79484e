#!/usr/bin/env bash
# Installs the package's npm dependencies (only when the lockfile changed: better-sqlite3
# compiles from source) and builds the WebAssembly into pkg/dist. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "node and npm are required" >&2; exit 1; }
stamp=node_modules/.edgegrant-lock
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
node scripts/build.mjs
