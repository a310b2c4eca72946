#!/usr/bin/env bash
# `toolmock eval` on the eval yardstick against another build, in one run
# (docs/performance.md, "toolmock eval against 2ebde9d").
#
#   scripts/bench-eval-compare.sh OLD_TOOLMOCK [CALLS] [ROUNDS]
#
# OLD_TOOLMOCK is the other build's binary, e.g. a release build of 2ebde9d in
# a scratch worktree (`git worktree add ../scratch-old 2ebde9d; cd ../scratch-old;
# cargo build --release -p toolmock-cli`). Generates CALLS call lines (default
# 100000) with fixtures/bench/eval-realistic/calls.py, builds this tree's
# release binary, checks that both write the same bytes, then times ROUNDS
# (default 9) runs of each, old and new alternating so that both see the same
# load, with and without --contract, output to a file. Prints the median
# wall-clock time, calls/s and the new/old ratio of each. Absolute rates move
# with the load of the machine; the ratio of one run is what counts.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: $0 OLD_TOOLMOCK [CALLS] [ROUNDS]}
calls=${2:-100000}
rounds=${3:-9}
data="$root/fixtures/bench/eval-realistic"
work=$(mktemp -d "${TMPDIR:-/tmp}/toolmock-eval-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$data/calls.py" "$calls" > "$work/calls.jsonl"
(cd "$root" && cargo build --release --locked -p toolmock-cli >&2)
new="${CARGO_TARGET_DIR:-$root/target}/release/toolmock"

for contract in "" "--contract $data/contract.json"; do
  # shellcheck disable=SC2086 # $contract is two words or none
  "$old" eval "$data/definition.json" --calls "$work/calls.jsonl" $contract > "$work/old.jsonl"
  # shellcheck disable=SC2086
  "$new" eval "$data/definition.json" --calls "$work/calls.jsonl" $contract > "$work/new.jsonl"
  cmp -s "$work/old.jsonl" "$work/new.jsonl" || { echo "outputs differ (${contract:-no contract})" >&2; exit 1; }
done
echo "outputs identical: $(wc -l < "$work/new.jsonl") lines, sha256 $(sha256sum < "$work/new.jsonl" | cut -c1-16)…"

seconds() { # BIN [ARGS…]: wall-clock seconds of one run, output to a file
  local start end
  start=$(date +%s.%N)
  "$@" > "$work/out.jsonl"
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f\n", b - a }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for label in without-contract with-contract; do
  extra=()
  [ "$label" = with-contract ] && extra=(--contract "$data/contract.json")
  : > "$work/old.times"; : > "$work/new.times"
  for _ in $(seq "$rounds"); do
    seconds "$old" eval "$data/definition.json" --calls "$work/calls.jsonl" "${extra[@]}" >> "$work/old.times"
    seconds "$new" eval "$data/definition.json" --calls "$work/calls.jsonl" "${extra[@]}" >> "$work/new.times"
  done
  o=$(median < "$work/old.times"); n=$(median < "$work/new.times")
  awk -v label="$label" -v o="$o" -v n="$n" -v c="$calls" 'BEGIN {
    printf "%-17s old %7.1f ms %9.0f calls/s   new %7.1f ms %9.0f calls/s   new/old %.2fx\n",
      label, o * 1000, c / o, n * 1000, c / n, o / n }'
done
