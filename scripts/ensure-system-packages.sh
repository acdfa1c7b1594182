#!/usr/bin/env bash
# Installs the Debian packages the test suite needs when they are missing (a fresh CI machine has
# none of them): the Mosquitto command-line clients for interop tests, the Mosquitto broker as
# the remote of the MQTT bridge tests (its system service is stopped and disabled: the tests start
# their own, and port 1883 stays free for `make run`), openssl for the TLS tests, curl for the
# admin API's HTTPS tests, and chromium for the web console's browser tests. Runs
# apt-get as root, or through sudo when available.
set -euo pipefail
need=()
command -v mosquitto_sub >/dev/null 2>&1 || need+=(mosquitto-clients)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v curl >/dev/null 2>&1 || need+=(curl)
[ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
# Debian's Chromium for the web console's browser tests (playwright-core drives it; no browser
# download from anywhere else).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing: ${need[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${need[@]}"
if [[ " ${need[*]} " == *" mosquitto "* ]]; then
  "${sudo[@]}" systemctl disable --now mosquitto >/dev/null 2>&1 || "${sudo[@]}" service mosquitto stop >/dev/null 2>&1 || true
fi
