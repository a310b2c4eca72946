#!/usr/bin/env bash
# The UI's browser tests: serves the real toolmock-api binary on a fresh
# database, mints a development token, and runs ui-tests/ui.test.mjs (node's
# test runner, playwright-core driving headless Debian Chromium) against it.
# Screenshots of every page go to target/ui-screenshots/; the tests check
# each one. Installs what it needs first (scripts/install-browser.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/install-browser.sh

set --  # test-env.sh runs its arguments as a command
. scripts/test-env.sh

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
# The local conversation server plays the model cases of the in-process
# worker (docs/agents.md); the API takes its endpoint from the environment.
scripts/install-test-tools.sh
conversation_port="$CARGO_TARGET_DIR/ui-conversation-port"
rm -f "$conversation_port"
"$root/.cache/test-venv/bin/python" fixtures/conversation-server/server.py > "$conversation_port" &
conversation=$!
for _ in $(seq 1 300); do [[ -s "$conversation_port" ]] && break; sleep 0.1; done
export TOOLMOCK_MODEL_URL="http://127.0.0.1:$(head -n 1 "$conversation_port")/v1"
export TOOLMOCK_MODEL=correct TOOLMOCK_JUDGE_MODEL=judge_pass
# External attempts' simulated users (ask-user): a customer that unlocks its
# phone (its own tool) before it asks for a note.
export TOOLMOCK_USER_MODEL=customer_tools
# The verification page's real tool listens on this machine's loopback, which
# a worker refuses by default (docs/operations.md, private targets).
export TOOLMOCK_ALLOW_PRIVATE_TARGETS=true
. scripts/serve-api.sh ui
trap 'kill $conversation 2>/dev/null || true; stop_api' EXIT

shots="$CARGO_TARGET_DIR/ui-screenshots"
rm -rf "$shots"
TOOLMOCK_URL="$url" \
TOOLMOCK_TOKEN="$("$bin" token --tenant ui-tests --subject ui-tester \
    --permission AIManager:ManageTools --permission AIManager:RunSimulations)" \
TOOLMOCK_SCREENSHOTS="$shots" \
    node --test --test-concurrency=1 ui-tests/ui.test.mjs
echo "ui-tests: screenshots in $shots" >&2
