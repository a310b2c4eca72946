#!/usr/bin/env bash
# Calls from Python through the toolmock package against an independent,
# interpreted evaluator, in the same run (docs/performance.md, "The Python
# package").
#
#   scripts/bench-python.sh [CALLS] [ROUNDS]
#
# Builds the wheel (release, scripts/build-wheel.sh) and installs it into
# target/python-venv, as scripts/python-tests.sh does, generates CALLS calls (default 100000) with
# the yardstick's calls.py — the shared eval-realistic anchor ($anchor below)
# when it is there (TOOLMOCK_SHARED_DIR names another shared folder), else its copy
# in fixtures/bench/eval-realistic — checks that both
# evaluators answer every call alike, then times ROUNDS (default 5)
# alternating passes of each, the state threaded from call to call — and,
# in the same rounds, `json.loads` and `pickle.loads` of every call's
# result (prepared before the timing): the cost of the answer's own Python
# objects. Prints the rates, the medians, their ratio, and the package's
# time a call against `json.loads` of its result (issue 37's floor).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
calls=${1:-100000}
rounds=${2:-5}
venv="$root/target/python-venv"
anchor="${TOOLMOCK_SHARED_DIR:-$root/../shared}/anchors/eval-realistic"
[[ -f "$anchor/definition.json" ]] || anchor="$root/fixtures/bench/eval-realistic"

wheel=$("$root/scripts/build-wheel.sh" --profile release --allow-modified)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"

PYTHONPATH="$root/scripts/bench_python" exec "$venv/bin/python" "$root/scripts/bench_python/bench.py" \
  "$anchor" "$calls" "$rounds" "$root/fixtures/bench/eval-realistic/contract.json"
