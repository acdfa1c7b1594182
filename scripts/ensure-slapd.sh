#!/usr/bin/env bash
# Installs Debian's OpenLDAP server (slapd) and its command-line tools (ldap-utils: ldapsearch,
# ldapadd) for the LDAP policy tests, when missing. The tests start their own slapd on a free
# port with a configuration and database they write (test/helpers/slapd.ts); the system service
# the package sets up is stopped and disabled, so nothing listens on 389 for them. Idempotent,
# and quick when both are there. Runs apt-get as root, or through sudo.
set -euo pipefail
need=()
[ -x /usr/sbin/slapd ] || need+=(slapd)
command -v ldapsearch >/dev/null 2>&1 || need+=(ldap-utils)
[ ${#need[@]} -eq 0 ] && exit 0
echo "ensure-slapd: installing ${need[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
# No questions: the package's own directory (dc=nodomain) is not what the tests use.
echo 'slapd slapd/no_configuration boolean true' | "${sudo[@]}" debconf-set-selections
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
if [[ " ${need[*]} " == *" slapd "* ]]; then
  "${sudo[@]}" systemctl disable --now slapd >/dev/null 2>&1 || "${sudo[@]}" service slapd stop >/dev/null 2>&1 || true
fi
