#!/usr/bin/env bash
# The main job: installs what is missing (npm packages, wrangler with its workerd), builds the
# package, and starts the Worker host locally in workerd on http://127.0.0.1:8787 with its
# records in Durable Objects (one per partition) persisted under examples/worker/.wrangler. It prints the URL of
# the browser PKCE demo (sign in as alice / alice-password). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg/scripts/setup.sh examples/worker
# The sample configuration's session_secret is public: the host refuses it unless told this is
# the local demo. A configuration of your own (the first argument) gets no such allowance.
if [ $# -eq 0 ]; then export EDGEGRANT_ALLOW_SAMPLE_SECRET=1; fi
exec node examples/worker/dev.mjs "${1:-examples/worker/config.sample.json}"
