#!/usr/bin/env bash
# Installs the MCP servers and clients that toolmock's integration tests run
# (toolmock-discovery's, and toolmock serve's in bins/cli/tests/mcp_clients.rs):
#
#   .cache/mcp-venv  the official Python `mcp` SDK (fixtures/mcp/requirements.txt,
#                    every package pinned exactly by fixtures/mcp/constraints.txt),
#                    which runs the fixture server fixtures/mcp/fixture_server.py
#   .cache/mcp-frameworks-venv
#                    the agent frameworks' own MCP clients, on the MCP Python
#                    SDK 1.x they install: LangChain's MCP adapters and the
#                    OpenAI Agents SDK (fixtures/mcp/frameworks/requirements.txt,
#                    pinned by fixtures/mcp/frameworks/constraints.txt), which
#                    the examples of docs/mcp.md run in
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

# --- the agent frameworks' clients (Python, MCP SDK 1.x) ----------------------
fw_venv="$cache/mcp-frameworks-venv"
fw_pins=("$root/fixtures/mcp/frameworks/requirements.txt" "$root/fixtures/mcp/frameworks/constraints.txt")
fw_sum="$(checksum "${fw_pins[@]}")"
fw_stamp="$fw_venv/.toolmock-stamp"
fw_check='import mcp.client.session, langchain_mcp_adapters.client, agents.mcp'
if [[ $force -eq 1 || ! -x "$fw_venv/bin/python" || "$(cat "$fw_stamp" 2>/dev/null)" != "$fw_sum" ]] \
    || ! "$fw_venv/bin/python" -c "$fw_check" >/dev/null 2>&1; then
    say "installing LangChain's MCP adapters and the OpenAI Agents SDK into $fw_venv"
    rm -rf "$fw_venv"
    "$python" -m venv "$fw_venv"
    "$fw_venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "${fw_pins[0]}" -c "${fw_pins[1]}"
    "$fw_venv/bin/python" -c "$fw_check"
    printf '%s\n' "$fw_sum" >"$fw_stamp"
else
    say "agent frameworks' MCP clients up to date in $fw_venv"
fi
say "$("$fw_venv/bin/python" -m pip list 2>/dev/null | grep -E '^(mcp|langchain-mcp-adapters|openai-agents) ' | tr -s ' ' | paste -sd, -)"

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
