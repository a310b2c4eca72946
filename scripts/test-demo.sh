#!/usr/bin/env bash
# The test of `just demo` (run by `just test`): brings the demo up on a
# database and a port of its own, checks that it printed the HealthPlus
# outcome table (the same as `toolmock run` prints), the UI's address and a
# token that the API takes, that the UI answers, then sends Ctrl-C (SIGINT)
# and checks that it stopped everything it started: no process of it left,
# the port closed. Exits 1 with what failed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
target="${CARGO_TARGET_DIR:-$root/target}"
fail() {
    printf 'test-demo: FAIL: %s\n' "$*" >&2
    exit 1
}

database="toolmock_demo_test_$$"
port=$((20000 + RANDOM % 20000))
out="$(mktemp)"
expected="$(mktemp)"
cleanup() {
    if [[ -n "${demo:-}" ]] && kill -0 "$demo" 2>/dev/null; then
        kill -KILL -- "-$demo" 2>/dev/null || true
    fi
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
    rm -f "$out" "$expected"
}
trap cleanup EXIT

cargo build --locked -q -p toolmock-cli
"$target/debug/toolmock" run fixtures/healthplus/simulation.json >"$expected" 2>/dev/null

# Job control on, so that the demo runs in a process group of its own (the
# test can tell whether anything of it is left) and takes SIGINT as a
# terminal's Ctrl-C (a background job of a shell without job control
# ignores it).
set -m
TOOLMOCK_DEMO_DB="$database" TOOLMOCK_DEMO_PORT="$port" scripts/demo.sh >"$out" 2>&1 &
demo=$!
set +m
for _ in $(seq 1 1200); do
    grep -q "Press Ctrl-C" "$out" && break
    kill -0 "$demo" 2>/dev/null || fail "the demo ended early: $(cat "$out")"
    sleep 0.5
done
grep -q "Press Ctrl-C" "$out" || fail "the demo did not come up within 10 minutes: $(tail -n 30 "$out")"

# The table, byte for byte as `toolmock run` prints it.
if ! grep -qF -- "$(cat "$expected")" "$out"; then
    diff <(cat "$expected") "$out" >&2 || true
    fail "the demo did not print the table toolmock run prints"
fi
grep -qF "Simulation exit status: 0" "$out" || fail "the simulation did not pass: $(cat "$out")"
grep -qF "The UI:     http://127.0.0.1:$port/" "$out" || fail "no UI address printed"
token="$(sed -n 's/^A token:    //p' "$out")"
[[ -n "$token" ]] || fail "no token printed"
page="$(curl -fsS "http://127.0.0.1:$port/")" || fail "the UI does not answer"
grep -q "<html" <<<"$page" || fail "the UI's page is not HTML"
# The token is accepted, and the seeded library is there.
tools="$(curl -fsS -H "authorization: Bearer $token" "http://127.0.0.1:$port/api/tools")" ||
    fail "the printed token is refused"
grep -q '"salesforce"' <<<"$tools" || fail "the seeded HealthPlus tools are not listed: $tools"

# Ctrl-C: everything it started stops.
kill -INT "$demo"
for _ in $(seq 1 300); do
    kill -0 "$demo" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$demo" 2>/dev/null && fail "the demo did not stop within 30 s of Ctrl-C"
wait "$demo" || true
sleep 0.2
# Any process left in its process group (read from /proc: no procps needed).
left=""
for stat in /proc/[0-9]*/stat; do
    fields="$(cat "$stat" 2>/dev/null)" || continue
    # The fields after the command (which may hold spaces) end with ")".
    rest="${fields##*) }"
    read -r _state _ppid pgrp _ <<<"$rest"
    if [[ "$pgrp" == "$demo" ]]; then
        left+=" ${stat#/proc/}"
    fi
done
[[ -z "$left" ]] || fail "processes of the demo are still running after Ctrl-C:${left//\/stat/}"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "something still listens on the demo's port $port"
fi
grep -q "demo: stopped" "$out" || fail "the demo did not say it stopped"
printf 'test-demo: ok (the table, the UI, the token, and nothing left after Ctrl-C)\n'
