#!/usr/bin/env bash
# Installs what the UI tests drive: Debian's Chromium (/usr/bin/chromium, from
# the machine's package sources) and playwright-core from npm, pinned by
# ui-tests/package-lock.json into ui-tests/node_modules. Idempotent.
# Needs apt-get (as root, or through sudo; without either it says what is
# missing and how to install it) the first time, and Node.js 20 with npm.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

install_who="install-browser"
# shellcheck source=scripts/lib/install.sh
. "$root/scripts/lib/install.sh"
if ! command -v chromium >/dev/null 2>&1; then
    apt_install "Chromium (Debian's chromium, for the UI tests)" chromium
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
