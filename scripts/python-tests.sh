#!/usr/bin/env bash
# Builds the Python package (bindings/python) with maturin in a virtualenv
# under target/, installs the wheel and runs its pytest suite: the
# conformance vectors through the package, the property test against the
# CLI, the plugin on HealthPlus, the API's own tests.
#
#   scripts/python-tests.sh [PYTEST ARGS…]
#
# The wheel is a debug build, so that it shares target/debug with
# `cargo test` (only the binding crate compiles on a warm target/);
# scripts/bench-python.sh builds the release wheel. The CLI the tests
# compare with is target/debug/toolmock (under CARGO_TARGET_DIR when set),
# built here when missing or stale.
# The pinned test requirements are installed by scripts/install-test-tools.sh.
# Exits with pytest's status; pytest prints its summary line last.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/target/python-venv"

"$root/scripts/install-test-tools.sh"
(cd "$root" && cargo build --locked -p toolmock-cli >&2)
rm -rf "$root/target/wheels/toolmock-"*.whl
(cd "$root/bindings/python" && "$venv/bin/maturin" build --locked --quiet \
  --interpreter "$venv/bin/python" --out "$root/target/wheels" >&2)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  "$root"/target/wheels/toolmock-*.whl

cd "$root/bindings/python"
export TOOLMOCK_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/toolmock"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@" tests
