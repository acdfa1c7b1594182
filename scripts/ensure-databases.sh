#!/usr/bin/env bash
# Makes the databases the store tests need available on this machine: installs PostgreSQL and
# MariaDB from Debian's packages when missing, starts them when not running (no systemd here:
# pg_ctlcluster and mysqld_safe), and creates the test database and user on each
# (spindle_test / spindle:spindle). Idempotent, and quick when everything is already up.
set -euo pipefail

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

need=()
command -v pg_ctlcluster >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
if [ ${#need[@]} -gt 0 ]; then
  echo "ensure-databases: installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

as_postgres() { if [ "$(id -u)" -eq 0 ]; then su postgres -c "$1"; else sudo -u postgres sh -c "$1"; fi; }

# PostgreSQL: the first cluster of the newest installed version (the package creates "main").
pg_version=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | awk -v v="$pg_version" '$1 == v' | grep -q .; then
  "${sudo[@]}" pg_createcluster "$pg_version" main
fi
pg_cluster=$(pg_lsclusters -h | awk -v v="$pg_version" '$1 == v { print $2; exit }')
if ! pg_lsclusters -h | awk -v v="$pg_version" -v c="$pg_cluster" '$1 == v && $2 == c { print $4 }' | grep -q online; then
  echo "ensure-databases: starting PostgreSQL $pg_version/$pg_cluster"
  "${sudo[@]}" pg_ctlcluster "$pg_version" "$pg_cluster" start
fi
for _ in $(seq 1 50); do
  as_postgres "psql -qtAc 'select 1'" >/dev/null 2>&1 && break
  sleep 0.2
done
as_postgres "psql -v ON_ERROR_STOP=1 -qtA" <<'SQL' >/dev/null
SELECT 'CREATE ROLE spindle LOGIN PASSWORD ''spindle''' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'spindle')\gexec
SELECT 'CREATE DATABASE spindle_test OWNER spindle' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'spindle_test')\gexec
SQL

# MariaDB: started through mysqld_safe in the background when the socket does not answer.
mysql_up() { mysqladmin -uroot --connect-timeout=2 ping >/dev/null 2>&1; }
if ! mysql_up; then
  echo "ensure-databases: starting MariaDB"
  "${sudo[@]}" mkdir -p /run/mysqld
  "${sudo[@]}" chown mysql:mysql /run/mysqld
  [ -d /var/lib/mysql/mysql ] || "${sudo[@]}" mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  "${sudo[@]}" sh -c 'nohup mysqld_safe >/dev/null 2>&1 &'
  for _ in $(seq 1 100); do mysql_up && break; sleep 0.2; done
  mysql_up || { echo "ensure-databases: MariaDB did not start (see /var/log/mysql/error.log)" >&2; exit 1; }
fi
"${sudo[@]}" mysql -uroot <<'SQL'
CREATE DATABASE IF NOT EXISTS spindle_test;
CREATE USER IF NOT EXISTS 'spindle'@'127.0.0.1' IDENTIFIED BY 'spindle';
CREATE USER IF NOT EXISTS 'spindle'@'localhost' IDENTIFIED BY 'spindle';
GRANT ALL PRIVILEGES ON *.* TO 'spindle'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'spindle'@'localhost';
SQL
