#!/usr/bin/env bash
# Makes the RabbitMQ the command tests need available on 127.0.0.1:5672 (guest/guest, vhost /):
# installs Debian's rabbitmq-server when missing and, when nothing accepts AMQP there, starts one
# node detached (no systemd here) with its data, logs and Erlang cookie under the state dir.
# Idempotent, and quick when RabbitMQ already answers.
#   ensure-rabbitmq.sh        install if needed, start if not running
#   ensure-rabbitmq.sh stop   stop the node this script started (the "server down" tests)
set -euo pipefail

state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/rabbitmq
port=5672

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

# The node's own environment: everything under the state dir, so no system path or service is used.
export RABBITMQ_MNESIA_BASE="$state/mnesia"
export RABBITMQ_LOG_BASE="$state/log"
export RABBITMQ_NODENAME=spindle@localhost
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$port
export RABBITMQ_PID_FILE="$state/rabbitmq.pid"
export RABBITMQ_ENABLED_PLUGINS_FILE="$state/enabled_plugins"
export RABBITMQ_CONFIG_FILE="$state/rabbitmq"
export HOME="$state/home"
# Debian's /usr/sbin wrappers switch to the rabbitmq user (whose cookie and dirs are not ours):
# run the node and its tools as the caller, from the package's own bin directory.
bin=/usr/lib/rabbitmq/bin

port_open() { (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; }
node_up() { timeout 20 "$bin/rabbitmq-diagnostics" -q -n "$RABBITMQ_NODENAME" ping >/dev/null 2>&1; }

if [ "${1:-}" = stop ]; then
  if node_up; then
    echo "ensure-rabbitmq: stopping $RABBITMQ_NODENAME"
    "$bin/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" stop "$RABBITMQ_PID_FILE" >/dev/null
  fi
  exit 0
fi

if [ ! -x "$bin/rabbitmq-server" ]; then
  echo "ensure-rabbitmq: installing rabbitmq-server"
  "${sudo[@]}" apt-get update -qq
  # The package's own service start fails without systemd; that is fine, we start it below.
  "${sudo[@]}" apt-get install -y -qq rabbitmq-server >/dev/null || true
  [ -x "$bin/rabbitmq-server" ] || { echo "ensure-rabbitmq: rabbitmq-server did not install" >&2; exit 1; }
fi

port_open && exit 0
mkdir -p "$state/mnesia" "$state/log" "$state/home"

echo "ensure-rabbitmq: starting $RABBITMQ_NODENAME on 127.0.0.1:$port (logs in $state/log)"
# guest may log in only from loopback (the default): the tests connect to 127.0.0.1.
[ -f "$state/rabbitmq.conf" ] || printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users.guest = true\n' "$port" >"$state/rabbitmq.conf"
[ -f "$state/enabled_plugins" ] || echo '[].' >"$state/enabled_plugins"
"$bin/rabbitmq-server" -detached
for _ in $(seq 1 120); do port_open && break; sleep 0.5; done
port_open || { echo "ensure-rabbitmq: nothing accepts AMQP on 127.0.0.1:$port (see $state/log)" >&2; exit 1; }
