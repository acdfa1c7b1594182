#!/usr/bin/env bash
# Makes the RocketMQ 5 the RocketMQ command tests need available: a name server on 127.0.0.1:9876
# and a proxy in local mode (the broker runs inside the proxy's JVM, broker port 10911) serving
# the gRPC protocol of the RocketMQ 5 clients on 127.0.0.1:18081 (ROCKETMQ_GRPC_PORT; remoting on
# 8091), so the ports of `make run` and `make cluster-demo` (8080..8082) stay free. Run from the
# jars on Maven Central with Debian's Java 17, since no release zip can be fetched here: Maven
# resolves the runtime classpath once into the cache dir, and both JVMs start daemonized (pid
# files, logs) under the state dir. Idempotent, and quick when both already listen.
#
# The gRPC clients cannot create topics or consumer groups (the proxy answers TOPIC_NOT_FOUND and
# "group not found"), so this script creates the ones named in ROCKETMQ_TOPICS and ROCKETMQ_GROUPS
# (space separated; defaults below) with mqadmin; make more with scripts/rocketmq-admin.sh, e.g.
#   scripts/rocketmq-admin.sh updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t t1 -a +message.type=NORMAL
#   scripts/rocketmq-admin.sh updateSubGroup -n 127.0.0.1:9876 -c DefaultCluster -g g1
# Stop with: scripts/ensure-rocketmq.sh stop
set -euo pipefail

version=${ROCKETMQ_VERSION:-5.5.0}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spindle/rocketmq-$version
state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/rocketmq
topics=${ROCKETMQ_TOPICS:-spindle-test}
groups=${ROCKETMQ_GROUPS:-spindle-test-group}
grpc=${ROCKETMQ_GRPC_PORT:-18081}

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid_alive() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }

if [ "${1:-}" = stop ]; then
  for p in proxy namesrv; do
    if pid_alive $p; then
      kill "$(cat "$state/$p.pid")"
      for _ in $(seq 1 60); do pid_alive $p || break; sleep 0.5; done
    fi
    rm -f "$state/$p.pid"
  done
  exit 0
fi

# Everything created and both servers listening: nothing to do.
created() { for t in $topics; do [ -f "$state/created/topic-$t" ] || return 1; done
  for g in $groups; do [ -f "$state/created/group-$g" ] || return 1; done; }
if pid_alive namesrv && pid_alive proxy && port_open 9876 && port_open "$grpc" && created; then exit 0; fi

# A proxy started with another gRPC port (an older version of this script used 8081) is stopped,
# to be started again below on this one.
if pid_alive proxy && ! grep -q "\"grpcServerPort\":$grpc," "$state/proxy.json" 2>/dev/null; then
  echo "ensure-rocketmq: restarting the proxy on $grpc"
  kill "$(cat "$state/proxy.pid")"
  for _ in $(seq 1 60); do pid_alive proxy || break; sleep 0.5; done
  rm -f "$state/proxy.pid"
fi

# Java 17 and Maven, from Debian's packages.
need=()
java_major=$(java -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); print v[1]; exit }' || true)
[ "${java_major:-0}" -ge 17 ] 2>/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  echo "ensure-rocketmq: installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The runtime classpath: name server, broker and proxy (which brings rocketmq-tools for mqadmin).
if [ ! -f "$cache/libs/.complete" ]; then
  echo "ensure-rocketmq: resolving RocketMQ $version (namesrv, broker, proxy) from Maven Central into $cache/libs"
  mkdir -p "$cache"
  rm -rf "$cache/libs"
  cat >"$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>spindle</groupId><artifactId>rocketmq-runtime</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-namesrv</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-proxy</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
  mvn -q -B -f "$cache/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$cache/libs" >"$cache/mvn.log" 2>&1 ||
    { echo "ensure-rocketmq: Maven could not resolve RocketMQ (see $cache/mvn.log)" >&2; exit 1; }
  touch "$cache/libs/.complete"
fi
classpath="$cache/libs/*"

# RocketMQ insists on ROCKETMQ_HOME (it reads nothing from it here) and logs under ${user.home}/logs.
mkdir -p "$state/home" "$state/store" "$state/created"
export ROCKETMQ_HOME="$state/home"
base_opts=(-XX:+UseG1GC -Djava.awt.headless=true -Duser.home="$state")

if ! pid_alive namesrv; then
  for p in 9876; do port_open $p && { echo "ensure-rocketmq: port $p is taken by another process" >&2; exit 1; }; done
  cat >"$state/namesrv.properties" <<PROPS
listenPort=9876
bindAddress=127.0.0.1
PROPS
  echo "ensure-rocketmq: starting the RocketMQ $version name server on 127.0.0.1:9876 (logs $state/logs)"
  setsid nohup java -Xms64m -Xmx192m -Xmn48m "${base_opts[@]}" -cp "$classpath" \
    org.apache.rocketmq.namesrv.NamesrvStartup -c "$state/namesrv.properties" \
    >"$state/namesrv.out" 2>&1 </dev/null &
  echo $! >"$state/namesrv.pid"
fi

if ! pid_alive proxy; then
  for p in 8091 "$grpc" 10911; do port_open $p && { echo "ensure-rocketmq: port $p is taken by another process" >&2; exit 1; }; done
  cat >"$state/broker.conf" <<PROPS
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
namesrvAddr=127.0.0.1:9876
brokerIP1=127.0.0.1
bindAddress=127.0.0.1
listenPort=10911
storePathRootDir=$state/store
storePathCommitLog=$state/store/commitlog
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
flushDiskType=ASYNC_FLUSH
mappedFileSizeCommitLog=67108864
mappedFileSizeConsumeQueue=300000
fileReservedTime=24
registerNameServerPeriod=10000
PROPS
  cat >"$state/proxy.json" <<JSON
{"rocketMQClusterName":"DefaultCluster","namesrvAddr":"127.0.0.1:9876","grpcServerPort":$grpc,"remotingListenPort":8091}
JSON
  mkdir -p "$state/logs/rocketmqlogs"
  touch "$state/logs/rocketmqlogs/broker.log"
  wc -l <"$state/logs/rocketmqlogs/broker.log" >"$state/broker.log.mark"
  echo "ensure-rocketmq: starting the RocketMQ $version proxy with its broker on 127.0.0.1:$grpc (logs $state/logs)"
  setsid nohup java -Xms192m -Xmx384m -Xmn96m -XX:MaxDirectMemorySize=256m "${base_opts[@]}" -cp "$classpath" \
    org.apache.rocketmq.proxy.ProxyStartup -pm local -pc "$state/proxy.json" -bc "$state/broker.conf" \
    >"$state/proxy.out" 2>&1 </dev/null &
  echo $! >"$state/proxy.pid"
fi

for _ in $(seq 1 240); do
  port_open 9876 && port_open "$grpc" && break
  pid_alive namesrv || { echo "ensure-rocketmq: the name server exited (see $state/namesrv.out, $state/logs)" >&2; exit 1; }
  pid_alive proxy || { echo "ensure-rocketmq: the proxy exited (see $state/proxy.out, $state/logs)" >&2; exit 1; }
  sleep 0.5
done
port_open "$grpc" || { echo "ensure-rocketmq: the proxy did not listen on 127.0.0.1:$grpc (see $state/logs)" >&2; exit 1; }

# Clients get no route until the broker has registered with the name server (10-20 s after start;
# over a minute once, on a machine busy with the other servers starting: 3 minutes at most here).
registered() { tail -n +"$(( $(cat "$state/broker.log.mark" 2>/dev/null || echo 0) + 1 ))" "$state/logs/rocketmqlogs/broker.log" 2>/dev/null |
  grep -q "Registering current broker to name server completed"; }
for _ in $(seq 1 360); do
  registered && break
  pid_alive proxy || { echo "ensure-rocketmq: the proxy exited (see $state/proxy.out, $state/logs)" >&2; exit 1; }
  sleep 0.5
done
registered || { echo "ensure-rocketmq: the broker did not register with the name server (see $state/logs/rocketmqlogs/broker.log)" >&2; exit 1; }

# Topics and groups, made through the name server once the broker has registered with it (the
# first attempt may fail while it registers; mqadmin is one JVM start, ~4 s, per call).
admin() { java -Xmx128m "${base_opts[@]}" -cp "$classpath" org.apache.rocketmq.tools.command.MQAdminStartup "$@"; }
make_one() { # kind name mqadmin-args...
  local kind=$1 name=$2; shift 2
  [ -f "$state/created/$kind-$name" ] && return 0
  for _ in $(seq 1 20); do
    if admin "$@" >"$state/admin.log" 2>&1 && grep -q success "$state/admin.log"; then
      touch "$state/created/$kind-$name"; return 0
    fi
    sleep 1
  done
  echo "ensure-rocketmq: could not create $kind $name (see $state/admin.log)" >&2; exit 1
}
for t in $topics; do make_one topic "$t" updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t "$t" -a +message.type=NORMAL; done
for g in $groups; do make_one group "$g" updateSubGroup -n 127.0.0.1:9876 -c DefaultCluster -g "$g"; done
exit 0
