#!/usr/bin/env bash
# Builds the Python package (bindings/python) with maturin in a virtualenv
# under target/, installs the wheel and runs its pytest suite: the
# conformance vectors through the package, the property test against the
# CLI, the plugin on HealthPlus, the API's own tests.
#
#   scripts/python-tests.sh [PYTEST ARGS…]
#
# The wheel is built by the release script (scripts/build-wheel.sh) with
# the `dev` profile, so that it shares target/debug with `cargo test` (only
# the binding crate compiles on a warm target/); scripts/bench-python.sh
# builds the release wheel. scripts/test-wheel.sh tests the same wheel
# installed into a clean environment. The CLI the tests
# compare with is target/debug/toolmock (under CARGO_TARGET_DIR when set),
# built here when missing or stale.
# The pinned test requirements are installed by scripts/install-test-tools.sh
# (build-wheel.sh runs it).
# Exits with pytest's status; pytest prints its summary line last.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/target/python-venv"

(cd "$root" && cargo build --locked -p toolmock-cli >&2)
wheel=$("$root/scripts/build-wheel.sh" --profile dev --allow-modified)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"

cd "$root/bindings/python"
export TOOLMOCK_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/toolmock"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@" tests
