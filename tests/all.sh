#!/usr/bin/env bash
# Every check of the project, from a clean clone: the core's purity, formatting, lints, and all
# tests. Idempotent; installs what is missing. Ends with one SUMMARY line for CI.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's title, after the minutes and seconds since the start: where a slow run's time went.
phase() { printf '== [%02d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$1"; }

command -v cargo >/dev/null || { echo "cargo is required (install Rust with rustup)" >&2; exit 1; }
if command -v rustup >/dev/null; then rustup component add rustfmt clippy >/dev/null 2>&1 || true; fi

phase "the core reads no clock, RNG, network or disk"
deps=$(cargo tree -p edgegrant -e normal --prefix none --format '{p}' | awk '{print $1}' | sort -u)
for banned in getrandom rand rand_core tokio mio socket2 chrono time; do
  if grep -qx "$banned" <<<"$deps"; then echo "core depends on $banned" >&2; exit 1; fi
done
# Code lines only (comments may name what the core avoids).
if grep -rnE 'SystemTime|Instant::now|std::(fs|net|env|thread|process)|getrandom|thread_rng|\bunsafe\b' core/src \
    | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//'; then
  echo "core/src uses a clock, RNG, IO or unsafe (above)" >&2; exit 1
fi
echo "   $(wc -l <<<"$deps") crates, none of them IO"

phase "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path core/fuzz/Cargo.toml -- --check

phase "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
# The core without its `unannounced` feature too (the package's module for configured apps).
cargo clippy -p edgegrant --no-default-features --all-targets -- -D warnings

phase "rustdoc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc -q -p edgegrant --no-deps

phase "cargo test --workspace"
log=$(mktemp)
# The summary lines of the corpus runner, the race explorer and the crash tests (cargo shows a
# passing test's output only under --nocapture; the tests append them here: edgegrant_tests::report).
report=$(mktemp)
trap 'rm -f "$log" "$report"' EXIT
EDGEGRANT_TEST_REPORT=$report cargo test --workspace 2>&1 | tee "$log"
grep '^conformance' "$report" || true
awk 'match($0, /(race explorer|crash faults): .* schedules/) { line = substr($0, RSTART, RLENGTH); split(line, p, ": ");
       n = line; sub(/ schedules$/, "", n); sub(/.*: /, "", n); total[p[1]] += n; runs[p[1]]++ }
     END { for (k in total) printf "%s: %d schedules explored in %d runs, every invariant held\n", k, total[k], runs[k] }' "$report"
# The core's own tests without its `unannounced` feature (the package's module for configured
# apps: a stored app's record neither read nor written there).
cargo test -p edgegrant --no-default-features 2>&1 | tee -a "$log" | grep -E '^test result|FAILED|panicked'
# The native benchmarks once each, as tests: every measured flow must succeed (criterion's test mode).
cargo test -q -p edgegrant-tests --bench core 2>&1 | tee -a "$log" | tail -n 3
passed=$(grep -oE 'test result: ok\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -oE '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')

# The native host that the JavaScript tests start (examples/native/start.mjs): the binary cargo
# test built for the host's own tests, handed to them by its path. (A `cargo build -p` of it
# resolves the workspace's features without the test dependencies', so it compiled the core and
# the host again: 1:41 of a clean run.)
phase "the native host (the binary cargo test built, as the JavaScript tests start it)"
EDGEGRANT_NATIVE_BIN=$(cargo test -q --workspace --no-run --message-format=json 2>/dev/null | node -e '
  let found = "";
  require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
    const m = JSON.parse(line);
    if (m.reason === "compiler-artifact" && m.target.name === "edgegrant-native" && m.target.kind.includes("bin") && !m.profile.test && m.executable) found = m.executable;
  }).on("close", () => console.log(found));')
[ -x "$EDGEGRANT_NATIVE_BIN" ] || { echo "cargo test built no native host binary" >&2; exit 1; }
export EDGEGRANT_NATIVE_BIN
echo "native host: $EDGEGRANT_NATIVE_BIN"

# The fuzz smoke runs in the background, beside the installs and the npm setup below (network,
# a C compile of SQLite, the wasm build), which leave a core idle much of the time; the
# JavaScript tests wait for it, so that nothing competes with their timing. (In turn, it took
# 4:49 of the last clean run.)
phase "fuzz smoke, started in the background: every cargo-fuzz target for 15 s (nightly toolchain; installs cargo-fuzz if missing)"
rustup toolchain list | grep -q '^nightly' || { echo "the fuzz targets need the nightly toolchain (rustup toolchain install nightly)" >&2; exit 1; }
fuzzlog=$(mktemp)
core/fuzz/run.sh 15 >"$fuzzlog" 2>&1 &
fuzz_pid=$!
trap 'kill "$fuzz_pid" 2>/dev/null || true; rm -f "$log" "$report" "$fuzzlog"' EXIT

phase "Chromium for the browser test (Debian's package; playwright never downloads one)"
if ! command -v chromium >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y chromium || { $sudo apt-get update && $sudo apt-get install -y chromium; }
fi

phase "PostgreSQL for the Postgres store tests (Debian's package; the tests start throwaway clusters of their own)"
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y postgresql || { $sudo apt-get update && $sudo apt-get install -y postgresql; }
fi

phase "openssl for the tests' own certificate authority (HTTPS servers of client metadata documents)"
if ! command -v openssl >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y openssl || { $sudo apt-get update && $sudo apt-get install -y openssl; }
fi

phase "Python and the official Dropbox Python SDK for the interop test (tests/e2e/.venv; python3-venv with apt when missing)"
tests/e2e/python/setup.sh

phase "npm package, hosts and interop clients: install, build the wasm (fails over its size budget)"
pkg/scripts/setup.sh examples/worker examples/mcp tests/e2e conformance tests/bench
jslog=$(mktemp)
trap 'kill "$fuzz_pid" 2>/dev/null || true; rm -f "$log" "$report" "$fuzzlog" "$jslog"' EXIT
phase "fuzz smoke: its result (waited for before the JavaScript tests)"
if ! wait "$fuzz_pid"; then cat "$fuzzlog" >&2; echo "fuzz smoke FAILED" >&2; exit 1; fi
cat "$fuzzlog"
phase "node --test"
# One test file per core at once (at least two): most files wait on processes — wrangler,
# workerd, PostgreSQL, Chromium, the native host — rather than compute; two at once took the
# suite from 20 to 14.6 minutes on two cores. Node's default is one fewer than the cores.
cores=$(nproc 2>/dev/null || echo 2)
concurrency=()
if node --help | grep -q -- --test-concurrency; then concurrency=(--test-concurrency=$((cores < 2 ? 2 : cores))); fi
node --test "${concurrency[@]}" pkg/test/*.test.mjs examples/node/test/*.test.mjs examples/worker/test/*.test.mjs examples/mcp/test/*.test.mjs tests/e2e/*.test.mjs conformance/runners/*.test.mjs tests/bench/*/*.test.mjs tests/load/*.test.mjs tests/races/*.test.mjs tests/soak/*.test.mjs 2>&1 \
  | tee "$jslog" | grep -E '^(not ok|# (tests|pass|fail|skipped)|# conformance)' || true
js_passed=$(awk '/^# pass/ {print $3}' "$jslog")
js_failed=$(awk '/^# fail/ {print $3}' "$jslog")
[ -n "$js_passed" ] || { echo "node --test did not run" >&2; cat "$jslog" >&2; exit 1; }
[ "$js_failed" = 0 ] || cat "$jslog"

phase "done"
echo "SUMMARY: cargo test: ${passed} passed; ${failed} failed; node --test: ${js_passed} passed; ${js_failed} failed"
[ "$failed" = 0 ] && [ "$js_failed" = 0 ]
