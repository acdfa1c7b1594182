#!/usr/bin/env bash
# Installs the Debian packages the test suite needs when they are missing (a fresh CI machine has
# none of them): the Mosquitto command-line clients for interop tests and openssl for the TLS
# tests. Runs apt-get as root, or through sudo when available.
set -euo pipefail
need=()
command -v mosquitto_sub >/dev/null 2>&1 || need+=(mosquitto-clients)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing: ${need[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${need[@]}"
