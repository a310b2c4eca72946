#!/usr/bin/env bash
# Issue 4's dispatcher benchmarks, all in one run (figures go to
# docs/performance.md, "Dispatcher and storage"):
#   1. the in-memory dispatcher on one core (target >= 200,000 calls/s);
#   2. the PostgreSQL dispatcher, 32 attempts calling concurrently
#      (targets >= 2,000 calls/s, p99 <= 25 ms), then pgbench with the same
#      SQL on the same tables (target ratio >= 0.5).
# Loopback only; every loop is bounded in time (BENCH_SECONDS, default 10)
# or count (BENCH_CALLS, default 400,000). The bench database is created and
# dropped by the benchmark itself.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/test-env.sh
command -v pgbench >/dev/null || { echo "pgbench missing: apt-get install -y postgresql-contrib" >&2; exit 1; }

echo "== in-memory dispatcher =="
cargo bench -p toolmock-runtime --features testkit --bench memory_dispatcher
echo
echo "== PostgreSQL dispatcher and pgbench =="
cargo bench -p toolmock-store --bench pg_dispatcher
