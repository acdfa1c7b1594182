#!/usr/bin/env bash
# `make cluster-demo`: three Spindle nodes on this machine as one cluster, each supervising its own
# nats-server (routes between the three), until Ctrl-C. Starts from fresh data directories
# (<dir>/node-N, removed first), waits until every node answers /health and node-1's
# /public/cluster lists three running nodes, prints how to try it, and on Ctrl-C stops the nodes,
# which stop their nats-servers (a node that exits before is reported; the others go on).
#
# Node N (1..3) listens on 127.0.0.1 (CLUSTER_DEMO_HOST) with MQTT/TCP on CLUSTER_DEMO_MQTT_PORT+N-1
# (1883..1885), the admin API on CLUSTER_DEMO_ADMIN_PORT+N-1 (8080..8082), its nats-server's
# clients on CLUSTER_DEMO_NATS_PORT+N-1 (4222..4224) and routes on CLUSTER_DEMO_ROUTE_PORT+N-1
# (6222..6224); WebSocket off. The data (and each node's log, node-N.log) is under
# CLUSTER_DEMO_DIR (./data/cluster-demo). The admin password is SPINDLE_ADMIN_PASSWORD, or a
# generated demo-password-<random>; SPINDLE_WORKERS defaults to 1 per node. Other SPINDLE_*
# variables pass through to the three nodes.
set -euo pipefail
cd "$(dirname "$0")/.."

host=${CLUSTER_DEMO_HOST:-127.0.0.1}
mqtt_base=${CLUSTER_DEMO_MQTT_PORT:-1883}
admin_base=${CLUSTER_DEMO_ADMIN_PORT:-8080}
nats_base=${CLUSTER_DEMO_NATS_PORT:-4222}
route_base=${CLUSTER_DEMO_ROUTE_PORT:-6222}
dir=${CLUSTER_DEMO_DIR:-./data/cluster-demo}
timeout_s=${CLUSTER_DEMO_TIMEOUT:-90}
password=${SPINDLE_ADMIN_PASSWORD:-demo-password-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}
nodes=(1 2 3)

# `upgrade` (make cluster-demo ARGS=upgrade): a rolling upgrade under load instead (bench/cluster-upgrade.ts
# starts the three nodes with the same ports and settings, drains, stops and starts each in turn,
# prints the figures and writes them to bench/results/cluster-upgrade.md), then exits.
mode=${1:-run}
case "$mode" in run|upgrade) ;; *) echo "cluster-demo: unknown step '$mode' (run, upgrade)" >&2; exit 2 ;; esac

./scripts/ensure-nats.sh
bin_dir=$(go env GOBIN)
[ -n "$bin_dir" ] || bin_dir="$(go env GOPATH)/bin"
nats_server=${SPINDLE_CLUSTER_NATS_SERVER:-$bin_dir/nats-server}

port_of() { echo $(($1 + $2 - 1)); }

# Every port must be free: a node that cannot bind would stop the demo half-way.
busy=()
for n in "${nodes[@]}"; do
  for base in "$mqtt_base" "$admin_base" "$nats_base" "$route_base"; do
    p=$(port_of "$base" "$n")
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy+=("$p"); fi
  done
done
if [ ${#busy[@]} -gt 0 ]; then
  echo "cluster-demo: ports in use: ${busy[*]}. Stop what listens there, or move the demo, e.g." >&2
  echo "  CLUSTER_DEMO_MQTT_PORT=11883 CLUSTER_DEMO_ADMIN_PORT=18080 CLUSTER_DEMO_NATS_PORT=14222 CLUSTER_DEMO_ROUTE_PORT=16222 make cluster-demo" >&2
  exit 1
fi

if [ "$mode" = upgrade ]; then
  export CLUSTER_DEMO_HOST="$host" CLUSTER_DEMO_MQTT_PORT="$mqtt_base" CLUSTER_DEMO_ADMIN_PORT="$admin_base" \
    CLUSTER_DEMO_NATS_PORT="$nats_base" CLUSTER_DEMO_ROUTE_PORT="$route_base" CLUSTER_DEMO_DIR="$dir" \
    SPINDLE_ADMIN_PASSWORD="$password" SPINDLE_CLUSTER_NATS_SERVER="$nats_server"
  exec node --import tsx bench/cluster-upgrade.ts
fi

mkdir -p "$dir"
pids=()
stopped=0
stop_all() {
  [ "$stopped" -eq 1 ] && return
  stopped=1
  [ ${#pids[@]} -eq 0 ] && return
  echo
  echo "cluster-demo: stopping the three nodes (each stops its nats-server)"
  # A node killed for not stopping leaves its nats-server behind: note them first.
  local nats_pids=()
  for pid in "${pids[@]}"; do
    while read -r c; do [ -n "$c" ] && nats_pids+=("$c"); done < <(pgrep -P "$pid" -x nats-server || true)
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster-demo: node process $pid did not stop within 15 s: killed" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for pid in "${nats_pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  echo "cluster-demo: stopped"
}
trap 'stop_all' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for n in "${nodes[@]}"; do
  rm -rf "$dir/node-$n" "$dir/node-$n.log"
  peers=()
  for m in "${nodes[@]}"; do
    [ "$m" -eq "$n" ] || peers+=("\"127.0.0.1:$(port_of "$route_base" "$m")\"")
  done
  addresses="[$(IFS=,; echo "${peers[*]}")]"
  # Its own session (setsid): Ctrl-C reaches the script only, which stops the nodes in order.
  env SPINDLE_NODE_NAME="node-$n" \
    SPINDLE_WORKERS="${SPINDLE_WORKERS:-1}" \
    SPINDLE_DATA_DIR="$dir/node-$n" \
    SPINDLE_MQTT_HOST="$host" \
    SPINDLE_MQTT_TCP_PORT="$(port_of "$mqtt_base" "$n")" \
    SPINDLE_MQTT_WS_ENABLED=false \
    SPINDLE_ADMIN_ENABLED=true \
    SPINDLE_ADMIN_HOST="$host" \
    SPINDLE_ADMIN_PORT="$(port_of "$admin_base" "$n")" \
    SPINDLE_ADMIN_PASSWORD="$password" \
    SPINDLE_CLUSTER_ENABLED=true \
    SPINDLE_CLUSTER_NATS_URL= \
    SPINDLE_CLUSTER_NATS_SERVER="$nats_server" \
    SPINDLE_CLUSTER_CLIENT_PORT="$(port_of "$nats_base" "$n")" \
    SPINDLE_CLUSTER_LOCAL_ADDRESS="127.0.0.1:$(port_of "$route_base" "$n")" \
    SPINDLE_CLUSTER_ADDRESSES="$addresses" \
    setsid ./bin/spindle >"$dir/node-$n.log" 2>&1 &
  pids+=("$!")
  echo "cluster-demo: node-$n started (pid $!): MQTT $host:$(port_of "$mqtt_base" "$n"), admin http://$host:$(port_of "$admin_base" "$n"), NATS 127.0.0.1:$(port_of "$nats_base" "$n"), routes 127.0.0.1:$(port_of "$route_base" "$n") -> $addresses; log $dir/node-$n.log"
done

fail() {
  echo "cluster-demo: $1" >&2
  for n in "${nodes[@]}"; do
    echo "--- last lines of $dir/node-$n.log" >&2
    tail -n 15 "$dir/node-$n.log" >&2 || true
  done
  exit 1
}

alive() {
  for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2>/dev/null || fail "node-${nodes[$i]} exited"
  done
}

deadline=$((SECONDS + timeout_s))
for n in "${nodes[@]}"; do
  url="http://127.0.0.1:$(port_of "$admin_base" "$n")/health"
  until curl -fsS -o /dev/null "$url" 2>/dev/null; do
    alive
    [ $SECONDS -lt $deadline ] || fail "node-$n did not answer $url within ${timeout_s} s"
    sleep 0.5
  done
  echo "cluster-demo: node-$n healthy ($url)"
done

cluster_url="http://127.0.0.1:$(port_of "$admin_base" 1)/public/cluster"
running() {
  curl -fsS "$cluster_url" 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      try { console.log(JSON.parse(s).nodes.filter((n) => n.status === "running").length); } catch { console.log(0); }
    });'
}
until [ "$(running)" = 3 ]; do
  alive
  [ $SECONDS -lt $deadline ] || fail "$cluster_url did not list three running nodes within ${timeout_s} s: $(curl -fsS "$cluster_url" 2>&1)"
  sleep 0.5
done
echo "cluster-demo: $cluster_url: $(curl -fsS "$cluster_url")"

cat <<EOF

The cluster runs: three nodes, one broker. Admin user admin, password $password
Try it (in another terminal):
  mosquitto_sub -h $host -p $(port_of "$mqtt_base" 2) -t 'demo/#' -v          # a subscriber on node-2
  mosquitto_pub -h $host -p $(port_of "$mqtt_base" 1) -t demo/hello -m 'from node-1'   # published on node-1
  curl http://$host:$(port_of "$admin_base" 1)/public/cluster
  curl -u admin:$password http://$host:$(port_of "$admin_base" 3)/api/cluster/nodes
Stop one node to see it marked down on the others: kill ${pids[2]} (node-3).
Ctrl-C stops the three.
EOF

# Until Ctrl-C, or until every node has exited (one that exits is reported, the others go on).
declare -A gone=()
while [ ${#gone[@]} -lt ${#pids[@]} ]; do
  for i in "${!pids[@]}"; do
    if [ -z "${gone[$i]:-}" ] && ! kill -0 "${pids[$i]}" 2>/dev/null; then
      gone[$i]=1
      echo "cluster-demo: node-${nodes[$i]} exited (see $dir/node-${nodes[$i]}.log)" >&2
    fi
  done
  sleep 1
done
echo "cluster-demo: every node exited" >&2
exit 1
