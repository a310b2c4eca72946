#!/usr/bin/env bash
# Installs, from Debian's packages, the programs the tests run that a machine
# with only the Rust toolchain may lack; each is installed only when missing
# (idempotent, silent when all are there):
#
#   curl                  scripts/serve-api.sh waits for the API with it
#   git                   the README test clones the repository
#   jq                    docs/walkthrough.md reads the API's answers with it
#   python3, python3-venv the virtualenvs of the test tools, the MCP fixture
#                         server and the Python package (3.10 or newer)
#   nodejs, npm           the MCP server-everything and playwright-core
#                         (Node.js 20 or newer)
#   prlimit (util-linux)  the API's memory-bounded tests
#
# Installing needs root or sudo; without them it names what is missing and
# the command that installs it. A Node.js or Python older than the tests
# need is reported, not replaced.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
install_who="install-prerequisites"
# shellcheck source=scripts/lib/install.sh
. "$root/scripts/lib/install.sh"
say() { printf 'install-prerequisites: %s\n' "$*" >&2; }
has() { command -v "$1" >/dev/null 2>&1; }

has curl || apt_install "curl" curl
has git || apt_install "git" git
has jq || apt_install "jq" jq
has prlimit || apt_install "prlimit" util-linux
if ! has python3 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt_install "python3 with venv" python3 python3-venv
fi
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    say "python3 is $(python3 --version 2>&1); the tests need 3.10 or newer (set PYTHON for the scripts that honour it, or install a newer python3)"
    exit 1
fi
if ! has node || ! has npm; then
    apt_install "Node.js (node and npm)" nodejs npm
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if ((node_major < 20)); then
    say "Node.js is $(node --version); the MCP test server and the browser tests need Node.js 20 or newer (Debian 13's nodejs package is)"
    exit 1
fi
