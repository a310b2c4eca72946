#!/usr/bin/env bash
# `just demo`: the whole service on this machine, as it is deployed.
#
#   1. PostgreSQL: the server of DATABASE_URL; the local default
#      (postgres@127.0.0.1:5432) is started, and installed when absent, by
#      scripts/start-postgres.sh; the demo's own
#      database on it (TOOLMOCK_DEMO_DB, default toolmock_demo), created when
#      absent and kept between runs;
#   2. migrations as the owner; the API (on TOOLMOCK_DEMO_PORT, default 8080)
#      and two worker processes as the least-privilege role toolmock_app;
#   3. the HealthPlus library seeded for the tenant `dev` (idempotent);
#   4. the HealthPlus simulation run through the API and the workers
#      (`toolmock submit`), its outcome table printed;
#   5. the UI's address and a development token printed; then it waits, and
#      Ctrl-C (or SIGTERM) stops everything it started.
#
# Nothing it starts outlives it: the API and the workers are stopped (SIGTERM,
# then SIGKILL after 10 s) when it exits for any reason.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { printf 'demo: %s\n' "$*" >&2; }

target="${CARGO_TARGET_DIR:-$root/target}"
port="${TOOLMOCK_DEMO_PORT:-8080}"
database="${TOOLMOCK_DEMO_DB:-toolmock_demo}"
if [[ ! "$database" =~ ^[a-z_][a-z0-9_]*$ ]]; then
    say "TOOLMOCK_DEMO_DB must be a plain lower-case name, not '$database'"
    exit 2
fi

local_default="postgres://postgres@127.0.0.1:5432/postgres"
DATABASE_URL="${DATABASE_URL:-$local_default}"
if [[ "$DATABASE_URL" == "$local_default" ]]; then
    # The local server: installed and started when it is not (idempotent).
    scripts/start-postgres.sh
fi
owner_url="${DATABASE_URL%/*}/$database"
app_url="$(printf '%s' "$owner_url" | sed -E 's#^(postgres(ql)?://)([^@/]*@)?#\1toolmock_app@#')"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    say "something already listens on 127.0.0.1:$port; set TOOLMOCK_DEMO_PORT to a free port"
    exit 2
fi

say "building toolmock-api, toolmock-worker and toolmock"
cargo build --locked -q -p toolmock-api-bin -p toolmock-worker-bin -p toolmock-cli

if ! psql "$DATABASE_URL" -XAtqc "SELECT 1 FROM pg_database WHERE datname = '$database'" | grep -q 1; then
    psql "$DATABASE_URL" -Xqc "CREATE DATABASE $database" >/dev/null
    say "created the database $database"
fi
"$target/debug/toolmock-api" migrate --database-url "$owner_url" >/dev/null

export TOOLMOCK_JWT_SECRET="${TOOLMOCK_JWT_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}"
logs="$target/demo"
mkdir -p "$logs"

pids=()
sleeper=""
stop_all() {
    trap - EXIT INT TERM
    if [[ -n "$sleeper" ]]; then kill "$sleeper" 2>/dev/null || true; fi
    if ((${#pids[@]})); then
        say "stopping the API and the workers"
        kill -TERM "${pids[@]}" 2>/dev/null || true
        for _ in $(seq 1 100); do
            alive=0
            for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
            ((alive)) || break
            sleep 0.1
        done
        kill -KILL "${pids[@]}" 2>/dev/null || true
        wait "${pids[@]}" 2>/dev/null || true
    fi
    say "stopped"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$target/debug/toolmock-api" serve --database-url "$app_url" --bind "127.0.0.1:$port" \
    2>"$logs/api.log" &
pids+=($!)
for n in 1 2; do
    "$target/debug/toolmock-worker" --database-url "$app_url" --owner "demo-worker-$n" \
        2>"$logs/worker-$n.log" &
    pids+=($!)
done
url="http://127.0.0.1:$port"
for _ in $(seq 1 150); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.2
done
if ! curl -fsS "$url/readyz" >/dev/null 2>&1; then
    say "the API did not become ready; its log: $logs/api.log"
    tail -n 20 "$logs/api.log" >&2 || true
    exit 1
fi
say "the API serves $url; two workers run its attempts (logs in $logs/)"

"$target/debug/toolmock-api" seed fixtures/healthplus --tenant dev --database-url "$app_url"

token="$("$target/debug/toolmock-api" token --tenant dev \
    --permission AIManager:ManageTools --permission AIManager:RunSimulations)"
say "running fixtures/healthplus/simulation.json through the API and the workers"
status=0
"$target/debug/toolmock" submit fixtures/healthplus/simulation.json --api "$url" --token "$token" || status=$?

cat <<EOF

The UI:     $url/
A token:    $token
            (tenant dev, AIManager:ManageTools and AIManager:RunSimulations;
             paste it on the UI's sign-in page, or: export TOOLMOCK_TOKEN=...)
The API:    $url/api (OpenAPI at $url/api/openapi.json)
Simulation exit status: $status

Press Ctrl-C to stop the API and the workers.
EOF
# Waits for a signal; `wait` returns when a trapped signal arrives.
while true; do
    sleep 3600 &
    sleeper=$!
    wait "$sleeper" || true
done
