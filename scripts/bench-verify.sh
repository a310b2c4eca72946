#!/usr/bin/env bash
# The verification benchmark (figures go to docs/performance.md, "toolmock
# verify"): the release `toolmock verify` replays EXAMPLES examples (default
# 1,000: 10 operations x 100 examples) against a local MCP server — the
# project's fixture server on the official Python SDK over stdio
# (fixtures/mcp/fixture_server.py --record-tools --copies 10), every answer
# compared with the mock's and validated against the output schema — RUNS
# times (default 5) at each concurrency of CONCURRENCIES (default "1 4 8").
# Target: 1,000 examples in at most 5 s at the default concurrency (4).
#
#   scripts/bench-verify.sh [RUNS] [CONCURRENCIES]
#
# Each run starts the server afresh (its start is part of the time), lists
# its tools (the drift) and makes every call over one stdio connection. The
# machine's load average is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
concurrencies="${2:-1 4 8}"
operations=10
per_operation=100

python="$PWD/.cache/mcp-venv/bin/python"
[[ -x "$python" ]] || { echo "missing $python: run scripts/install-mcp-servers.sh" >&2; exit 1; }
cargo build --release --locked -p toolmock-cli
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
toolmock="$target_dir/release/toolmock"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
server="$python $PWD/fixtures/mcp/fixture_server.py --record-tools --copies $operations"
"$toolmock" discover --stdio "$server" > "$work/contracts.json"
python3 - "$work" "$server" "$operations" "$per_operation" <<'PY'
import json, sys
work, server, operations, per_operation = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
contracts = json.load(open(f"{work}/contracts.json"))
names = [f"book_room_{n}" for n in range(1, operations + 1)]
contracts = [c for c in contracts if c["contract"]["operation"]["name"] in names]
json.dump(contracts, open(f"{work}/contracts.json", "w"))
definitions = {}
for name in names:
    examples = []
    for i in range(per_operation):
        guest = {"name": f"Guest {i}", "ssn": f"000-00-{i:04d}"}
        arguments = {"room": f"{name}-{i}", "day": "2026-01-02", "guest": guest}
        examples.append({"variant": "booked", "input": arguments,
                         "expected": {"status": "booked", "reference": "R-100", **arguments}})
    definitions[name] = {
        "schema_version": 1, "default_variant": "booked",
        "variants": {"booked": {"result": {"status": "booked", "reference": "R-100",
            "room": {"$input": "room"}, "day": {"$input": "day"}, "guest": {"$input": "guest"}}}},
        "examples": examples,
    }
json.dump({
    "simulation_version": 1, "name": "verify bench",
    "tools": [{"name": "rooms", "from": "contracts", "contracts": "contracts.json",
               "definitions": definitions,
               "verify": {"safe": True, "server": {"command": server}}}],
    "agent": {"name": "agent", "tools": ["rooms"]},
    "cases": [{"name": "replay", "driver": {"type": "external"}}],
}, open(f"{work}/simulation.json", "w"))
PY

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for concurrency in $concurrencies; do
    times=()
    for run in $(seq 1 "$runs"); do
        start=$(date +%s.%N)
        "$toolmock" verify "$work" --json --concurrency "$concurrency" > "$work/report.json" 2>/dev/null
        end=$(date +%s.%N)
        times+=("$(python3 -c "print(f'{$end - $start:.3f}')")")
        agreed=$(python3 -c "import json; print(json.load(open('$work/report.json'))['summary']['agreed'])")
        [[ "$agreed" == "$((operations * per_operation))" ]] || { echo "run $run: $agreed agreed, not $((operations * per_operation))" >&2; exit 1; }
    done
    python3 - "$concurrency" "$((operations * per_operation))" "${times[@]}" <<'PY'
import statistics, sys
concurrency, examples, times = sys.argv[1], int(sys.argv[2]), sorted(float(t) for t in sys.argv[3:])
median = statistics.median(times)
print(f"concurrency {concurrency}: {examples} examples agreed; wall s min {times[0]:.3f} median {median:.3f} max {times[-1]:.3f}"
      f" ({examples / median:.0f} examples/s at the median); runs {' '.join(f'{t:.3f}' for t in times)}")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
