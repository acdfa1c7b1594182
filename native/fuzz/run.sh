#!/usr/bin/env bash
# Runs each fuzz target for a few seconds (make fuzz FUZZ_SECONDS=N). Installs cargo-fuzz when it
# is missing; uses the nightly toolchain when rustup has one, else stable with RUSTC_BOOTSTRAP=1
# (cargo-fuzz needs -Z flags for the sanitizer and coverage instrumentation).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi
for target in framer trie net_driver proxy; do
  echo "== fuzzing $target for ${seconds}s"
  cargo "${toolchain[@]}" fuzz run --fuzz-dir native/fuzz "$target" -- -max_total_time="$seconds" -rss_limit_mb=4096
done
