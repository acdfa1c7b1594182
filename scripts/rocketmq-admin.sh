#!/usr/bin/env bash
# Runs RocketMQ's mqadmin (org.apache.rocketmq.tools) from the classpath scripts/ensure-rocketmq.sh
# resolved, e.g. to create a topic or consumer group for a test (the gRPC clients cannot):
#   scripts/rocketmq-admin.sh updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t t1 -a +message.type=NORMAL
#   scripts/rocketmq-admin.sh updateSubGroup -n 127.0.0.1:9876 -c DefaultCluster -g g1
set -euo pipefail
version=${ROCKETMQ_VERSION:-5.5.0}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spindle/rocketmq-$version
state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/rocketmq
[ -f "$cache/libs/.complete" ] || { echo "rocketmq-admin: run scripts/ensure-rocketmq.sh first" >&2; exit 1; }
mkdir -p "$state/home"
export ROCKETMQ_HOME="$state/home"
exec java -Xmx128m -XX:+UseG1GC -Duser.home="$state" -cp "$cache/libs/*" org.apache.rocketmq.tools.command.MQAdminStartup "$@"
