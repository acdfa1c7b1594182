#!/usr/bin/env bash
# Makes the Redis the source tests need available on 127.0.0.1:6379: installs Debian's
# redis-server when missing and, when nothing answers PING there, starts one daemonized with its
# own config, data dir, pid file and log under the state dir (no systemd here). Idempotent, and
# quick when Redis already answers.
set -euo pipefail

state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/redis
port=6379

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  echo "ensure-redis: installing redis-server"
  "${sudo[@]}" apt-get update -qq
  # The package's own service start fails without systemd; that is fine, we start it below.
  "${sudo[@]}" apt-get install -y -qq redis-server redis-tools >/dev/null
fi

redis_up() { [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; }
redis_up && exit 0

echo "ensure-redis: starting redis-server on 127.0.0.1:$port (log $state/redis.log)"
mkdir -p "$state"
cat >"$state/redis.conf" <<CONF
bind 127.0.0.1
port $port
daemonize yes
pidfile $state/redis.pid
logfile $state/redis.log
dir $state
save ""
appendonly no
CONF
redis-server "$state/redis.conf"
for _ in $(seq 1 50); do redis_up && break; sleep 0.1; done
redis_up || { echo "ensure-redis: Redis did not answer PING (see $state/redis.log)" >&2; exit 1; }
