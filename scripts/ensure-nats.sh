#!/usr/bin/env bash
# Installs the nats-server the cluster runs on (each Spindle node supervises its own, see
# docs/operating/cluster.md): `go install` of a current 2.x from the Go module proxy into Go's bin
# directory, when missing or of another version. Idempotent and quick when it is there.
set -euo pipefail

version=${NATS_SERVER_VERSION:-v2.15.2}
module=github.com/nats-io/nats-server/v2

command -v go >/dev/null 2>&1 || { echo "ensure-nats: Go is needed to install nats-server (not found)" >&2; exit 1; }
bin_dir=$(go env GOBIN)
[ -n "$bin_dir" ] || bin_dir="$(go env GOPATH)/bin"
bin="$bin_dir/nats-server"
if ! [ -x "$bin" ] || ! go version -m "$bin" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version[[:space:]]"; then
  echo "ensure-nats: installing nats-server $version into $bin_dir"
  go install "$module@$version"
fi
