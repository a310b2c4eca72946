#!/usr/bin/env bash
# Installs what the UI tests drive: Debian's Chromium (/usr/bin/chromium, from
# the machine's package sources) and playwright-core from npm, pinned by
# ui-tests/package-lock.json into ui-tests/node_modules. Idempotent.
# Needs apt-get (as root, or sudo) the first time, and Node.js 20 with npm.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v chromium >/dev/null 2>&1; then
    echo "install-browser: installing Debian's chromium" >&2
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq || true
    $sudo apt-get install -y -qq chromium >/dev/null
fi

lock="$root/ui-tests/package-lock.json"
stamp="$root/ui-tests/node_modules/.lock.sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi
echo "install-browser: installing playwright-core (ui-tests/package-lock.json)" >&2
(cd "$root/ui-tests" && npm ci --no-audit --no-fund --silent)
echo "$want" > "$stamp"
