#!/usr/bin/env bash
# Makes the Nacos the Nacos command tests need available: one Nacos 3 server in standalone mode
# (embedded Derby, server and console merged in one JVM) with the HTTP open API on
# 127.0.0.1:8848/nacos, gRPC on 9848/9849 and the console on 18080 (not Nacos's default 8080,
# which RocketMQ's proxy uses), run with Debian's Java 17.
#
# The Nacos server is NOT on Maven Central (only nacos-client/api/common and the 0.8.0 server
# modules of 2019 are; nacos-console, nacos-server, nacos-bootstrap are not), no release zip can
# be fetched here and GitHub is unreachable, so the server jar is built from a Nacos source tree
# with Maven (its dependencies all resolve from Maven Central): set NACOS_SRC to a source tree, or
# to a git directory holding tag $NACOS_REF (e.g. a mirror of github.com/alibaba/nacos), or
# NACOS_SERVER_JAR to a built nacos-server.jar. Without one of them (and no jar built before in the
# cache dir) this script exits 1 saying so. The build takes ~2 min on 2 cores, once.
# Idempotent, and quick when the server already reports UP. Stop with: scripts/ensure-nacos.sh stop
set -euo pipefail

ref=${NACOS_REF:-3.0.3}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/spindle/nacos-$ref
state=${SPINDLE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/state}/nacos
jar=${NACOS_SERVER_JAR:-$cache/nacos-server.jar}

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid_alive() { [ -f "$state/nacos.pid" ] && kill -0 "$(cat "$state/nacos.pid")" 2>/dev/null; }
nacos_up() {
  port_open 8848 && port_open 9848 && timeout 10 node -e "
    fetch('http://127.0.0.1:8848/nacos/v1/ns/operator/metrics').then((r) => r.ok ? r.json() : {})
      .then((m) => process.exit(m.status === 'UP' ? 0 : 1), () => process.exit(1));
  " >/dev/null 2>&1
}

if [ "${1:-}" = stop ]; then
  if pid_alive; then
    kill "$(cat "$state/nacos.pid")"
    for _ in $(seq 1 60); do pid_alive || break; sleep 0.5; done
  fi
  rm -f "$state/nacos.pid"
  exit 0
fi

if nacos_up; then exit 0; fi

# Java 17 and Maven, from Debian's packages.
need=()
java_major=$(java -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); print v[1]; exit }' || true)
[ "${java_major:-0}" -ge 17 ] 2>/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  echo "ensure-nacos: installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -f "$jar" ]; then
  src=${NACOS_SRC:-}
  if [ -z "$src" ]; then
    echo "ensure-nacos: no Nacos server: it is not published on Maven Central and GitHub is unreachable;" \
      "set NACOS_SRC to a Nacos source tree or git directory (tag $ref), or NACOS_SERVER_JAR to a built nacos-server.jar" >&2
    exit 1
  fi
  mkdir -p "$cache"
  rm -rf "$cache/src"
  mkdir -p "$cache/src"
  if [ -f "$src/pom.xml" ]; then
    cp -a "$src/." "$cache/src/"
  elif git --git-dir="$src" rev-parse --verify -q "$ref^{commit}" >/dev/null; then
    git --git-dir="$src" archive "$ref" | tar -x -C "$cache/src"
  else
    echo "ensure-nacos: NACOS_SRC=$src is neither a source tree (pom.xml) nor a git directory with $ref" >&2
    exit 1
  fi
  echo "ensure-nacos: building the Nacos server $ref from $src with Maven (log $cache/build.log, ~2 min)"
  (cd "$cache/src" && nice -n 10 mvn -B -DskipTests -Dcheckstyle.skip=true -Drat.skip=true \
    -Dmaven.javadoc.skip=true -Dpmd.skip=true -Djacoco.skip=true -Dmaven.source.skip=true \
    -Prelease-nacos -pl bootstrap -am package >"$cache/build.log" 2>&1) ||
    { echo "ensure-nacos: the Nacos build failed (see $cache/build.log)" >&2; exit 1; }
  cp "$cache/src/bootstrap/target/nacos-server.jar" "$cache/nacos-server.jar"
  cp "$cache/src/distribution/conf/nacos-logback.xml" "$cache/nacos-logback.xml"
  rm -rf "$cache/src"
fi

if ! pid_alive; then
  for p in 8848 9848 9849 7848 18080; do
    port_open $p && { echo "ensure-nacos: port $p is taken by another process" >&2; exit 1; }
  done
  mkdir -p "$state/conf"
  logback="$(dirname "$jar")/nacos-logback.xml"
  [ -f "$logback" ] || logback="$cache/nacos-logback.xml"
  [ -f "$logback" ] && cp "$logback" "$state/conf/nacos-logback.xml"
  # The token secret (console logins) must be set for Nacos 3 to start; auth stays off for the APIs.
  [ -f "$state/conf/secret" ] || head -c48 /dev/urandom | base64 -w0 >"$state/conf/secret"
  cat >"$state/conf/application.properties" <<PROPS
nacos.server.main.port=8848
nacos.server.contextPath=/nacos
nacos.console.port=18080
nacos.console.contextPath=
nacos.console.remote.server.context-path=/nacos
nacos.deployment.type=merged
nacos.inetutils.ip-address=127.0.0.1
nacos.inetutils.prefer-hostname-over-ip=false
server.error.include-message=ALWAYS
server.tomcat.accesslog.enabled=false
management.metrics.export.elastic.enabled=false
management.metrics.export.influx.enabled=false
nacos.naming.empty-service.auto-clean=true
nacos.security.ignore.urls=/,/error,/**/*.css,/**/*.js,/**/*.html,/**/*.map,/**/*.svg,/**/*.png,/**/*.ico,/console-ui/public/**,/v1/auth/**,/v1/console/health/**,/actuator/**,/v1/console/server/**
nacos.core.auth.system.type=nacos
nacos.core.auth.enabled=false
nacos.core.auth.admin.enabled=true
nacos.core.auth.console.enabled=true
nacos.core.auth.plugin.nacos.token.secret.key=$(cat "$state/conf/secret")
nacos.core.auth.server.identity.key=spindle
nacos.core.auth.server.identity.value=spindle
nacos.istio.mcp.server.enabled=false
nacos.k8s.sync.enabled=false
PROPS
  logging=()
  [ -f "$state/conf/nacos-logback.xml" ] && logging=(--logging.config="$state/conf/nacos-logback.xml")
  echo "ensure-nacos: starting Nacos $ref standalone on 127.0.0.1:8848 (logs $state/logs)"
  # From the state dir: Derby writes derby.log into the working directory.
  (cd "$state" && exec setsid nohup java -Xms256m -Xmx384m -Xmn128m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dnacos.standalone=true -Dnacos.deployment.type=merged -DembeddedStorage=true -Dnacos.home="$state" \
    -jar "$jar" --spring.config.additional-location=file:"$state/conf/" "${logging[@]}" \
    >"$state/stdout.log" 2>&1 </dev/null) &
  echo $! >"$state/nacos.pid"
fi

for _ in $(seq 1 240); do
  if nacos_up; then exit 0; fi
  pid_alive || { echo "ensure-nacos: Nacos exited (see $state/stdout.log and $state/logs)" >&2; exit 1; }
  sleep 0.5
done
echo "ensure-nacos: Nacos did not report UP on 127.0.0.1:8848 within 2 minutes (see $state/logs)" >&2
exit 1
