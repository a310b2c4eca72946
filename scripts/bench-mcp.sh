#!/usr/bin/env bash
# The MCP serve benchmark of issue 22 (figures go to docs/performance.md,
# "MCP serve"): `tools/call` through the release `toolmock serve --http`
# with CLIENTS concurrent clients (default 16), each on its own keep-alive
# connection and its own attempt URL, for SECONDS (default 10); then, in the
# same run, the same calls through `Dispatcher::call` in process with the
# same concurrency. Targets: >= 5,000 calls/s and p99 <= 10 ms over HTTP.
#
#   scripts/bench-mcp.sh [CLIENTS] [SECONDS]
#
# Loopback only. The server serves fixtures/mcp/serve/calendar.json (case
# books_a_day); the load generator is crates/mcp/examples/load.rs. The
# machine's load average is printed before and after (other work on the
# cores shows in the figures).
set -euo pipefail
cd "$(dirname "$0")/.."
clients="${1:-16}"
seconds="${2:-10}"

cargo build --release -p toolmock-cli
cargo build --release -p toolmock-mcp --example load
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

log="$(mktemp)"
"$target_dir/release/toolmock" serve fixtures/mcp/serve/calendar.json --case books_a_day \
    --http 127.0.0.1:0 >/dev/null 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
base=""
for _ in $(seq 1 100); do
    base="$(grep -o 'http://[0-9.:]*' "$log" | head -1 || true)"
    [[ -n "$base" ]] && break
    sleep 0.1
done
[[ -n "$base" ]] || { echo "toolmock serve did not start:" >&2; cat "$log" >&2; exit 1; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$target_dir/release/examples/load" "$clients" "$seconds" "$base"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
