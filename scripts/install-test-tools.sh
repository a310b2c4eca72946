#!/usr/bin/env bash
# Installs the Python packages the tests use, each set pinned in its
# requirements file, into its own virtualenv:
#
#   .cache/test-venv      scripts/test-requirements.txt: junitparser reads the
#                         JUnit XML of `toolmock run --junit` back
#                         (bins/cli/tests/run.rs), as a CI system would;
#                         openai: the conversation server's request and answer
#                         types (fixtures/conversation-server, bins/cli/tests/agents.rs)
#   target/python-venv    bindings/python/requirements-test.txt: maturin
#                         builds the Python package's wheel; pytest and
#                         hypothesis run its tests (scripts/python-tests.sh)
#
# Idempotent: a virtualenv is rebuilt only when its requirements changed.
# Needs python3 (3.10 or newer, with venv).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"

install() { # VENV REQUIREMENTS
    local venv=$1 requirements=$2
    local stamp="$venv/.requirements.sha256" want
    want="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    echo "install-test-tools: installing $(tr '\n' ' ' < "$requirements")into $venv" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
}

install "$root/.cache/test-venv" "$root/scripts/test-requirements.txt"
install "$root/target/python-venv" "$root/bindings/python/requirements-test.txt"
