#!/usr/bin/env bash
# Installs the rumqttd broker the comparison bench (bench/compare.ts) measures as a peer, when the
# pinned version is missing: `cargo install rumqttd` from crates.io into cargo's own bin directory
# ($CARGO_HOME/bin, ~/.cargo/bin by default; /root/.cargo/bin for CI as root). That directory
# survives `make clean` (which empties target/) and is where bench/lib/compare-brokers.ts looks.
# Without --locked (issue 11: the lock file the crate ships does not build with our Rust; the
# newest compatible dependencies do). Building takes minutes on two cores (7.5 on the bench VM);
# later calls find it and return at once.
set -euo pipefail
version=0.20.0
bin="${CARGO_HOME:-$HOME/.cargo}/bin/rumqttd"
if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "rumqttd $version" ]; then
  exit 0
fi
echo "installing: rumqttd $version (cargo install, a few minutes)"
cargo install --quiet rumqttd --version "$version"
