#!/usr/bin/env bash
# Issue 21's model-driver benchmarks (figures go to docs/performance.md,
# "Model-driven cases"):
#   1. the driver's own cost per turn, everything but the model's answer
#      (crates/simulation/examples/bench_model_driver.rs: a model that
#      answers at once from a script): target <= 0.5 ms per turn;
#   2. 200 attempts x 5 turns through `toolmock run --jobs 16` against the
#      local conversation server (fixtures/conversation-server, real HTTP,
#      every request checked with the openai SDK's types; SERVER_PROCESSES
#      processes, default 2: one GIL-bound process is slower than the driver
#      it measures), at most --model-concurrency 16 requests in flight
#      (checked: the server's max_in_flight): target <= 3 s wall.
# Release build (PROFILE=debug: the dev build); needs scripts/install-test-tools.sh's .cache/test-venv.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# PROFILE=debug measures the unoptimized build (an upper bound).
profile="${PROFILE:-release}"
if [[ "$profile" == release ]]; then flag=--release; else flag=; fi
# Both targets by name: naming an example alone would build no binary.
cargo build $flag --locked -p toolmock-cli --bin toolmock -p toolmock-simulation --example bench_model_driver
bin="$CARGO_TARGET_DIR/$profile/toolmock"

echo "== the driver's own cost per turn =="
"$CARGO_TARGET_DIR/$profile/examples/bench_model_driver" 2000

echo "== 200 attempts x 5 turns, --jobs 16, against the conversation server =="
data="$CARGO_TARGET_DIR/bench-agents"
mkdir -p "$data"
python3 - "$data/simulation.json" <<'PY'
import json, sys
doc = {
    "simulation_version": 1, "name": "bench agents", "attempts": 200,
    "tools": [{
        "name": "notes", "from": "custom",
        "operations": [{"name": "add", "description": "Adds a note.",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "output_schema": {"type": "object", "required": ["id"]}}],
        "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
            "variants": {"ok": {"result": {"id": "n-1"}}},
            "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}}]}},
    }],
    "agent": {"name": "scribe", "prompt": "You keep notes.", "tools": ["notes"]},
    "cases": [{"name": "adds", "driver": {"type": "model", "messages": ["Add four notes."], "max_turns": 5},
               "expect": {"final_answer": {"contains": ["four"]}}}],
}
json.dump(doc, open(sys.argv[1], "w"))
PY
port_file="$data/port"
.cache/test-venv/bin/python fixtures/conversation-server/server.py \
    --processes "${SERVER_PROCESSES:-2}" > "$port_file" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [[ -s "$port_file" ]] && break; sleep 0.2; done
port="$(head -n 1 "$port_file")"
url="http://127.0.0.1:$port/v1"
for run in 1 2 3; do
    start=$(date +%s.%N)
    "$bin" run "$data/simulation.json" --jobs 16 --model-url "$url" --model five \
        --model-concurrency 16 --json > "$data/results.json"
    end=$(date +%s.%N)
    python3 - "$data/results.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
turns = sum(sum(1 for m in a["conversation"] if m["role"] == "assistant") for c in r["cases"] for a in c["attempts"])
print(f"{r['summary']['attempts']} attempts, {turns} turns, all passed: {r['ok']}, {float(sys.argv[3]) - float(sys.argv[2]):.2f} s")
PY
done
max_in_flight="$(curl -fsS "http://127.0.0.1:$port/counts" | python3 -c 'import json, sys; print(json.load(sys.stdin)["max_in_flight"])')"
echo "model requests in flight at most: $max_in_flight (bound: --model-concurrency 16)"
if (( max_in_flight > 16 )); then
    echo "bench-agents: the bound on concurrent model requests did not hold" >&2
    exit 1
fi
