#!/usr/bin/env bash
# Installs what the comparison bench (bench/compare.ts) needs when it is missing: from Debian the
# Mosquitto broker (/usr/sbin/mosquitto; it is not started as a service here, the bench runs its
# own instances) and taskset (util-linux) for pinning, with apt-get as root or through sudo; and
# rumqttd from crates.io (scripts/ensure-rumqttd.sh) and Mochi MQTT from the Go module proxy
# (scripts/ensure-mochi.sh).
set -euo pipefail
"$(dirname "$0")/ensure-rumqttd.sh"
"$(dirname "$0")/ensure-mochi.sh"
need=()
[ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing: ${need[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
# The package starts a system-wide mosquitto on 1883 where systemd runs; the bench does not need it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mosquitto 2>/dev/null; then
  "${sudo[@]}" systemctl disable --now mosquitto >/dev/null 2>&1 || true
fi
