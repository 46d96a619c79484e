#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: `core/fuzz/run.sh [seconds per target]` (default 20).
# Installs cargo-fuzz when missing (from crates.io) and uses the nightly toolchain (cargo-fuzz
# needs -Z flags). Seeds come from the conformance vectors (seeds.mjs); new corpus entries stay
# in corpus/ (not committed). Prints one line per target with its execution count; fails on the
# first crash, leaving the input in artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-20}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2
node seeds.mjs
# Every target in one build (the three link in parallel); each run below then finds it fresh.
cargo +nightly fuzz build >/dev/null 2>&1 || cargo +nightly fuzz build
for target in request records client; do
  mkdir -p "corpus/$target"
  log=$(mktemp)
  if ! cargo +nightly fuzz run "$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $target FAILED (input in core/fuzz/artifacts/$target/)" >&2
    exit 1
  fi
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n1 | grep -oE '[0-9]+' || echo "?")
  echo "fuzz: $target: $execs executions in ${seconds} s, coverage $cov edges, no crash"
  rm -f "$log"
done
