#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the OpenTelemetry tests send to, when missing: a minimal
# distribution (scripts/otelcol/: the OTLP receiver and the contrib file exporter, collector
# release v0.161.0, modules pinned by its go.mod and go.sum) built with `go build` through the Go
# module proxy into the cache dir. The tests start their own collector on free ports with a
# configuration they write, and read the file it writes (test/helpers/otelcol.ts). Idempotent, and
# quick when the binary of this source is there: the binary's name carries a hash of the source.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$here/otelcol
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spindle
hash=$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)
bin=$cache/otelcol-$hash/spindle-otelcol
link=$cache/spindle-otelcol

if ! [ -x "$bin" ]; then
  command -v go >/dev/null 2>&1 || { echo "ensure-otelcol: Go is needed to build the OpenTelemetry Collector (not found)" >&2; exit 1; }
  echo "ensure-otelcol: building the OpenTelemetry Collector (OTLP receiver, file exporter) into $bin"
  mkdir -p "$(dirname "$bin")"
  (cd "$src" && go build -trimpath -o "$bin.tmp" .)
  mv "$bin.tmp" "$bin"
fi
# The tests find the binary at one path.
ln -sfn "$bin" "$link"
