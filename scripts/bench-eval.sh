#!/usr/bin/env bash
# End-to-end throughput of `toolmock eval` (docs/performance.md, "Evaluator").
#
#   scripts/bench-eval.sh [CALLS]
#
# Generates the realistic definition, its contract and a CALLS-line calls file
# (default 100000) into a temporary directory with scripts/bench-data.py,
# builds `cargo build --release -p toolmock-cli`, and times `toolmock eval`
# over the file, with and without --contract, output to /dev/null. Uses
# hyperfine when installed (installing it with apt-get when possible), else
# /usr/bin/time or bash's `time`. Prints calls/s for each; the target is
# ≥ 200,000 calls/s.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
calls=${1:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/toolmock-bench-eval.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$root/scripts/bench-data.py" "$work" "$calls"
(cd "$root" && cargo build --release -p toolmock-cli)
bin="$root/target/release/toolmock"

if ! command -v hyperfine >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get install -y hyperfine >/dev/null 2>&1 || true
fi

# One untimed run of each, to check the output and warm the page cache.
lines=$("$bin" eval "$work/realistic.mock.json" --calls "$work/calls.jsonl" | wc -l)
ok=$("$bin" eval "$work/realistic.mock.json" --calls "$work/calls.jsonl" \
  --contract "$work/realistic.contract.json" | grep -c '^{"ok"')
echo "calls: $calls; output lines: $lines; ok lines with --contract: $ok"
[ "$lines" = "$calls" ] || { echo "expected $calls output lines" >&2; exit 1; }

without=("$bin" eval "$work/realistic.mock.json" --calls "$work/calls.jsonl")
with=("${without[@]}" --contract "$work/realistic.contract.json")

report() { # NAME SECONDS
  awk -v name="$1" -v s="$2" -v n="$calls" \
    'BEGIN { printf "%-18s %8.1f ms  %10.0f calls/s\n", name, s * 1000, n / s }'
}

if command -v hyperfine >/dev/null 2>&1; then
  hyperfine --warmup 2 --runs "${RUNS:-10}" --export-json "$work/hyperfine.json" \
    -n without-contract "${without[*]} >/dev/null" \
    -n with-contract "${with[*]} >/dev/null"
  echo
  for name in without-contract with-contract; do
    median=$(jq -r --arg n "$name" '.results[] | select(.command == $n) | .median' "$work/hyperfine.json")
    report "$name" "$median"
  done
else
  best() { # the fastest of five runs, in seconds
    local best="" s
    for _ in 1 2 3 4 5; do
      start=$(date +%s.%N)
      "$@" >/dev/null
      s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
      if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
    done
    echo "$best"
  }
  report without-contract "$(best "${without[@]}")"
  report with-contract "$(best "${with[@]}")"
fi
