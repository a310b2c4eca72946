#!/usr/bin/env bash
# The environment the tests need: a PostgreSQL server on 127.0.0.1:5432 that
# lets postgres in without a password (each #[sqlx::test] creates and drops
# its own database on it; scripts/start-postgres.sh installs and starts it
# when needed), and DATABASE_URL naming it (default: its maintenance database
# postgres, which the tests only connect to in order to create their own).
#
#   . scripts/test-env.sh                            in your shell (bash, zsh)
#   scripts/test-env.sh cargo test -p toolmock-store  run one command after it
#
# Sourced, it sets DATABASE_URL and nothing else: it changes none of your
# shell's options (errexit, nounset, pipefail…) — the work runs in a child
# process — and a failure returns 1 instead of closing your shell.

_tm_sourced=0
if [ -n "${BASH_VERSION:-}" ]; then
    _tm_self="${BASH_SOURCE[0]}"
    [ "${BASH_SOURCE[0]}" != "$0" ] && _tm_sourced=1
elif [ -n "${ZSH_VERSION:-}" ]; then
    _tm_self="$0"
    case "${ZSH_EVAL_CONTEXT:-}" in *:file*) _tm_sourced=1 ;; esac
else
    _tm_self="$0"
    case "$0" in
    *test-env.sh) ;;
    *) _tm_sourced=1 _tm_self=scripts/test-env.sh ;;
    esac
fi
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

if [ "$_tm_sourced" = 1 ]; then
    if "$(dirname "$_tm_self")/start-postgres.sh"; then
        unset _tm_sourced _tm_self
        return 0
    fi
    unset _tm_sourced _tm_self
    return 1
fi

set -euo pipefail
"$(dirname "$_tm_self")/start-postgres.sh"
if [ "$#" -gt 0 ]; then
    exec "$@"
fi
