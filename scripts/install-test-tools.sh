#!/usr/bin/env bash
# Installs the Python packages the CLI tests use as independent consumers of
# toolmock's output, into .cache/test-venv:
#
#   junitparser  reads the JUnit XML of `toolmock run --junit` back
#                (bins/cli/tests/run.rs), as a CI system would
#
# Idempotent: reinstalls only when scripts/test-requirements.txt changed.
# Needs python3 (3.9 or newer, with venv).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.cache/test-venv"
requirements="$root/scripts/test-requirements.txt"
stamp="$venv/.requirements.sha256"
python="${PYTHON:-python3}"

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi
echo "install-test-tools: installing $(tr '\n' ' ' < "$requirements")into $venv" >&2
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
echo "$want" > "$stamp"
