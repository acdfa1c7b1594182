#!/usr/bin/env bash
# Installs the Debian tools the package build (make deb) and its test (test/deploy/deb.test.ts)
# need when they are missing: dpkg-dev (dpkg-shlibdeps computes the package's Depends), lintian
# (checks the package), debootstrap (the clean Debian 12 the test installs the package in),
# mosquitto-clients and curl (the test's MQTT and HTTP clients), and util-linux's unshare/nsenter and iproute2 (the
# test's own network namespace). Idempotent: nothing to do when all are there. Runs apt-get as
# root, or through sudo when available.
set -euo pipefail
need=()
command -v dpkg-shlibdeps >/dev/null 2>&1 || need+=(dpkg-dev)
command -v lintian >/dev/null 2>&1 || need+=(lintian)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v mosquitto_sub >/dev/null 2>&1 || need+=(mosquitto-clients)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
[ ${#need[@]} -eq 0 ] && exit 0
echo "ensure-deb-tools: installing ${need[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
