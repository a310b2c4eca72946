#!/usr/bin/env bash
# The tau2 retail suite through the service (docs/performance.md, "The
# retail suite through the API and two workers"): `toolmock import tau2`
# of the installed benchmark's retail domain (every task, `--attempts 4`),
# sent with `toolmock submit` to the real toolmock-api (release, no
# in-process workers) and played by two real toolmock-worker processes
# (release) against the local conversation server, which plays the agent
# (it replays each task's expected actions, then says what it must say) and
# the simulated user (it says its instructions, then ###STOP###) at once.
#
#   scripts/bench-tau2-api.sh
#
# Prints the wall time of `toolmock submit` (start to results), PostgreSQL's
# first-queued -> last-finished, and the outcomes; fails unless every
# attempt passed. Environment: CARGO_TARGET_DIR, BENCH_ATTEMPTS (4),
# BENCH_CONCURRENCY (each worker's, 16), BENCH_SERVER_PROCESSES (2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
attempts="${BENCH_ATTEMPTS:-4}"
concurrency="${BENCH_CONCURRENCY:-16}"
processes="${BENCH_SERVER_PROCESSES:-2}"

set --  # test-env.sh runs its arguments as a command
. scripts/test-env.sh

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release --locked -q -p toolmock-cli -p toolmock-api-bin -p toolmock-worker-bin
cli="$CARGO_TARGET_DIR/release/toolmock"
api="$CARGO_TARGET_DIR/release/toolmock-api"
worker="$CARGO_TARGET_DIR/release/toolmock-worker"
venv="$root/.cache/tau2-venv"
[[ -x "$venv/bin/python" ]] || { echo "no $venv: run scripts/install-test-tools.sh" >&2; exit 1; }
retail="$(echo "$venv"/lib/python*/site-packages/tau2/data/tau2/domains/retail)"

work="$(mktemp -d "${TMPDIR:-/tmp}/bench-tau2-api.XXXXXX")"
db="toolmock_bench_tau2_$$_$(date +%s)"
base="${DATABASE_URL%/*}"
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

"$cli" import tau2 --domain retail --tasks "$retail/tasks.json" --db "$retail/db.json" \
    --policy "$retail/policy.md" --mocks "$root/fixtures/tau2-retail/mocks" \
    --out "$work/retail.json" --attempts "$attempts" >&2

"$root/.cache/test-venv/bin/python" fixtures/conversation-server/server.py \
    --tau2-tasks "$retail/tasks.json" --processes "$processes" >"$work/server-port" &
pids+=($!)
for _ in $(seq 1 100); do [[ -s "$work/server-port" ]] && break; sleep 0.1; done
model_url="http://127.0.0.1:$(head -n 1 "$work/server-port")/v1"

psql "$DATABASE_URL" -qc "CREATE DATABASE $db" >/dev/null
export TOOLMOCK_JWT_SECRET="bench-tau2-api secret, at least 32 bytes long"
port=$((20000 + RANDOM % 20000))
"$api" migrate --database-url "$base/$db" >/dev/null
app_url="$(printf '%s' "$base/$db" | sed -E 's#^(postgres(ql)?://)([^@/]*@)?#\1toolmock_app@#')"
# The suite inlines db.json (1.4 MB) as its shared fixture.
"$api" serve --database-url "$app_url" --bind "127.0.0.1:$port" --body-limit 16777216 \
    --log-format json 2>"$work/api.log" &
pids+=($!)
url="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$url/readyz" >/dev/null
for name in one two; do
    "$worker" --database-url "$app_url" --owner "bench-$name" --concurrency "$concurrency" \
        --model-url "$model_url" --model tau2_agent --user-model tau2_user \
        --model-concurrency "$concurrency" --log-format json 2>"$work/worker-$name.log" &
    pids+=($!)
done
sleep 1
token="$("$api" token --tenant bench --permission AIManager:RunSimulations)"

echo "== toolmock submit: retail x $attempts attempts, API + two workers (concurrency $concurrency each)"
started=$(date +%s.%N)
status=0
"$cli" submit "$work/retail.json" --api "$url" --token "$token" --json >"$work/results.json" \
    2>"$work/submit.stderr" || status=$?
ended=$(date +%s.%N)
psql_app() { psql "$base/$db" -qtAX -c "$1"; }
echo "submit wall: $(echo "$ended - $started" | bc) s (exit $status)"
echo "first queued -> last finished: $(psql_app "SELECT round(extract(epoch FROM max(finished_at) - min(queued_at))::numeric, 2) FROM attempts") s"
echo "attempts by outcome: $(psql_app "SELECT string_agg(outcome || ' ' || n, ', ') FROM (SELECT outcome, count(*) n FROM attempts GROUP BY outcome) o")"
echo "messages: $(psql_app "SELECT count(*) FROM attempt_messages"), calls: $(psql_app "SELECT count(*) FROM evidence")"
if [[ $status -ne 0 ]]; then
    head -c 2000 "$work/submit.stderr" >&2
    exit 1
fi
