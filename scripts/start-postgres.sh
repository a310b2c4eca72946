#!/usr/bin/env bash
# Makes sure the local PostgreSQL answers on 127.0.0.1:5432, starting the
# cluster when it is stopped. Tests create their own databases in it.
set -euo pipefail
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ready; then exit 0; fi
if [ -d /etc/postgresql ]; then
  version="$(ls /etc/postgresql | sort -V | tail -n 1)"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
fi
for _ in $(seq 1 60); do
  if ready; then exit 0; fi
  sleep 0.5
done
echo "PostgreSQL does not answer on 127.0.0.1:5432" >&2
exit 1
