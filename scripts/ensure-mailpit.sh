#!/usr/bin/env bash
# Makes the SMTP server the notification tests need available: Mailpit, SMTP on 127.0.0.1:1025
# (any sender, any recipient, no authentication) and its HTTP API on 127.0.0.1:8025
# (GET /api/v1/messages, GET /api/v1/message/{ID}), where the tests read what arrived. Built with
# `go install` (through the Go module proxy) into Go's bin directory when missing or of another
# version, then started daemonized (pid file, log, SQLite database) under the state dir.
# Idempotent, and quick when the API already answers. A `go install` build has no web UI assets
# (they are built with npm in Mailpit's release process); the API does not need them.
set -euo pipefail

version=${MAILPIT_VERSION:-v1.27.11}
module=github.com/axllent/mailpit
state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/mailpit
smtp=127.0.0.1:1025
http=127.0.0.1:8025

port_open() { (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
# The API answers a message list (JSON with a "messages" array) when Mailpit is ready (node's
# fetch: curl is not among the packages a fresh machine is given).
api_up() {
  timeout 10 node --input-type=module -e "
    try {
      const r = await fetch('http://$http/api/v1/messages?limit=1', { signal: AbortSignal.timeout(3000) });
      process.exit(r.ok && Array.isArray((await r.json()).messages) ? 0 : 1);
    } catch { process.exit(1); }
  " >/dev/null 2>&1
}

if port_open 1025 && api_up; then exit 0; fi

command -v go >/dev/null 2>&1 || { echo "ensure-mailpit: Go is needed to install Mailpit (not found)" >&2; exit 1; }
bin_dir=$(go env GOBIN)
[ -n "$bin_dir" ] || bin_dir="$(go env GOPATH)/bin"
bin="$bin_dir/mailpit"

# `go version -m` names the module version a binary was built from (no network, unlike `mailpit version`).
if ! [ -x "$bin" ] || ! go version -m "$bin" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version[[:space:]]"; then
  echo "ensure-mailpit: installing Mailpit $version into $bin_dir"
  go install "$module@$version"
fi

pid_alive() { [ -f "$state/mailpit.pid" ] && kill -0 "$(cat "$state/mailpit.pid")" 2>/dev/null; }

start() {
  mkdir -p "$state"
  echo "ensure-mailpit: starting Mailpit $version (SMTP $smtp, API http://$http, database $state/mailpit.db, log $state/mailpit.log)"
  setsid nohup "$bin" --smtp "$smtp" --listen "$http" --database "$state/mailpit.db" \
    --smtp-auth-accept-any --smtp-auth-allow-insecure --disable-version-check \
    --max 5000 --log-file "$state/mailpit.log" >>"$state/mailpit.log" 2>&1 </dev/null &
  echo $! >"$state/mailpit.pid"
  starts=$((starts + 1))
}

# A Mailpit found alive but not answering may be shutting down: it is started again once it is gone.
starts=0
pid_alive || start
for _ in $(seq 1 120); do
  if port_open 1025 && api_up; then exit 0; fi
  if ! pid_alive; then
    [ "$starts" -lt 2 ] || { echo "ensure-mailpit: Mailpit exited (see $state/mailpit.log)" >&2; exit 1; }
    start
  fi
  sleep 0.25
done
echo "ensure-mailpit: Mailpit did not answer on $http and $smtp (see $state/mailpit.log)" >&2
exit 1
