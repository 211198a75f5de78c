#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, pg_ctl) exist, installing Debian's
# postgresql package when they do not. The clusters themselves are started by tickgate.
set -euo pipefail
if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then exit 0; fi
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "PostgreSQL server binaries are missing: run 'sudo apt-get install -y postgresql'" >&2
  exit 1
fi
echo "installing Debian's postgresql package"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends postgresql
# Debian starts a system cluster on 5432; tickgate runs its own, so stop that one.
service postgresql stop >/dev/null 2>&1 || true
