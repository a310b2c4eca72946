#!/usr/bin/env bash
# The dispatcher benchmarks of issues 4 and 10, all in one run (figures go to
# docs/performance.md, "Dispatcher and storage"):
#   1. the in-memory dispatcher on one core (target >= 200,000 calls/s);
#   2. the PostgreSQL dispatcher as the application role, 32 attempts calling
#      concurrently (target p99 <= 25 ms), then pgbench with the same SQL on
#      the same tables (for information), then the shared pgbench anchor
#      over the unix socket (target: the
#      dispatcher's rate >= 0.6 of the anchor's).
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
