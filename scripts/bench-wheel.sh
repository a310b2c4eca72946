#!/usr/bin/env bash
# The wheel's two performance targets, measured (docs/performance.md, "The
# wheel"): importing the package, and `toolmock.run` of a simulation file
# against the CLI's own binary for the same file, in the same run.
#
#   scripts/bench-wheel.sh [FILE] [ROUNDS]     (default: HealthPlus, 30)
#
# Builds the release wheel with the release script (scripts/build-wheel.sh)
# and the release binary (`cargo build --release -p toolmock-cli`), installs
# the wheel into a new virtual environment (target/wheel-bench-venv), and
# runs scripts/bench_python/wheel.py there: medians over ROUNDS runs,
# alternating side by side.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
file=$(realpath "${1:-$root/fixtures/healthplus/simulation.json}")
rounds=${2:-30}
venv="$root/target/wheel-bench-venv"

wheel=$("$root/scripts/build-wheel.sh" --profile release --allow-modified)
(cd "$root" && cargo build --release --locked --quiet -p toolmock-cli)
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$wheel"
echo "bench-wheel: $(basename "$wheel") at $(git -C "$root" rev-parse --short=12 HEAD), $file, $rounds rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
cd "$venv"
PATH="$venv/bin:$PATH" "$venv/bin/python" "$root/scripts/bench_python/wheel.py" \
    "${CARGO_TARGET_DIR:-$root/target}/release/toolmock" "$file" "$rounds"
