#!/usr/bin/env bash
# The main job: installs what is missing, builds the package, and serves the Node host with the
# sample configuration on http://127.0.0.1:8787 (sign in as alice / alice-password).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg/scripts/setup.sh
echo
echo "Try the flow: http://127.0.0.1:8787/oauth2/authorize?client_id=demo-server-app&response_type=code"
exec node examples/node/server.mjs "${1:-examples/node/config.sample.json}"
