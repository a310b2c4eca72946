#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ (docs/reliability.md).
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]
#
# TARGET is definition, number, date or all (the default); each target runs
# for SECONDS (default 600) under `nice -n 10`. cargo-fuzz and a nightly
# toolchain are installed when missing. The corpora in fuzz/corpus/ (git
# ignored) are seeded from the conformance definitions first; crashes land in
# fuzz/artifacts/TARGET/ and each run's log in fuzz/logs/TARGET.log.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-all}
seconds=${2:-600}
targets=(definition number date)
case "$target" in
  all) ;;
  definition | number | date) targets=("$target") ;;
  *) echo "usage: $0 [definition|number|date|all] [SECONDS]" >&2; exit 2 ;;
esac

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi

cd "$root/fuzz"
mkdir -p corpus/definition corpus/number corpus/date logs

seed() {
  local name=$1 text=$2
  # One file per seed, named by its content so that reseeding is idempotent.
  local file
  file="corpus/$name/seed-$(printf '%s' "$text" | sha1sum | cut -c1-16)"
  [ -e "$file" ] || printf '%s' "$text" >"$file"
}

# definition: every definition of the shared and the project's conformance
# vectors, compact, plus the raw text of the invalid-JSON vectors.
for dir in "$root/../shared/conformance" "$root/fixtures/conformance"; do
  [ -d "$dir" ] || continue
  for vector in "$dir"/*.json; do
    if def=$(jq -ce '.definition // empty' "$vector" 2>/dev/null); then
      seed definition "$def"
    fi
    if text=$(jq -re '.definition_text // empty' "$vector" 2>/dev/null); then
      seed definition "$text"
    fi
  done
done

# number: the accept and reject cases of docs/spec.md §4.
for text in 0 7 -0 0042 1234.50 5.0 -12.25 9007199254740993 9007199254740992.5 \
  0.1 123456789012345678901234567890 '' ' 1' +5 .5 5. 1e3 0x10 1,000 NaN Infinity - 1.2.3 \
  "$(printf '9%.0s' $(seq 1 330))" "0.$(printf '0%.0s' $(seq 1 400))1"; do
  seed number "$text"
done

# date: five bytes of offsets (shape selector, days, hours), then the text.
for text in 2026-01-31 2024-02-29 2026-02-30 0000-01-01 9999-12-31 0001-01-01T00:30:00+01:00 \
  2026-03-01T23:30:00-05:00 2026-03-01t23:30:00z 2026-03-01T23:30:00.123456Z \
  '2026-02-03 10:00:00Z' 2026-02-03T24:00:00Z 2026-02-03T23:59:60Z 2026-02-03T10:00:00+0100 \
  2026-03-01T00:00:00-00:00 2026-2-03 20260203; do
  for prefix in '\x01\x38\x01\x01\x01' '\x06\x10\x01\x30\x01' '\x0b\x01\x80\x09\x01'; do
    file="corpus/date/seed-$(printf '%s %s' "$prefix" "$text" | sha1sum | cut -c1-16)"
    [ -e "$file" ] || { printf "$prefix"; printf '%s' "$text"; } >"$file"
  done
done

status=0
for t in "${targets[@]}"; do
  args=(-max_total_time="$seconds" -timeout=10 -print_final_stats=1)
  if [ "$t" = definition ]; then
    args+=(-max_len=16384 -dict=definition.dict)
  fi
  echo "== fuzz $t for ${seconds}s (log: fuzz/logs/$t.log)"
  if ! nice -n 10 cargo +nightly fuzz run "$t" "corpus/$t" -- "${args[@]}" \
    >"logs/$t.log" 2>&1; then
    echo "!! $t failed; see fuzz/logs/$t.log and fuzz/artifacts/$t/" >&2
    status=1
  fi
  grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|stat::)' "logs/$t.log" || tail -5 "logs/$t.log"
done
exit $status
