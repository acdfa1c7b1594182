#!/usr/bin/env bash
# Installs the Mochi MQTT broker (Go) the comparison bench (bench/compare.ts) measures as a peer,
# when the pinned version is missing: `go install github.com/mochi-mqtt/server/v2/cmd@<version>`
# from the Go module proxy. Its program is named `cmd`, so it is built into a temporary GOBIN and
# copied to $(go env GOPATH)/bin/mochi, where bench/lib/compare-brokers.ts looks (MOCHI=/path
# overrides). The installed version is read back from the binary (`go version -m`), so later calls
# return at once. Needs Go 1.21 or newer (Mochi's go.mod); Debian 12's golang-go is 1.19, so a
# missing Go is reported, not installed.
set -euo pipefail
version=v2.7.9
module=github.com/mochi-mqtt/server/v2
if ! command -v go >/dev/null 2>&1; then
  echo "ensure-mochi: Go (1.21 or newer) is needed to build Mochi MQTT $version; none is on PATH" >&2
  exit 1
fi
gobin="$(go env GOPATH | cut -d: -f1)/bin"
bin="$gobin/mochi"
if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version([[:space:]]|$)"; then
  exit 0
fi
echo "installing: Mochi MQTT $version (go install, under a minute)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install "$module/cmd@$version"
mkdir -p "$gobin"
install -m 0755 "$tmp/cmd" "$bin"
