#!/usr/bin/env bash
# The release script of the Python package: builds the one wheel that
# installs the `toolmock` package (evaluator, Attempt, runner, MCP server,
# pytest plugin) and the `toolmock` command (the CLI's code, compiled into
# the package's extension module; `python -m toolmock` too).
#
#   scripts/build-wheel.sh [--profile PROFILE] [--out DIR] [--allow-modified]
#
# PROFILE: the Cargo profile (default `release`; the tests build `dev`, see
# scripts/test-wheel.sh). DIR: where the wheel goes (default target/wheels;
# older toolmock wheels there are removed). Prints the wheel's path on stdout.
#
# What it checks before and after:
# - CHANGELOG.md has a section `## VERSION` for the workspace's version;
# - the checkout has no uncommitted change to a tracked file, since
#   `toolmock --version` names the commit it was built from (build.rs);
#   --allow-modified builds anyway (the tests do, on a working tree);
# - the wheel is tagged for the stable ABI of CPython 3.10 and later
#   (`cp310-abi3`) and for the oldest manylinux whose glibc symbol versions
#   the extension needs on this machine: maturin picks the tag and checks
#   (`--auditwheel check`: no library outside the manylinux policy is
#   linked, none is bundled), and auditwheel (from PyPI) must find the wheel
#   consistent with that same tag. No container and no zig: the wheel is
#   built against this machine's glibc and tagged for what it needs.
#
# Tools: maturin and auditwheel, pinned by bindings/python/requirements-test.txt
# in target/python-venv (installed when missing).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
profile=release
out="$root/target/wheels"
allow_modified=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --profile) profile=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --allow-modified) allow_modified=1; shift ;;
        *) echo "usage: $0 [--profile PROFILE] [--out DIR] [--allow-modified]" >&2; exit 2 ;;
    esac
done
say() { printf 'build-wheel: %s\n' "$*" >&2; }
venv="$root/target/python-venv"

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml")
if ! grep -Eq "^## $(printf '%s' "$version" | sed 's/\./\\./g')( |$)" "$root/CHANGELOG.md"; then
    say "CHANGELOG.md has no section '## $version' for the version being built"
    exit 1
fi
if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]]; then
    if [[ $allow_modified == 0 ]]; then
        say "the checkout has uncommitted changes, and the wheel would name commit $(git -C "$root" rev-parse --short=12 HEAD); commit them, or pass --allow-modified"
        exit 1
    fi
    say "building from a modified checkout of $(git -C "$root" rev-parse --short=12 HEAD) (--allow-modified)"
fi

"$root/scripts/install-test-tools.sh" python
mkdir -p "$out"
rm -f "$out"/toolmock-*.whl
say "maturin build --profile $profile (toolmock $version)"
(cd "$root/bindings/python" && "$venv/bin/maturin" build --locked --quiet \
    --profile "$profile" --strip --auditwheel check \
    --interpreter "$venv/bin/python" --out "$out" >&2)
wheels=("$out"/toolmock-*.whl)
if [[ ${#wheels[@]} != 1 || ! -f ${wheels[0]} ]]; then
    say "expected one wheel in $out, found: ${wheels[*]}"
    exit 1
fi
wheel=${wheels[0]}
name=$(basename "$wheel")

# The tags, as the file name carries them: toolmock-VERSION-cp310-abi3-PLATFORM.whl.
if [[ $name != "toolmock-$version-cp310-abi3-manylinux_"*.whl ]]; then
    say "$name is not tagged toolmock-$version-cp310-abi3-manylinux_*"
    exit 1
fi
platform=${name#"toolmock-$version-cp310-abi3-"}
platform=${platform%.whl}
shown=$("$venv/bin/auditwheel" show "$wheel")
# auditwheel wraps its sentences: read them as one line.
if ! tr -s '[:space:]' ' ' <<<"$shown" | grep -q "is consistent with the following platform tag: \"$platform\""; then
    say "auditwheel does not find $name consistent with its tag $platform:"
    printf '%s\n' "$shown" >&2
    exit 1
fi
say "$name: auditwheel finds it consistent with $platform ($(du -h "$wheel" | cut -f1))"
printf '%s\n' "$wheel"
