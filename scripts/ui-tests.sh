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
cargo build --locked -q -p toolmock-api-bin
bin="$CARGO_TARGET_DIR/debug/toolmock-api"

db="toolmock_ui_$$"
base="${DATABASE_URL%/*}"
psql "$DATABASE_URL" -qc "CREATE DATABASE $db" >/dev/null

export TOOLMOCK_JWT_SECRET="ui tests secret, at least thirty-two bytes"
port=$((20000 + RANDOM % 20000))
log="$CARGO_TARGET_DIR/ui-tests-server.log"
"$bin" serve --database-url "$base/$db" --bind "127.0.0.1:$port" 2>"$log" &
server=$!
cleanup() {
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT
url="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$url/readyz" >/dev/null

shots="$CARGO_TARGET_DIR/ui-screenshots"
rm -rf "$shots"
TOOLMOCK_URL="$url" \
TOOLMOCK_TOKEN="$("$bin" token --tenant ui-tests --subject ui-tester \
    --permission AIManager:ManageTools --permission AIManager:RunSimulations)" \
TOOLMOCK_SCREENSHOTS="$shots" \
    node --test --test-concurrency=1 ui-tests/ui.test.mjs
echo "ui-tests: screenshots in $shots" >&2
