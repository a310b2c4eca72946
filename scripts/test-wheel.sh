#!/usr/bin/env bash
# The wheel as a user gets it (run by `just test`): builds it with the
# release script (scripts/build-wheel.sh, the `dev` profile: a release
# build of the whole CLI takes longer than CI can spend on it; the code is
# the same), installs it with pip into a new virtual environment in a
# temporary folder, and runs scripts/wheel_check/check.py there with a
# clean environment: no Rust toolchain, no repository and no ~/.cargo/bin
# on PATH, the repository not on sys.path, the temporary folder as the
# working directory (check.py asserts all of it before it starts). Then
# `pip uninstall` must leave the environment as it was before the install
# (every path under it compared; below, what pytest adds).
#
# What check.py checks with the installed package, on copies of the
# fixtures: the `toolmock` command and `python -m toolmock` print what the
# repository's own binary prints, byte for byte (and `toolmock run` of
# HealthPlus the README's table), and SIGINT ends a run as it ends the binary; `toolmock.run` gives the results document
# of `toolmock run --json`; pytest sessions with the plugin (the suite
# marker on HealthPlus: 24 items pass; a broken copy: one fails, with the
# pointer of its unmet expectation; an MCP URL per test played by the
# official Python MCP SDK client); the same client against
# `toolmock.serve(...)`.
#
#   scripts/test-wheel.sh
#
# Needs: python3 (with venv), the Python MCP SDK in .cache/mcp-venv
# (scripts/install-mcp-servers.sh), PyPI or pip's cache for pytest.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target="${CARGO_TARGET_DIR:-$root/target}"
say() { printf 'test-wheel: %s\n' "$*" >&2; }
mcp_python="$root/.cache/mcp-venv/bin/python"
[[ -x $mcp_python ]] || { say "no $mcp_python: run scripts/install-mcp-servers.sh"; exit 1; }

wheel=$("$root/scripts/build-wheel.sh" --profile dev --allow-modified)
(cd "$root" && cargo build --locked --quiet -p toolmock-cli)
binary="$target/debug/toolmock"

work=$(mktemp -d "${TMPDIR:-/tmp}/toolmock-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
venv="$work/venv"
files="$work/files"
mkdir -p "$files/expected" "$work/home"

# The environment, with pytest (the plugin's host; pinned as the package's tests pin it).
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "$(grep -E '^pytest==' "$root/bindings/python/requirements-test.txt")"
listing() { (cd "$venv" && find . -path ./pyvenv.cfg -prune -o -print | LC_ALL=C sort); }
listing >"$work/before"

# What the user has: copies of the files, nothing else of the repository.
cp -r "$root/fixtures/healthplus" "$files/healthplus"
cp -r "$root/fixtures/examples/book-appointment" "$files/book-appointment"
cp "$root/fixtures/mcp/serve/calendar.json" "$root/fixtures/mcp/clients/python_client.py" \
    "$root/scripts/wheel_check/"*.py "$root/scripts/wheel_check/invocations.json" "$files/"
python3 "$root/scripts/readme-main-job.py" "$root/README.md" "$files/expected"
mv "$files/expected/expected" "$files/expected/readme-table.txt"

# What the repository's binary prints for each invocation check.py repeats
# with the installed command (scripts/wheel_check/invocations.json).
python3 - "$files/invocations.json" "$binary" "$files" <<'PY'
import json, subprocess, sys
invocations, binary, files = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
for name, args, _ in invocations:
    done = subprocess.run([binary, *args], cwd=files, capture_output=True, timeout=120)
    for stream, data in (("stdout", done.stdout), ("stderr", done.stderr), ("status", str(done.returncode).encode())):
        open(f"{files}/expected/{name}.{stream}", "wb").write(data)
PY

# The wheel carries the licence it declares (LICENSE, Apache-2.0).
python3 - "$wheel" "$root/LICENSE" <<'PY' || { say "the wheel does not carry the repository's LICENSE"; exit 1; }
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
names = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
assert len(names) == 1, names
assert wheel.read(names[0]) == open(sys.argv[2], "rb").read()
meta = wheel.read(next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))).decode()
assert "License-Expression: Apache-2.0" in meta and "License-File: LICENSE" in meta, meta[:400]
PY

# Installed, used, uninstalled: twice. First everything but pytest, after
# which the environment must be exactly as before the install. Then the
# pytest sessions: pytest caches the modules of every plugin's distribution
# it loads, rewritten for its assertions, beside them
# (`__pycache__/NAME.cpython-XY-pytest-VERSION.pyc`), files pip never
# installed and so never removes — any pytest plugin leaves them (hypothesis
# does); those, and the folders that hold nothing else, are the only
# difference allowed after that uninstall.
round=0
for part in without-pytest pytest; do
    round=$((round + 1))
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$wheel"
    say "$part: installed $(basename "$wheel") into $venv; checking it with a clean environment"
    (cd "$files" && env -i HOME="$work/home" LANG=C.UTF-8 PATH="$venv/bin:/usr/bin:/bin" \
        TOOLMOCK_REPOSITORY="$root" TOOLMOCK_MCP_PYTHON="$mcp_python" \
        "$venv/bin/python" check.py "$part")
    "$venv/bin/python" -m pip uninstall --quiet --disable-pip-version-check --yes toolmock
    listing >"$work/after-$round"
    diff --label "before pip install" --label "after pip uninstall" "$work/before" "$work/after-$round" >"$work/diff" || true
    unexpected=$(grep -E '^[<>] ' "$work/diff" | grep -Ev '^> \./lib/python3\.[0-9]+/site-packages/toolmock(/__pycache__(/[A-Za-z_]+\.cpython-[0-9]+-pytest-[0-9.]+\.pyc)?)?$' || true)
    if [[ $part == without-pytest && -s "$work/diff" ]] || [[ -n $unexpected ]]; then
        say "$part: pip uninstall toolmock left the environment different from before its install:"
        cat "$work/diff" >&2
        exit 1
    fi
    if [[ -s "$work/diff" ]]; then
        say "$part: ok: pip uninstall toolmock removed every file it installed; left: pytest's own caches, $(grep -c 'pytest-.*\.pyc$' "$work/diff") files"
        rm -rf "$venv/lib/python3."*/site-packages/toolmock
    else
        say "$part: ok: pip uninstall toolmock left the environment exactly as it was ($(wc -l <"$work/after-$round") paths)"
    fi
done
