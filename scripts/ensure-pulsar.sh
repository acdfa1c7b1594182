#!/usr/bin/env bash
# Makes the Pulsar the Pulsar command tests need available: Apache Pulsar in standalone mode
# (broker, one embedded BookKeeper bookie, metadata in RocksDB; no functions worker, no stream
# storage) with the binary protocol on 127.0.0.1:6650 and HTTP (admin REST API and the WebSocket
# API under /ws/v2) on 127.0.0.1:8090 (not Pulsar's default 8080, which RocketMQ's proxy uses).
# Run from the jars on Maven Central with Debian's Java 17, since no release tarball can be
# fetched here: Maven resolves pulsar-broker's runtime classpath once into the cache dir, pinned
# by the Pulsar parent POM's dependency management (without it Maven mixes OpenTelemetry versions
# and the broker fails with NoSuchMethodError), and the node starts daemonized (pid file, log)
# under the state dir. Idempotent, and quick when the admin API already lists public/default.
# Stop with: scripts/ensure-pulsar.sh stop
set -euo pipefail

version=${PULSAR_VERSION:-4.2.4}
log4j_version=2.24.3
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spindle/pulsar-$version
state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/pulsar

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid_alive() { [ -f "$state/pulsar.pid" ] && kill -0 "$(cat "$state/pulsar.pid")" 2>/dev/null; }
# The admin API answers and the standalone setup has created the default namespace.
pulsar_up() {
  port_open 6650 && timeout 10 node -e "
    fetch('http://127.0.0.1:8090/admin/v2/namespaces/public').then((r) => r.ok ? r.json() : [])
      .then((ns) => process.exit(ns.includes('public/default') ? 0 : 1), () => process.exit(1));
  " >/dev/null 2>&1
}

if [ "${1:-}" = stop ]; then
  if pid_alive; then
    kill "$(cat "$state/pulsar.pid")"
    for _ in $(seq 1 60); do pid_alive || break; sleep 0.5; done
  fi
  rm -f "$state/pulsar.pid"
  exit 0
fi

if pulsar_up; then exit 0; fi

# Java 17 and Maven, from Debian's packages.
need=()
java_major=$(java -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); print v[1]; exit }' || true)
[ "${java_major:-0}" -ge 17 ] 2>/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  echo "ensure-pulsar: installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The runtime classpath: pulsar-broker (which brings BookKeeper, ZooKeeper, RocksDB and the
# WebSocket service) plus the slf4j binding to log4j2.
if [ ! -f "$cache/libs/.complete" ]; then
  echo "ensure-pulsar: resolving pulsar-broker $version and its dependencies from Maven Central into $cache/libs"
  mkdir -p "$cache"
  rm -rf "$cache/libs"
  cat >"$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>spindle</groupId><artifactId>pulsar-runtime</artifactId><version>1</version><packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>
      <dependency><groupId>org.apache.pulsar</groupId><artifactId>pulsar</artifactId><version>$version</version><type>pom</type><scope>import</scope></dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency><groupId>org.apache.pulsar</groupId><artifactId>pulsar-broker</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$log4j_version</version></dependency>
  </dependencies>
</project>
POM
  mvn -q -B -f "$cache/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$cache/libs" >"$cache/mvn.log" 2>&1 ||
    { echo "ensure-pulsar: Maven could not resolve Pulsar (see $cache/mvn.log)" >&2; exit 1; }
  touch "$cache/libs/.complete"
fi
classpath="$cache/libs/*"

if ! pid_alive; then
  for p in 6650 8090; do
    port_open $p && { echo "ensure-pulsar: port $p is taken by another process" >&2; exit 1; }
  done
  mkdir -p "$state/data"
  cat >"$state/standalone.conf" <<PROPS
clusterName=standalone
brokerServicePort=6650
webServicePort=8090
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
webSocketServiceEnabled=true
functionsWorkerEnabled=false
transactionCoordinatorEnabled=false
dbStorage_writeCacheMaxSizeMb=32
dbStorage_readAheadCacheMaxSizeMb=32
loadBalancerOverrideBrokerNicSpeedGbps=1
numIOThreads=2
numHttpServerThreads=4
PROPS
  cat >"$state/log4j2.yaml" <<LOG
Configuration:
  Appenders:
    File:
      name: FILE
      fileName: $state/pulsar.log
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: FILE
LOG
  echo "ensure-pulsar: starting Pulsar $version standalone on 127.0.0.1:6650, HTTP 127.0.0.1:8090 (log $state/pulsar.log)"
  setsid nohup java -Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$state/log4j2.yaml" -Dpulsar.allocator.exit_on_oom=true -cp "$classpath" \
    org.apache.pulsar.PulsarStandaloneStarter -c "$state/standalone.conf" -nss -nfw -a 127.0.0.1 \
    --bookkeeper-dir "$state/data/bookkeeper" --metadata-dir "$state/data/metadata" \
    >"$state/stdout.log" 2>&1 </dev/null &
  echo $! >"$state/pulsar.pid"
fi

for _ in $(seq 1 240); do
  if pulsar_up; then exit 0; fi
  pid_alive || { echo "ensure-pulsar: Pulsar exited (see $state/pulsar.log and $state/stdout.log)" >&2; exit 1; }
  sleep 0.5
done
echo "ensure-pulsar: Pulsar did not list public/default on 127.0.0.1:8090 within 2 minutes (see $state/pulsar.log)" >&2
exit 1
