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

# --- Python venvs -------------------------------------------------------------
python="${PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
    say "python3 is required (set PYTHON to use another interpreter)"
    exit 1
fi

# python_venv VENV WHAT IMPORTS REQUIREMENTS CONSTRAINTS: (re)installs VENV
# from the pin files when they changed or IMPORTS (Python modules, comma
# separated) cannot be imported.
python_venv() {
    local venv=$1 what=$2 imports=$3 requirements=$4 constraints=$5
    local sum stamp="$venv/.toolmock-stamp"
    sum="$(checksum "$requirements" "$constraints")"
    if [[ $force -eq 1 || ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$sum" ]] \
        || ! "$venv/bin/python" -c "import $imports" >/dev/null 2>&1; then
        say "installing $what into $venv"
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
            -r "$requirements" -c "$constraints"
        "$venv/bin/python" -c "import $imports"
        printf '%s\n' "$sum" >"$stamp"
    else
        say "$what up to date in $venv"
    fi
}

python_venv "$venv" "the Python mcp SDK" "mcp.server.lowlevel, mcp.server.stdio" \
    "$root/fixtures/mcp/requirements.txt" "$root/fixtures/mcp/constraints.txt"
say "$("$venv/bin/python" -m pip show mcp 2>/dev/null | grep -E '^Version:' | sed 's/^/mcp /')"

# The agent frameworks' own MCP clients, on the MCP SDK 1.x they install.
frameworks="$root/fixtures/mcp/frameworks"
python_venv "$cache/mcp-frameworks-venv" "LangChain's MCP adapters and the OpenAI Agents SDK" \
    "mcp.client.session, langchain_mcp_adapters.client, agents.mcp" \
    "$frameworks/requirements.txt" "$frameworks/constraints.txt"
say "$("$cache/mcp-frameworks-venv/bin/python" -m pip list 2>/dev/null \
    | grep -E '^(mcp|langchain-mcp-adapters|openai-agents) ' | tr -s ' ' | paste -sd, -)"

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
