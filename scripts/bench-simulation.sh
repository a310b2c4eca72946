#!/usr/bin/env bash
# Issue 12's `toolmock run` benchmarks (figures go to docs/performance.md,
# "Simulations"):
#   1. 10,000 scripted attempts x 10 calls (scripts/bench-simulation-data.py),
#      with --json (every attempt's calls kept for the document):
#      target <= 2 s wall, peak RSS <= 500 MB;
#   2. the HealthPlus suite end to end: target <= 200 ms.
# Release build; hyperfine for wall time, GNU time for peak RSS (both
# installed from Debian when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
install_who="bench-simulation"
# shellcheck source=scripts/lib/install.sh
. scripts/lib/install.sh
command -v hyperfine >/dev/null 2>&1 || apt_install hyperfine hyperfine
[[ -x /usr/bin/time ]] || apt_install "GNU time" time

cargo build --release --locked -p toolmock-cli
bin="$CARGO_TARGET_DIR/release/toolmock"
data="$CARGO_TARGET_DIR/bench-simulation"
python3 scripts/bench-simulation-data.py "$data" --cases 100 --attempts 100

echo "== 10,000 attempts x 10 calls, --json =="
"$bin" run "$data/simulation.json" --json > "$data/results.json"
python3 - "$data/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
calls = sum(len(a["calls"]) for c in r["cases"] for a in c["attempts"])
print(f"ok={r['ok']} attempts={r['summary']['attempts']} calls={calls}")
assert r["ok"] and r["summary"]["attempts"] == 10000 and calls == 100000
PY
hyperfine --warmup 1 --runs "${BENCH_RUNS:-10}" \
    "$bin run $data/simulation.json --json > /dev/null"
/usr/bin/time -v "$bin" run "$data/simulation.json" --json 2>&1 >/dev/null \
    | grep -E "Maximum resident set size|Elapsed \(wall clock\)"

echo "== HealthPlus suite =="
hyperfine --warmup 3 --runs "${BENCH_RUNS_SMALL:-30}" -N \
    "$bin run fixtures/healthplus/simulation.json"
