#!/usr/bin/env bash
# Installs the npm dependencies of the package and of every project directory given (relative to
# the repository root), each only when its lockfile changed since the last install (better-sqlite3
# compiles from source), then builds the WebAssembly into pkg/dist. Idempotent.
#
#   pkg/scripts/setup.sh [examples/worker tests/e2e ...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
command -v npm >/dev/null || { echo "node and npm are required" >&2; exit 1; }

install() {
  local dir="$root/$1" stamp want
  stamp="$dir/node_modules/.edgegrant-lock"
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund)
    echo "$want" > "$stamp"
  fi
}

install pkg
for dir in "$@"; do install "$dir"; done
cd "$root/pkg" && node scripts/build.mjs
