#!/usr/bin/env bash
# Makes the Kafka the source tests need available on 127.0.0.1:9092: one Apache Kafka node in
# KRaft mode (combined broker and controller, controller on 9093), run from the jars on Maven
# Central with Debian's Java 17, since no release tarball can be fetched here. The broker's
# runtime classpath is resolved once by Maven into the cache dir; the storage is formatted once
# and the node started daemonized (pid file, log) under the state dir. Idempotent, and quick when
# the broker already answers a metadata request.
set -euo pipefail

version=${KAFKA_VERSION:-4.1.1}
log4j_version=2.24.3
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spindle/kafka-$version
state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/kafka
repo=$(cd "$(dirname "$0")/.." && pwd)

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

# One metadata round trip with kafkajs (the client the sources use): exits 0 when the broker serves.
kafka_up() {
  (cd "$repo" && KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 10 node --input-type=module -e "
    import { Kafka, logLevel } from 'kafkajs';
    const admin = new Kafka({ brokers: ['127.0.0.1:9092'], logLevel: logLevel.NOTHING, connectionTimeout: 1000,
      retry: { retries: 0 } }).admin();
    try { await admin.connect(); await admin.fetchTopicMetadata({ topics: [] }); process.exit(0); } catch { process.exit(1); }
  " >/dev/null 2>&1)
}
port_open() { (exec 3<>/dev/tcp/127.0.0.1/9092) 2>/dev/null; }

if port_open && kafka_up; then exit 0; fi

# Java 17 (Kafka 4.x brokers need it) and Maven, from Debian's packages.
need=()
java_major=$(java -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); print v[1]; exit }' || true)
[ "${java_major:-0}" -ge 17 ] 2>/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  echo "ensure-kafka: installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The broker's runtime classpath: kafka_2.13 and its dependencies, plus the slf4j binding to log4j2
# (the release tarball ships it; without it the broker logs nothing).
if [ ! -f "$cache/libs/.complete" ]; then
  echo "ensure-kafka: resolving kafka_2.13 $version and its dependencies from Maven Central into $cache/libs"
  mkdir -p "$cache"
  rm -rf "$cache/libs"
  cat >"$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>spindle</groupId><artifactId>kafka-runtime</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$log4j_version</version></dependency>
  </dependencies>
</project>
POM
  mvn -q -B -f "$cache/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$cache/libs" >"$cache/mvn.log" 2>&1 ||
    { echo "ensure-kafka: Maven could not resolve Kafka (see $cache/mvn.log)" >&2; exit 1; }
  touch "$cache/libs/.complete"
fi
classpath="$cache/libs/*"

pid_alive() { [ -f "$state/kafka.pid" ] && kill -0 "$(cat "$state/kafka.pid")" 2>/dev/null; }

if ! pid_alive; then
  mkdir -p "$state/data"
  cat >"$state/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
advertised.listeners=PLAINTEXT://127.0.0.1:9092
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$state/data
num.partitions=1
offsets.topic.num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
  cat >"$state/log4j2.yaml" <<LOG
Configuration:
  Appenders:
    File:
      name: FILE
      fileName: $state/server.log
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: FILE
LOG
  java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true -Dlog4j2.configurationFile="$state/log4j2.yaml")
  if [ ! -f "$state/data/meta.properties" ]; then
    # A cluster id is 16 random bytes in URL-safe base64 without padding (Kafka's Uuid).
    cluster_id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
    java "${java_opts[@]}" -cp "$classpath" kafka.tools.StorageTool format --standalone \
      --cluster-id "$cluster_id" --config "$state/server.properties" >"$state/format.log" 2>&1 ||
      { echo "ensure-kafka: formatting the storage failed (see $state/format.log)" >&2; exit 1; }
  fi
  echo "ensure-kafka: starting Kafka $version on 127.0.0.1:9092 (log $state/server.log)"
  setsid nohup java "${java_opts[@]}" -cp "$classpath" kafka.Kafka "$state/server.properties" \
    >"$state/stdout.log" 2>&1 </dev/null &
  echo $! >"$state/kafka.pid"
fi

for _ in $(seq 1 120); do
  if port_open && kafka_up; then exit 0; fi
  pid_alive || { echo "ensure-kafka: Kafka exited (see $state/server.log and $state/stdout.log)" >&2; exit 1; }
  sleep 0.5
done
echo "ensure-kafka: Kafka did not answer a metadata request on 127.0.0.1:9092 (see $state/server.log)" >&2
exit 1
