#!/usr/bin/env bash
# The environment toolmock-store's tests need: a PostgreSQL server with trust
# auth on the loopback (each #[sqlx::test] creates and drops its own database
# on it). Source it (`. scripts/test-env.sh`) or run a command after it
# (`scripts/test-env.sh cargo test -p toolmock-store`).
set -euo pipefail

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    if command -v pg_ctlcluster >/dev/null 2>&1; then
        version="$(ls /etc/postgresql | sort -V | tail -n 1)"
        pg_ctlcluster --skip-systemctl-redirect "$version" main start
        for _ in $(seq 1 30); do
            pg_isready -q -h 127.0.0.1 -p 5432 && break
            sleep 1
        done
    fi
fi
pg_isready -h 127.0.0.1 -p 5432 >/dev/null || {
    echo "PostgreSQL is not reachable at 127.0.0.1:5432" >&2
    exit 1
}

if [ "$#" -gt 0 ]; then
    exec "$@"
fi
