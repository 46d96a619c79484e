#!/usr/bin/env bash
# The main job: installs what is missing (npm packages, wrangler with its workerd), builds the
# package, and starts the Worker host locally in workerd on http://127.0.0.1:8787 with its
# records in a Durable Object persisted under examples/worker/.wrangler. It prints the URL of
# the browser PKCE demo (sign in as alice / alice-password). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg/scripts/setup.sh examples/worker
exec node examples/worker/dev.mjs "${1:-examples/worker/config.sample.json}"
