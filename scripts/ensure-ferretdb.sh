#!/usr/bin/env bash
# Makes the MongoDB-compatible server the source tests need available on 127.0.0.1:27017:
# FerretDB v1 over its SQLite backend (no MongoDB server is packaged for Debian). It is built
# once with Go from its module source (fetched through the Go module proxy) into the cache dir:
# `go install` cannot be used, since FerretDB panics at start unless build/version/version.txt is
# filled in, which its release process does. Then started daemonized (pid file, log, SQLite files)
# under the state dir. Idempotent, and quick when the server already answers a ping.
set -euo pipefail

version=${FERRETDB_VERSION:-v1.24.2}
module=github.com/FerretDB/FerretDB
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spindle/ferretdb-$version
state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/ferretdb
repo=$(cd "$(dirname "$0")/.." && pwd)

# One ping with the MongoDB driver the sources use: exits 0 when the server answers.
ferret_up() {
  (cd "$repo" && timeout 10 node --input-type=module -e "
    import { MongoClient } from 'mongodb';
    const client = new MongoClient('mongodb://127.0.0.1:27017/', { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
    try { await client.db('admin').command({ ping: 1 }); process.exit(0); } catch { process.exit(1); }
  " >/dev/null 2>&1)
}
port_open() { (exec 3<>/dev/tcp/127.0.0.1/27017) 2>/dev/null; }

if port_open && ferret_up; then exit 0; fi

if [ ! -x "$cache/ferretdb" ]; then
  command -v go >/dev/null 2>&1 || { echo "ensure-ferretdb: Go is needed to build FerretDB (not found)" >&2; exit 1; }
  echo "ensure-ferretdb: building FerretDB $version into $cache"
  src_dir=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -d "$src_dir" ] || { echo "ensure-ferretdb: could not download $module@$version" >&2; exit 1; }
  build=$(mktemp -d)
  trap 'rm -rf "$build"' EXIT
  cp -r "$src_dir/." "$build/"
  chmod -R u+w "$build"
  echo "$version" >"$build/build/version/version.txt"
  mkdir -p "$cache"
  (cd "$build" && go build -o "$cache/ferretdb.tmp" ./cmd/ferretdb)
  mv "$cache/ferretdb.tmp" "$cache/ferretdb"
fi

pid_alive() { [ -f "$state/ferretdb.pid" ] && kill -0 "$(cat "$state/ferretdb.pid")" 2>/dev/null; }

if ! pid_alive; then
  mkdir -p "$state/data"
  echo "ensure-ferretdb: starting FerretDB $version (SQLite in $state/data) on 127.0.0.1:27017 (log $state/ferretdb.log)"
  setsid nohup "$cache/ferretdb" --handler=sqlite --sqlite-url="file:$state/data/" \
    --listen-addr=127.0.0.1:27017 --state-dir="$state" --debug-addr=- --telemetry=disable \
    --log-level=warn >"$state/ferretdb.log" 2>&1 </dev/null &
  echo $! >"$state/ferretdb.pid"
fi

for _ in $(seq 1 60); do
  if port_open && ferret_up; then exit 0; fi
  pid_alive || { echo "ensure-ferretdb: FerretDB exited (see $state/ferretdb.log)" >&2; exit 1; }
  sleep 0.25
done
echo "ensure-ferretdb: FerretDB did not answer a ping on 127.0.0.1:27017 (see $state/ferretdb.log)" >&2
exit 1
