#!/usr/bin/env bash
# Load-tests the real toolmock-api (release build, real PostgreSQL) with wrk,
# and Stoplight Prism 5 — the shared `prism` anchor, copied in
# fixtures/bench/prism — under the same tool-call load, in the same run
# (docs/performance.md, "The API (issue 13)"):
#
#   1. GET /api/tools/{id}/testing, a tool of 50 operations each with a saved
#      revision, a JWT, wrk -t2 -c50;
#   2. POST /api/attempts/{id}/tool-calls, `crm`/`find_member` (the anchor's
#      input schema, a Salesforce-enveloped result, state read and written,
#      evidence committed before the answer) across 32 attempts, each request
#      under its attempt's capability, wrk -t2 -c32;
#   3. the same call as an MCP `tools/call` over POST /api/attempts/{id}/mcp
#      (streamable HTTP, stateless, JSON answers), on the same 32 attempts,
#      wrk -t2 -c32;
#   4. Prism serving the anchor's api.yaml, wrk -t2 -c32 -s post.lua;
#   5. when the shared `pgbench` anchor is there ($anchor below), exactly as its
#      README runs it (pgbench -n -c 32 -j 2, its own scratch database): the
#      same durable, row-locked SQL with no HTTP, no evaluation and no JSON,
#      the physical limit of a tool call on this machine, for the ratio; and
#      its one-statement form (dispatch1.pgbench), when there, the same way.
#
# It fails (exit 1) on what is really wrong: a non-2xx answer or a socket
# error of toolmock, a tool input error, a harness error other than
# `answer_lost`, fewer evidence rows than answered calls, or more
# `answer_lost` errors than calls can be in flight when wrk stops (each of
# the tool-call loads' two wrk runs, warm-up and measured, stops with at
# most one call in flight per connection). Those calls are rightly recorded
# as `answer_lost` (their answer never reached a client); they are counted
# apart, not as failures.
#
# On a fresh machine it installs wrk (apt-get) and Prism (npm, into
# .cache/bench-api/prism) when missing, starts PostgreSQL if needed
# (scripts/test-env.sh), builds `toolmock-api` in release mode, serves it on
# a scratch database (created here, dropped at exit), seeds it through the
# public HTTP API (scripts/bench-api/seed.py) and prints a summary with the
# ratios. Not part of `just test`.
#
#   scripts/bench-api.sh                   (or: scripts/just bench-api)
#
# Environment: BENCH_DURATION (15s), BENCH_WARMUP (3s, before each load),
# BENCH_PRISM_PORT (4010), BENCH_MAX_CONNECTIONS (the server's pool; default:
# the server's own default), BENCH_RUNTIME_THREADS (the server's
# --runtime-threads; default: the server's own, one per core),
# CARGO_TARGET_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
duration="${BENCH_DURATION:-15s}"
warmup="${BENCH_WARMUP:-3s}"
prism_port="${BENCH_PRISM_PORT:-4010}"
cache="$root/.cache/bench-api"
mkdir -p "$cache"

install_who="bench-api"
# shellcheck source=scripts/lib/install.sh
. "$root/scripts/lib/install.sh"
command -v wrk >/dev/null 2>&1 || apt_install wrk wrk
prism="$cache/prism/node_modules/.bin/prism"
if [ ! -x "$prism" ]; then
    mkdir -p "$cache/prism"
    (cd "$cache/prism" && { [ -f package.json ] || npm init -y >/dev/null; } &&
        npm install --no-audit --no-fund --loglevel=error @stoplight/prism-cli@5)
fi

set --  # test-env.sh runs its arguments as a command
. scripts/test-env.sh

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release --locked -q -p toolmock-api-bin
bin="$CARGO_TARGET_DIR/release/toolmock-api"

work="$(mktemp -d "${TMPDIR:-/tmp}/bench-api.XXXXXX")"
db="toolmock_bench_api_$$_$(date +%s)"
base="${DATABASE_URL%/*}"
server=""
prism_pid=""
cleanup() {
    local status=$?
    if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    if [ -n "$prism_pid" ]; then kill -TERM "$prism_pid" 2>/dev/null; wait "$prism_pid" 2>/dev/null || true; fi
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS ${db}_anchor WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
psql "$DATABASE_URL" -qc "CREATE DATABASE $db" >/dev/null

export TOOLMOCK_JWT_SECRET="bench-api secret, at least 32 bytes long"
port=$((20000 + RANDOM % 20000))
# Migrated as the owner, served as the least-privilege role, as deployed.
"$bin" migrate --database-url "$base/$db" >/dev/null
app_url="$(printf '%s' "$base/$db" | sed -E 's#^(postgres(ql)?://)([^@/]*@)?#\1toolmock_app@#')"
serve_args=(serve --database-url "$app_url" --bind "127.0.0.1:$port" --log-format json)
[ -n "${BENCH_MAX_CONNECTIONS:-}" ] && serve_args+=(--max-connections "$BENCH_MAX_CONNECTIONS")
[ -n "${BENCH_RUNTIME_THREADS:-}" ] && serve_args+=(--runtime-threads "$BENCH_RUNTIME_THREADS")
"$bin" "${serve_args[@]}" 2>"$work/server.log" &
server=$!
url="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$url/readyz" >/dev/null

token="$("$bin" token --tenant bench --permission AIManager:ManageTools --permission AIManager:RunSimulations)"
python3 scripts/bench-api/seed.py "$url" "$token" "$work" 32

# Prism, on the anchor's document, exactly as the shared anchors' README runs it.
(cd fixtures/bench/prism && exec "$prism" mock -p "$prism_port" api.yaml) >"$work/prism.log" 2>&1 &
prism_pid=$!
prism_url="http://127.0.0.1:$prism_port"
for _ in $(seq 1 300); do
    curl -fsS -H 'Content-Type: application/json' -d '{"lookup_by":"name","value":"Ann"}' \
        "$prism_url/tools/crm__find_member" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS -H 'Content-Type: application/json' -d '{"lookup_by":"name","value":"Ann"}' \
    "$prism_url/tools/crm__find_member" >/dev/null

# One toolmock call checked by hand: the answer is the enveloped record.
first_id="$(sed -n 's/.*id = "\([^"]*\)".*/\1/p' "$work/attempts.lua" | head -n 1)"
first_cap="$(sed -n 's/.*capability = "\([^"]*\)".*/\1/p' "$work/attempts.lua" | head -n 1)"
curl -fsS -H "Authorization: Bearer $first_cap" -H 'Content-Type: application/json' \
    -d '{"tool":"crm","operation":"find_member","arguments":{"lookup_by":"name","value":"Ann"}}' \
    "$url/api/attempts/$first_id/tool-calls" | grep -q '"FirstName":"Ann"'
# And one over MCP: a tool result whose structured content is that record.
curl -fsS -H "Authorization: Bearer $first_cap" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_member","arguments":{"lookup_by":"name","value":"Ann"}}}' \
    "$url/api/attempts/$first_id/mcp" | grep -q '"structuredContent":{.*"FirstName":"Ann"'

export BENCH_TOKEN="$token" BENCH_TOOL_ID="$(cat "$work/tool_id")"
export BENCH_ATTEMPTS="$work/attempts.lua" BENCH_THREADS=2

# run NAME CONNECTIONS SCRIPT URL: a warm-up, then the measured run.
run() {
    local name=$1 connections=$2 script=$3 target=$4
    wrk -t2 -c"$connections" -d"$warmup" -s "$script" "$target" >/dev/null
    uptime | sed 's/.*load average: /load /' >"$work/$name.load"
    wrk -t2 -c"$connections" -d"$duration" -s "$script" --latency "$target" | tee "$work/$name.wrk"
    uptime | sed 's/.*load average: /load /' >>"$work/$name.load"
}

echo "== GET /api/tools/{id}/testing (50 operations), 50 clients"
run testing 50 scripts/bench-api/testing.lua "$url"
echo "== POST /api/attempts/{id}/tool-calls, 32 attempts, 32 clients"
export BENCH_SURFACE=tool-calls
run calls 32 scripts/bench-api/tool-calls.lua "$url"
echo "== MCP tools/call over POST /api/attempts/{id}/mcp, 32 attempts, 32 clients"
export BENCH_SURFACE=mcp
run mcp 32 scripts/bench-api/tool-calls.lua "$url"
echo "== Prism 5, POST /tools/crm__find_member, 32 clients"
run prism 32 fixtures/bench/prism/post.lua "$prism_url/tools/crm__find_member"

anchor="$root/../shared/anchors/pgbench"
if [ -f "$anchor/dispatch.pgbench" ] && command -v pgbench >/dev/null 2>&1; then
    echo "== the pgbench anchor (the same SQL without HTTP), 32 clients"
    anchor_db="${db}_anchor"
    psql "$DATABASE_URL" -qc "CREATE DATABASE $anchor_db" >/dev/null
    psql "$base/$anchor_db" -q -f "$anchor/anchor.sql" >/dev/null
    (cd "$work" && pgbench -n -c 32 -j 2 -T "${duration%s}" -l --log-prefix=anchor \
        -f "$anchor/dispatch.pgbench" "$base/$anchor_db" | tee "$work/pgbench.out")
    cat "$work"/anchor.* 2>/dev/null | awk 'NF >= 3 {print $3}' >"$work/pgbench.latencies" || true
    if [ -f "$anchor/dispatch1.pgbench" ]; then
        echo "== the pgbench anchor's one-statement form (dispatch1.pgbench), 32 clients"
        (cd "$work" && pgbench -n -c 32 -j 2 -T "${duration%s}" \
            -f "$anchor/dispatch1.pgbench" "$base/$anchor_db" | tee "$work/pgbench1.out")
    fi
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $anchor_db WITH (FORCE)" >/dev/null
fi

evidence="$(psql "$base/$db" -tAc "SELECT count(*) FROM evidence")"
faults="$(psql "$base/$db" -tAc "SELECT (SELECT count(*) FROM harness_errors WHERE code <> 'answer_lost') + (SELECT count(*) FROM tool_input_errors)")"
lost="$(psql "$base/$db" -tAc "SELECT count(*) FROM harness_errors WHERE code = 'answer_lost'")"

python3 - "$work" "$evidence" "$faults" "$duration" "$lost" <<'EOF'
import re, sys
work, evidence, faults, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lost = int(sys.argv[5])
UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}

def parse(name):
    text = open(f"{work}/{name}.wrk").read()
    out = {"rate": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))}
    for pct, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M):
        out[f"p{pct}"] = float(value) * UNIT[unit]
    out["requests"] = int(re.search(r"(\d+) requests in", text).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket"] = sum(map(int, m.groups())) if m else 0
    out["load"] = " → ".join(l.strip() for l in open(f"{work}/{name}.load"))
    return out

t, c, m, p = parse("testing"), parse("calls"), parse("mcp"), parse("prism")
met = lambda ok: "met" if ok else "MISSED"
print()
print(f"Summary ({duration} each, wrk -t2; machine load before → after each run)")
print()
print("| load | clients | requests/s | p50 ms | p90 ms | p99 ms | non-2xx | socket errors | machine load |")
print("|---|---|---|---|---|---|---|---|---|")
for name, r, n in (("toolmock GET /api/tools/{id}/testing (50 ops)", t, 50),
                   ("toolmock POST …/tool-calls (32 attempts)", c, 32),
                   ("toolmock MCP tools/call, POST …/mcp (32 attempts)", m, 32),
                   ("Prism 5 POST /tools/crm__find_member", p, 32)):
    print(f"| {name} | {n} | {r['rate']:,.0f} | {r['p50']:.2f} | {r['p90']:.2f} | {r['p99']:.2f} "
          f"| {r['non2xx']} | {r['socket']} | {r['load']} |")
print()
rate_ratio = c["rate"] / p["rate"]
p99_ratio = c["p99"] / p["p99"]
print(f"GET testing:  {t['rate']:,.0f} req/s (>= 2,000: {met(t['rate'] >= 2000)}), "
      f"p99 {t['p99']:.2f} ms (<= 20 ms: {met(t['p99'] <= 20)})")
print(f"tool calls:   {c['rate']:,.0f} calls/s (>= 2,000: {met(c['rate'] >= 2000)}), "
      f"p99 {c['p99']:.2f} ms (<= 30 ms: {met(c['p99'] <= 30)})")
print(f"MCP calls:    {m['rate']:,.0f} calls/s, p99 {m['p99']:.2f} ms; "
      f"{m['rate'] / c['rate']:.2f}x the tool-call endpoint's rate")
print(f"vs Prism:     rate {rate_ratio:.2f}x Prism's (>= 1.5x: {met(rate_ratio >= 1.5)}), "
      f"p99 {p99_ratio:.3f} of Prism's = 1/{1 / p99_ratio:.1f} (<= 1/3: {met(p99_ratio <= 1 / 3)})")
try:
    tps = float(re.search(r"tps = ([\d.]+)", open(f"{work}/pgbench.out").read()).group(1))
    micros = sorted(int(line) for line in open(f"{work}/pgbench.latencies") if line.strip())
    pct = lambda q: micros[min(len(micros) - 1, int(len(micros) * q))] / 1000
    print(f"pgbench anchor (same SQL, no HTTP, 32 clients): {tps:,.0f} tps, p50 {pct(0.5):.2f} / "
          f"p90 {pct(0.9):.2f} / p99 {pct(0.99):.2f} ms; tool calls over HTTP = "
          f"{c['rate'] / tps:.2f}x its rate, {c['p99'] / pct(0.99):.2f}x its p99")
except (OSError, AttributeError, IndexError, ValueError):
    print("pgbench anchor: not run (../shared/anchors/pgbench or pgbench missing)")
try:
    tps1 = float(re.search(r"tps = ([\d.]+)", open(f"{work}/pgbench1.out").read()).group(1))
    print(f"one-statement anchor (dispatch1.pgbench, 32 clients): {tps1:,.0f} tps; tool calls over "
          f"HTTP = {c['rate'] / tps1:.2f}x (>= 0.75x: {met(c['rate'] / tps1 >= 0.75)}), "
          f"MCP tools/call = {m['rate'] / tps1:.2f}x (>= 0.6x: {met(m['rate'] / tps1 >= 0.6)}) its rate")
except (OSError, AttributeError, ValueError):
    print("one-statement anchor: not run (dispatch1.pgbench or pgbench missing)")
answered = c["requests"] + m["requests"]
# Each tool-call load's two wrk runs stop with at most one call in flight
# per connection: those calls end recorded as answer_lost, rightly.
in_flight = 2 * 32 + 2 * 32
print(f"durability:   {evidence} evidence rows committed for the tool-call and MCP runs "
      f"(warm-up + measured {answered} answered: {met(evidence >= answered)}), "
      f"{faults} tool input or harness errors other than answer_lost (0: {met(faults == 0)}), "
      f"{lost} answer_lost, the calls in flight when wrk stopped (<= {in_flight}: {met(lost <= in_flight)})")
bad = t["non2xx"] + c["non2xx"] + m["non2xx"] + t["socket"] + c["socket"] + m["socket"] + faults
sys.exit(1 if bad or evidence < answered or lost > in_flight else 0)
EOF
