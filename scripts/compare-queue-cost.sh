#!/usr/bin/env bash
# What a verified receipt costs, next to what a general PostgreSQL queue (pgqueuer) spends moving one empty job on
# the same server in the same run. Builds receipt-worker in release mode if needed, starts one temporary
# PostgreSQL 15 (fsync, synchronous_commit, full_page_writes and wal_init_zero off, as `bench` runs its own), installs
# pgqueuer 1.6.0 and asyncpg into a throwaway virtual environment (never into the project), then runs in turns,
# ROUNDS times: `receipt-worker bench --apple-latency-ms 0` and pgqueuer draining as many empty jobs, and prints
# per job for each run and the medians: jobs/s, the worker's and PostgreSQL's CPU (µs), WAL bytes and write
# transactions, all measured over the drain only (scripts/compare_queue_cost.py says how).
#
#   bash scripts/compare-queue-cost.sh [--rounds N] [--jobs N] [--statements] [--json]
#
# --statements preloads pg_stat_statements (track=all) and prints, for the last round, the statements PostgreSQL
# ran per job for each system; it costs PostgreSQL a little time per statement, so compare CPU without it.
# PGQUEUER_VENV=DIR reuses (or creates) the virtual environment in DIR instead of a temporary one.
set -euo pipefail
cd "$(dirname "$0")/.."

statements=false
for argument in "$@"; do
    [ "$argument" = "--statements" ] && statements=true
done

bash scripts/install-deps.sh >&2
binary=.build/release/receipt-worker
swift build -c release --product receipt-worker >&2
[ -x "$binary" ] || { echo "compare-queue-cost: no $binary after the build" >&2; exit 1; }

pg_bin=/usr/lib/postgresql/15/bin
[ -x "$pg_bin/initdb" ] || pg_bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
work=$(mktemp -d "${TMPDIR:-/tmp}/compare-queue-cost.XXXXXX")
chmod 755 "$work"
# As root, the server runs as the postgres OS user (initdb and postgres refuse root).
as_server_user() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[ "$(id -u)" -eq 0 ] && chown postgres "$work"

cleanup() {
    if [ -f "$work/data/postmaster.pid" ]; then
        as_server_user "$pg_bin/pg_ctl" stop -w -D "$work/data" -m fast >/dev/null 2>&1 || \
            as_server_user "$pg_bin/pg_ctl" stop -w -D "$work/data" -m immediate >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

venv=${PGQUEUER_VENV:-$work/venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pgqueuer, asyncpg, uvloop' 2>/dev/null; then
    echo "compare-queue-cost: installing pgqueuer 1.6.0 and asyncpg into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'pgqueuer==1.6.0' asyncpg uvloop
fi

as_server_user "$pg_bin/initdb" -D "$work/data" -A trust -U postgres --no-sync -E UTF8 --locale=C >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
options="-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work -c max_connections=200"
options+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c wal_init_zero=off"
if $statements; then
    options+=" -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
    options+=" -c pg_stat_statements.max=10000"
fi
as_server_user "$pg_bin/pg_ctl" start -w -D "$work/data" -l "$work/postgres.log" -o "$options" >/dev/null
url="postgresql://postgres@127.0.0.1:$port/postgres"
postmaster=$(head -1 "$work/data/postmaster.pid")
if $statements; then
    # The view is read in the postgres database; it covers every database of the server.
    psql -q -X "$url" -c 'CREATE EXTENSION pg_stat_statements' >/dev/null
fi
echo "compare-queue-cost: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on port $port," \
    "$(nproc) cores; $("$venv/bin/python" -c 'import pgqueuer; print("pgqueuer", pgqueuer.__version__)')" >&2

"$venv/bin/python" scripts/compare_queue_cost.py compare --url "$url" --postmaster "$postmaster" \
    --receipt-worker "$binary" "$@"
