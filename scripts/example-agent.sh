#!/usr/bin/env bash
# The example agent (examples/agents/agent.py, the official openai Python SDK)
# plays an external case end to end: the real toolmock-api on a fresh
# database, the local conversation server (fixtures/conversation-server) as
# its model, the tool-call and finish endpoints. Fails unless the finish
# answers `passed` (its trajectory and final state judged over what toolmock
# recorded).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/install-test-tools.sh
python="$root/.cache/test-venv/bin/python"

set --  # test-env.sh runs its arguments as a command
. scripts/test-env.sh

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
. scripts/serve-api.sh example_agent

port_file="$CARGO_TARGET_DIR/example-agent-port"
rm -f "$port_file"
"$python" fixtures/conversation-server/server.py > "$port_file" &
conversation=$!
trap 'kill $conversation 2>/dev/null || true; stop_api' EXIT
for _ in $(seq 1 300); do [[ -s "$port_file" ]] && break; sleep 0.1; done
model_url="http://127.0.0.1:$(head -n 1 "$port_file")/v1"

token="$("$bin" token --tenant example-agent --subject example \
    --permission AIManager:RunSimulations)"
started="$(curl -fsS "$url/api/simulations" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' --data @examples/agents/simulation.json)"
read -r attempt capability < <("$python" -c '
import json, sys
a = json.loads(sys.argv[1])["attempts"][0]
print(a["id"], a["capability"])' "$started")

finished="$(OPENAI_API_KEY=none "$python" examples/agents/agent.py --toolmock "$url" \
    --attempt "$attempt" --capability "$capability" \
    --model-url "$model_url" --model correct "Note down milk.")"
echo "example-agent: finish answered $finished" >&2
"$python" -c '
import json, sys
r = json.loads(sys.argv[1])
assert r["outcome"] == "passed" and r["as_expected"], r
print("1 passed, 0 failed")' "$finished"
