#!/usr/bin/env bash
# Tests the set-up scripts on this machine without breaking it (run by
# `just test`, after `setup`):
#
#   1. idempotent: each installer run again installs nothing and says nothing
#      (scripts/install-prerequisites.sh, start-postgres.sh,
#      install-browser.sh, install-test-tools.sh, scripts/just);
#   2. without root or sudo: as the user nobody (setpriv), with a PATH that
#      hides the program each installer looks for and sudo, each one stops
#      with exit 1 and a message naming what is missing and the apt-get
#      command that installs it — nothing is installed;
#   3. `. scripts/test-env.sh` changes none of the caller's shell options
#      (errexit, nounset, pipefail, …): `set -o` is the same before and
#      after, with the options off and with them on, and a failing source
#      returns 1 instead of ending the shell.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
failures=0
fail() { printf 'test-setup: FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }
pass() { printf 'test-setup: ok: %s\n' "$*"; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

# 1. Idempotent: the second run is silent and succeeds.
for script in scripts/install-prerequisites.sh scripts/start-postgres.sh \
    scripts/install-browser.sh scripts/install-test-tools.sh; do
    "$script" >/dev/null 2>&1 || true # the first run may install
    if out="$("$script" 2>&1)"; then
        if [[ -z "$out" ]]; then pass "$script again: nothing to do"; else fail "$script again printed: $out"; fi
    else
        fail "$script again failed: $out"
    fi
done
scripts/just --version >/dev/null 2>&1 || true
if out="$(scripts/just --version 2>&1)" && [[ "$out" == just\ * ]]; then
    pass "scripts/just again: $out, nothing installed"
else
    fail "scripts/just --version again: $out"
fi

# 2. Without root or sudo. A PATH of links to every program of /usr/bin and
# /bin but the hidden ones; the scripts are copied so that nothing of the
# work tree is written.
without() { # DIR PROGRAM… : a PATH folder lacking PROGRAM… and sudo
    local dir=$1
    shift
    mkdir -p "$dir"
    # Later folders win, as earlier ones do on a PATH.
    ln -sf -t "$dir" /sbin/* /bin/* /usr/sbin/* /usr/bin/* /usr/local/bin/* 2>/dev/null || true
    local hidden
    for hidden in sudo "$@"; do rm -f "$dir/$hidden"; done
    chmod a+rx "$dir"
}
mkdir -p "$work/copy/scripts/lib"
cp scripts/lib/install.sh "$work/copy/scripts/lib/"
cp scripts/start-postgres.sh scripts/install-prerequisites.sh scripts/install-browser.sh "$work/copy/scripts/"
mkdir -p "$work/copy/ui-tests" && cp ui-tests/package-lock.json "$work/copy/ui-tests/"
chmod -R a+rX "$work/copy"
as_nobody() { # PATHDIR CMD…
    local path=$1
    shift
    if [[ "$(id -u)" == 0 ]]; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups \
            env -i HOME="$work" PATH="$path" "$@"
    else
        env -i HOME="$work" PATH="$path" "$@"
    fi
}
if [[ "$(id -u)" != 0 ]] && command -v sudo >/dev/null 2>&1; then
    fail "part 2 needs root (to run as nobody) or a user without sudo; this user has sudo"
else
    check_refusal() { # LABEL EXPECTED-PACKAGES SCRIPT HIDDEN…
        local label=$1 packages=$2 script=$3
        shift 3
        local dir="$work/path-$label" out status=0
        without "$dir" "$@"
        out="$(as_nobody "$dir" bash "$work/copy/scripts/$script" 2>&1)" || status=$?
        if [[ $status == 1 && "$out" == *"not root and has no sudo"* && "$out" == *"apt-get install -y $packages"* ]]; then
            pass "$script without root or sudo, $label hidden: $(tail -n 1 <<<"$out" | cut -c1-110)…"
        else
            fail "$script without root or sudo ($label hidden): exit $status: $out"
        fi
    }
    check_refusal postgres-client postgresql-client start-postgres.sh psql pg_isready
    check_refusal curl curl install-prerequisites.sh curl
    check_refusal node "nodejs npm" install-prerequisites.sh node npm
    check_refusal chromium chromium install-browser.sh chromium
fi

# 3. Sourcing test-env.sh keeps the caller's shell options.
for options in "set +euo pipefail" "set -euo pipefail"; do
    if out="$(bash -c "$options"'
        before="$(set -o)"
        . scripts/test-env.sh
        after="$(set -o)"
        if [[ "$before" == "$after" ]]; then echo same; else diff <(echo "$before") <(echo "$after"); fi
        echo "DATABASE_URL=$DATABASE_URL"' 2>&1)" && [[ "$out" == same$'\n'DATABASE_URL=postgres://* ]]; then
        pass ". scripts/test-env.sh after '$options': shell options unchanged, DATABASE_URL set"
    else
        fail ". scripts/test-env.sh after '$options' changed the shell: $out"
    fi
done
# A failing source (no PostgreSQL client on PATH, no root) returns 1 and the
# shell goes on, its options untouched.
dir="$work/path-test-env"
without "$dir" psql pg_isready
cp scripts/test-env.sh "$work/copy/scripts/"
chmod a+r "$work/copy/scripts/test-env.sh"
out="$(cd "$work/copy" && as_nobody "$dir" bash -c 'before="$(set -o)"; . scripts/test-env.sh; status=$?; [[ "$(set -o)" == "$before" ]] && echo "returned $status, options unchanged"' 2>&1)" || true
if [[ "$out" == *"returned 1, options unchanged" ]]; then
    pass ". scripts/test-env.sh that fails: returned 1, the shell went on"
else
    fail ". scripts/test-env.sh that fails: $out"
fi

if ((failures > 0)); then
    echo "test-setup: $failures failure(s)" >&2
    exit 1
fi
echo "test-setup: all passed"
