#!/usr/bin/env bash
# Runs schemathesis (from PyPI, pinned, in .cache/schemathesis-venv) against the
# real toolmock-api binary and its own OpenAPI document: every operation is
# fuzzed with generated requests, and the run fails on any 500 and on any
# response that breaks the document (undocumented status, wrong content type,
# a body that does not match its schema). `positive_data_acceptance` is left
# out: the document types mock definitions, manifests, agents and MCP tool
# lists as JSON objects, whose rules (docs/spec.md §7, §9) no JSON Schema of the
# request states, so a schema-valid body may rightly be a 422 listing them.
#
# It starts PostgreSQL if needed (scripts/test-env.sh), serves the API on a
# fresh database of its own (scripts/serve-api.sh), seeds one tool, agent and simulation
# so that id-taking routes meet real rows too, and stops the server at the end.
#
#   scripts/schemathesis.sh [MAX_EXAMPLES]     (default 50 per operation)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
max_examples="${1:-50}"
version="4.32.5"
venv="$root/.cache/schemathesis-venv"

set --  # test-env.sh runs its arguments as a command
. scripts/test-env.sh

if [[ ! -x "$venv/bin/st" ]] || ! "$venv/bin/st" --version | grep -q "$version"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "schemathesis==$version"
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
. scripts/serve-api.sh schemathesis

token="$("$bin" token --tenant schemathesis --permission AIManager:ManageTools --permission AIManager:RunSimulations)"
auth="Authorization: Bearer $token"
post() { curl -fsS -H "$auth" -H 'content-type: application/json' -d "$2" "$url$1"; }
tool="$(post /api/tools '{"name": "calendar", "source": {"type": "custom", "operations": [{"name": "book",
  "input_schema": {"type": "object", "properties": {"day": {"type": "string"}}},
  "output_schema": {"type": "object", "properties": {"reference": {"type": "string"}}, "required": ["reference"]}}]}}')"
tool_id="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<<"$tool")"
post /api/agents "{\"name\": \"a\", \"tools\": [{\"type\": \"library\", \"tool\": \"$tool_id\"}]}" >/dev/null
# A simulation of scripted cases only: it finishes in a moment, so its events
# stream ends too.
post /api/simulations "@$root/fixtures/api/notes-simulation.json" >/dev/null

"$venv/bin/st" run "$url/api/openapi.json" \
    --header "$auth" \
    --checks all \
    --exclude-checks positive_data_acceptance \
    --max-examples "$max_examples" \
    --workers 2 \
    --suppress-health-check all \
    --no-color
