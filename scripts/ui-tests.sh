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
. scripts/serve-api.sh ui

shots="$CARGO_TARGET_DIR/ui-screenshots"
rm -rf "$shots"
TOOLMOCK_URL="$url" \
TOOLMOCK_TOKEN="$("$bin" token --tenant ui-tests --subject ui-tester \
    --permission AIManager:ManageTools --permission AIManager:RunSimulations)" \
TOOLMOCK_SCREENSHOTS="$shots" \
    node --test --test-concurrency=1 ui-tests/ui.test.mjs
echo "ui-tests: screenshots in $shots" >&2
