#!/usr/bin/env bash
# Installs Debian's HAProxy when it is missing: the PROXY protocol tests start their own haproxy
# processes on free ports (test/helpers/haproxy.ts), in front of a broker's TCP and TLS listeners.
# The package's system service is stopped and disabled: nothing of it is used. Runs apt-get as
# root, or through sudo when available.
set -euo pipefail
[ -x /usr/sbin/haproxy ] && exit 0
echo "installing: haproxy"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq haproxy
"${sudo[@]}" systemctl disable --now haproxy >/dev/null 2>&1 || "${sudo[@]}" service haproxy stop >/dev/null 2>&1 || true
