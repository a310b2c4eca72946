#!/usr/bin/env bash
# The worker's load test (docs/performance.md, "Workers (issue 20)"): the real
# toolmock-api (release, no in-process workers) and two real toolmock-worker
# processes (release, concurrency 16 each, so that their calls gather) on a
# scratch database:
#
#   1. throughput: one simulation of 1,000 scripted attempts of 10 calls each
#      is queued through POST /api/simulations; measured from the first
#      queued attempt to the last finished (PostgreSQL's timestamps), with
#      calls/s and how much of it the start took;
#   2. claim latency: 200 one-attempt simulations started one after the
#      other while the workers are idle (woken by NOTIFY): queue -> the
#      attempt's first call begun, p50/p99;
#   3. when the pgbench anchor is beside the checkout (as in CI), that anchor as its README
#      runs it (pgbench -n -c 32 -j 2, 10 s), and its one-statement form
#      (dispatch1.pgbench) the same way, for the ratios.
#
#   scripts/bench-worker.sh
#
# Environment: CARGO_TARGET_DIR, BENCH_ATTEMPTS (1000), BENCH_CALLS (10),
# BENCH_CONCURRENCY (16, each worker).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
attempts="${BENCH_ATTEMPTS:-1000}"
calls="${BENCH_CALLS:-10}"

set --  # test-env.sh runs its arguments as a command
. scripts/test-env.sh

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release --locked -q -p toolmock-api-bin -p toolmock-worker-bin
api="$CARGO_TARGET_DIR/release/toolmock-api"
worker="$CARGO_TARGET_DIR/release/toolmock-worker"

work="$(mktemp -d "${TMPDIR:-/tmp}/bench-worker.XXXXXX")"
db="toolmock_bench_worker_$$_$(date +%s)"
base="${DATABASE_URL%/*}"
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS ${db}_anchor WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
psql "$DATABASE_URL" -qc "CREATE DATABASE $db" >/dev/null

export TOOLMOCK_JWT_SECRET="bench-worker secret, at least 32 bytes long"
port=$((20000 + RANDOM % 20000))
"$api" migrate --database-url "$base/$db" >/dev/null
app_url="$(printf '%s' "$base/$db" | sed -E 's#^(postgres(ql)?://)([^@/]*@)?#\1toolmock_app@#')"
"$api" serve --database-url "$app_url" --bind "127.0.0.1:$port" --log-format json \
    2>"$work/api.log" &
pids+=($!)
url="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$url/readyz" >/dev/null
for name in one two; do
    "$worker" --database-url "$app_url" --owner "bench-$name" --concurrency "${BENCH_CONCURRENCY:-16}" \
        --log-format json 2>"$work/worker-$name.log" &
    pids+=($!)
done
sleep 1
token="$("$api" token --tenant bench --permission AIManager:RunSimulations)"

python3 - "$root/fixtures/api/notes-simulation.json" "$work" "$attempts" "$calls" <<'PY'
import json, sys
fixture, work, attempts, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
doc = json.load(open(fixture))
steps = [{"tool": "notes", "operation": "add", "arguments": {"text": f"n{i}"}} for i in range(calls)]
doc["cases"] = [{"name": "writes", "driver": {"type": "scripted", "steps": steps},
                 "expect": {"final_state": {"exact": {"last": f"n{calls - 1}"}}}}]
doc["attempts"] = attempts
json.dump(doc, open(f"{work}/big.json", "w"))
doc["attempts"] = 1
json.dump(doc, open(f"{work}/one.json", "w"))
PY

psql_app() { psql "$base/$db" -qtAX -c "$1"; }
# Polls every $1 s (each poll is a psql process and a new PostgreSQL
# backend): the throughput run polls every 0.5 s, since its figure comes
# from the attempts' own timestamps and a poll every 50 ms took a tenth of
# the two cores from what it measures; the claim-latency starts, one after
# another, poll every 50 ms.
wait_finished() {
    local every="$1"
    local tries
    tries=$(python3 -c "print(int(60 / $every))")
    for _ in $(seq 1 "$tries"); do
        [ "$(psql_app "SELECT count(*) FROM attempts WHERE status <> 'finished'")" = 0 ] && return 0
        sleep "$every"
    done
    echo "attempts did not finish" >&2
    return 1
}

echo "== throughput: $attempts attempts x $calls calls, API + two workers"
start_secs="$(curl -fsS -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $token" \
    -H 'content-type: application/json' --data-binary "@$work/big.json" "$url/api/simulations")"
wait_finished 0.5
throughput="$(psql_app "SELECT extract(epoch FROM max(finished_at) - min(queued_at)), \
    (SELECT count(*) FROM evidence), \
    (SELECT count(*) FROM attempts WHERE outcome = 'passed'), \
    extract(epoch FROM (SELECT min(started_at) FROM evidence) - min(queued_at)) FROM attempts")"
first_sim="$(psql_app "SELECT id FROM simulations")"

echo "== claim latency: 200 one-attempt starts, idle workers woken by NOTIFY"
for _ in $(seq 1 200); do
    curl -fsS -o /dev/null -H "Authorization: Bearer $token" -H 'content-type: application/json' \
        --data-binary "@$work/one.json" "$url/api/simulations"
    wait_finished 0.05
done
# A call's begin mark: a calls_begun row, or its evidence row's flag.
psql_app "SELECT extract(epoch FROM LEAST( \
        (SELECT min(b.begun_at) FROM calls_begun b WHERE b.attempt_id = a.id), \
        (SELECT min(e.started_at) FROM evidence e WHERE e.attempt_id = a.id AND e.begin_mark)) \
    - a.queued_at) * 1000 FROM attempts a WHERE a.simulation_id <> '$first_sim'" >"$work/claims"

anchor="$root/../shared/anchors/pgbench"
if [ -f "$anchor/dispatch.pgbench" ] && command -v pgbench >/dev/null 2>&1; then
    echo "== the pgbench anchor, 32 clients, 10 s"
    anchor_db="${db}_anchor"
    psql "$DATABASE_URL" -qc "CREATE DATABASE $anchor_db" >/dev/null
    psql "$base/$anchor_db" -q -f "$anchor/anchor.sql" >/dev/null
    pgbench -n -c 32 -j 2 -T 10 -f "$anchor/dispatch.pgbench" "$base/$anchor_db" >"$work/pgbench.out"
    if [ -f "$anchor/dispatch1.pgbench" ]; then
        echo "== the pgbench anchor's one-statement form (dispatch1.pgbench), 32 clients, 10 s"
        pgbench -n -c 32 -j 2 -T 10 -f "$anchor/dispatch1.pgbench" "$base/$anchor_db" >"$work/pgbench1.out"
    fi
fi

python3 - "$work" "$throughput" "$attempts" "$calls" "$start_secs" <<'PY'
import re, sys
work, throughput, attempts, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
start_secs = float(sys.argv[5])
seconds, evidence, passed, first_call = throughput.split("|")
seconds, evidence, passed = float(seconds), int(evidence), int(passed)
rate = evidence / seconds
print(f"throughput: {attempts} attempts x {calls} calls in {seconds:.2f} s (first queued -> last "
      f"finished; <= 3 s: {'met' if seconds <= 3 else 'MISSED'}), {rate:,.0f} calls/s; "
      f"{passed} passed, {evidence} evidence rows")
print(f"  of which: the start's request {start_secs:.2f} s (its attempts are queued when it "
      f"commits); the first call began {float(first_call):.2f} s after the first queued")
claims = sorted(float(l) for l in open(f"{work}/claims") if l.strip())
pct = lambda q: claims[min(len(claims) - 1, int(len(claims) * q))]
print(f"claim latency (queue -> first call, idle workers): n={len(claims)}, "
      f"p50 {pct(0.5):.2f} ms, p99 {pct(0.99):.2f} ms, max {claims[-1]:.2f} ms")
try:
    tps = float(re.search(r"tps = ([\d.]+)", open(f"{work}/pgbench.out").read()).group(1))
    print(f"pgbench anchor (32 clients): {tps:,.0f} tps; worker calls/s = {rate / tps:.2f}x its rate")
except (OSError, AttributeError):
    print("pgbench anchor: not run (../shared/anchors/pgbench or pgbench missing)")
try:
    tps1 = float(re.search(r"tps = ([\d.]+)", open(f"{work}/pgbench1.out").read()).group(1))
    ratio = rate / tps1
    print(f"one-statement anchor (dispatch1.pgbench, 32 clients): {tps1:,.0f} tps; worker calls/s = "
          f"{ratio:.2f}x its rate (>= 0.5x: {'met' if ratio >= 0.5 else 'MISSED'})")
except (OSError, AttributeError):
    print("one-statement anchor: not run (dispatch1.pgbench or pgbench missing)")
PY
