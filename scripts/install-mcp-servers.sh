#!/usr/bin/env bash
# Installs the MCP servers and clients that toolmock's integration tests run
# (toolmock-discovery's, and toolmock serve's in bins/cli/tests/mcp_clients.rs):
#
#   .cache/mcp-venv  the official Python `mcp` SDK (fixtures/mcp/requirements.txt,
#                    every package pinned exactly by fixtures/mcp/constraints.txt),
#                    which runs the fixture server fixtures/mcp/fixture_server.py
#   .cache/npm       the published @modelcontextprotocol/server-everything, the
#                    official TypeScript SDK (@modelcontextprotocol/sdk, its
#                    client) with ajv, and the MCP Inspector (its --cli mode),
#                    pinned by fixtures/mcp/npm/package-lock.json (`npm ci`)
#
# Idempotent: each part is reinstalled only when its pins changed (a stamp file
# records the checksum of the pin files) or the install is incomplete. Run it
# from anywhere; paths are relative to the workspace root. Needs python3 (3.10
# or newer, with venv) and node 20+ with npm.
#
#   scripts/install-mcp-servers.sh          install or verify
#   scripts/install-mcp-servers.sh --force  reinstall both from scratch
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache"
venv="$cache/mcp-venv"
npm_prefix="$cache/npm"
force=0
if [[ "${1:-}" == "--force" ]]; then
    force=1
elif [[ $# -gt 0 ]]; then
    echo "usage: $0 [--force]" >&2
    exit 2
fi

say() { printf 'install-mcp-servers: %s\n' "$*" >&2; }
checksum() { cat "$@" | sha256sum | cut -d' ' -f1; }

mkdir -p "$cache"

# --- Python SDK --------------------------------------------------------------
python="${PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
    say "python3 is required (set PYTHON to use another interpreter)"
    exit 1
fi
py_pins=("$root/fixtures/mcp/requirements.txt" "$root/fixtures/mcp/constraints.txt")
py_sum="$(checksum "${py_pins[@]}")"
py_stamp="$venv/.toolmock-stamp"
if [[ $force -eq 1 || ! -x "$venv/bin/python" || "$(cat "$py_stamp" 2>/dev/null)" != "$py_sum" ]] \
    || ! "$venv/bin/python" -c 'import mcp.server.lowlevel, mcp.server.stdio' >/dev/null 2>&1; then
    say "installing the Python mcp SDK into $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "$root/fixtures/mcp/requirements.txt" -c "$root/fixtures/mcp/constraints.txt"
    "$venv/bin/python" -c 'import mcp.server.lowlevel, mcp.server.stdio'
    printf '%s\n' "$py_sum" >"$py_stamp"
else
    say "Python mcp SDK up to date in $venv"
fi
say "$("$venv/bin/python" -m pip show mcp 2>/dev/null | grep -E '^Version:' | sed 's/^/mcp /')"

# --- server-everything (npm) -------------------------------------------------
if ! command -v npm >/dev/null 2>&1; then
    say "npm (node 20 or newer) is required"
    exit 1
fi
npm_pins=("$root/fixtures/mcp/npm/package.json" "$root/fixtures/mcp/npm/package-lock.json")
npm_sum="$(checksum "${npm_pins[@]}")"
npm_stamp="$npm_prefix/.toolmock-stamp"
entry="$npm_prefix/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [[ $force -eq 1 || ! -f "$entry" || "$(cat "$npm_stamp" 2>/dev/null)" != "$npm_sum" ]]; then
    say "installing @modelcontextprotocol/server-everything into $npm_prefix"
    rm -rf "$npm_prefix"
    mkdir -p "$npm_prefix"
    cp "${npm_pins[@]}" "$npm_prefix/"
    (cd "$npm_prefix" && npm ci --no-audit --no-fund --loglevel=error)
    test -f "$entry"
    printf '%s\n' "$npm_sum" >"$npm_stamp"
else
    say "server-everything up to date in $npm_prefix"
fi
say "server-everything $(node -p "require('$npm_prefix/node_modules/@modelcontextprotocol/server-everything/package.json').version")"
