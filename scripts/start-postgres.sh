#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 and lets the user
# postgres in without a password (tests create and drop their own databases
# in it). Idempotent; every step is skipped when it is already done:
#
#   1. the client (psql, pg_isready) missing: installs Debian's
#      postgresql-client;
#   2. nothing answers on 127.0.0.1:5432 and no server is installed: installs
#      Debian's postgresql (the server; it creates the cluster "main");
#   3. no cluster: creates one (pg_createcluster VERSION main);
#   4. a cluster this script installed or created: trust authentication for
#      local connections and the loopback (127.0.0.1, ::1) — a development
#      server, reached only from this machine;
#   5. starts the cluster when it is stopped (pg_ctlcluster), waits until it
#      answers, and checks that postgres@127.0.0.1 can connect.
#
# Installing and starting need root or sudo; without them it says what is
# missing and the command that installs it. It never changes the
# authentication of a cluster it did not make: a server that refuses
# postgres@127.0.0.1 gets a message saying what to add to pg_hba.conf.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
install_who="start-postgres"
# shellcheck source=scripts/lib/install.sh
. "$root/scripts/lib/install.sh"
say() { printf 'start-postgres: %s\n' "$*" >&2; }

answers() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
connects() { psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -XAtqc 'select 1' >/dev/null 2>&1; }
# The newest installed server version (a folder of /usr/lib/postgresql with
# a postgres binary), or nothing.
server_version() {
    local bin
    bin="$(ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sort -V | tail -n 1 || true)"
    [[ -n "$bin" ]] && basename "$(dirname "$(dirname "$bin")")"
}

# 1. The client.
if ! command -v pg_isready >/dev/null 2>&1 || ! command -v psql >/dev/null 2>&1; then
    apt_install "the PostgreSQL client (psql, pg_isready)" postgresql-client
fi

made=0
if ! answers; then
    # 2. The server.
    version="$(server_version || true)"
    if [[ -z "$version" ]] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
        apt_install "the PostgreSQL server" postgresql
        version="$(server_version || true)"
        [[ -n "$version" ]] || { say "the postgresql package installed no server under /usr/lib/postgresql"; exit 1; }
        made=1
    fi
    # 3. The cluster.
    if [[ ! -f "/etc/postgresql/$version/main/postgresql.conf" ]]; then
        if ! can_be_root; then
            say "PostgreSQL $version has no cluster; creating one needs root or sudo. As root, run: pg_createcluster $version main"
            exit 1
        fi
        say "creating the cluster $version/main"
        as_root pg_createcluster "$version" main >/dev/null
        made=1
    fi
    # 4. Trust on the loopback, for a cluster made here.
    if [[ $made == 1 ]]; then
        say "trust authentication for local and loopback connections ($version/main is a development server)"
        as_root tee "/etc/postgresql/$version/main/pg_hba.conf" >/dev/null <<'HBA'
# Written by toolmock's scripts/start-postgres.sh: a development server.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 trust
host    all       all   127.0.0.1/32  trust
host    all       all   ::1/128       trust
HBA
    fi
    # 5. Start it.
    if ! can_be_root; then
        say "PostgreSQL $version/main is stopped; starting it needs root or sudo (or its owner, postgres). Run: pg_ctlcluster $version main start"
        exit 1
    fi
    say "starting PostgreSQL $version/main"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start ||
        as_root pg_ctlcluster --skip-systemctl-redirect "$version" main restart
    for _ in $(seq 1 60); do
        answers && break
        sleep 0.5
    done
    if ! answers; then
        say "PostgreSQL $version/main does not answer on 127.0.0.1:5432 (its log: /var/log/postgresql/postgresql-$version-main.log)"
        exit 1
    fi
fi

if ! connects; then
    say "PostgreSQL answers on 127.0.0.1:5432 but refuses postgres@127.0.0.1 without a password. The tests need trust authentication on the loopback: add 'host all all 127.0.0.1/32 trust' before the other host lines of its pg_hba.conf (psql -h 127.0.0.1 -U postgres -c 'show hba_file' names it) and reload it, or set DATABASE_URL to a server that lets postgres in"
    exit 1
fi
