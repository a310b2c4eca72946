#!/usr/bin/env bash
# The retail suite with simulated users, at the scale of pass^4
# (docs/performance.md, "The retail suite with simulated users"): every
# one of the 114 tasks imported with `toolmock import tau2 --attempts 4`,
# played by `toolmock run --jobs 16` (release build) against the local
# conversation server (`tau2_agent` and `tau2_user`, answering at once,
# from 2 processes). Target: <= 20 s wall, every attempt passed.
#
#   scripts/bench-tau2-run.sh [RUNS]   (default 3)
#
# Needs .cache/tau2-venv and .cache/test-venv (scripts/install-test-tools.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
runs="${1:-3}"
out="$target/bench-tau2-run"
venv="$root/.cache/tau2-venv"
[[ -x "$venv/bin/python" ]] || { echo "no $venv: run scripts/install-test-tools.sh" >&2; exit 1; }
retail="$(echo "$venv"/lib/python*/site-packages/tau2/data/tau2/domains/retail)"

cargo build --release --locked --quiet -p toolmock-cli
toolmock="$target/release/toolmock"
rm -rf "$out"
mkdir -p "$out"
"$toolmock" import tau2 --domain retail --tasks "$retail/tasks.json" --db "$retail/db.json" \
    --policy "$retail/policy.md" --mocks "$root/fixtures/tau2-retail/mocks" --out "$out/suite.json" --attempts 4

"$root/.cache/test-venv/bin/python" "$root/fixtures/conversation-server/server.py" \
    --tau2-tasks "$retail/tasks.json" --processes 2 > "$out/port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [[ -s "$out/port" ]] && break; sleep 0.2; done
url="http://127.0.0.1:$(head -n 1 "$out/port")/v1"

echo "== 114 tasks x 4 attempts, --jobs 16 (load average: $(cut -d' ' -f1-3 /proc/loadavg)) =="
for run in $(seq 1 "$runs"); do
    /usr/bin/time -f "run $run: wall %e s, toolmock CPU user %U s sys %S s, peak RSS %M KB" \
        "$toolmock" run "$out/suite.json" --json --jobs 16 --model-url "$url" --model tau2_agent \
        --user-model tau2_user > "$out/results.json" 2> "$out/run.stderr" || { tail -5 "$out/run.stderr"; exit 1; }
    tail -1 "$out/run.stderr"
    grep -h "ran .* attempts in" "$out/run.stderr" || true
    python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["summary"]; print("  %d of %d attempts passed" % (s["passed"], s["attempts"])); sys.exit(s["passed"] != s["attempts"])' "$out/results.json"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
