"""What one verified receipt costs next to what a general PostgreSQL queue spends moving one empty job.

Run by scripts/compare-queue-cost.sh, with the Python of a throwaway virtual environment holding pgqueuer and
asyncpg, against the temporary PostgreSQL that script started. Each round runs, in turns, `receipt-worker bench`
(Apple answering at once) in a scratch database, and pgqueuer moving as many empty jobs in another one: the jobs
are enqueued first, then one consumer drains them (`QueueManager.run`, batch size 100, drain mode, the rest as
pgqueuer sets it). For each run, from the first dequeue to the last completion written: the worker's or consumer's
own CPU (utime + stime in /proc/self/stat), PostgreSQL's CPU (the postmaster's process tree, exited backends
included through its cutime and cstime), WAL bytes and write transactions. `--statements` also reads
pg_stat_statements around each drain (the server must preload it) and prints what PostgreSQL did per job.

    python compare_queue_cost.py compare --url URL --postmaster PID --receipt-worker PATH [--rounds 3]
    python compare_queue_cost.py consume --url URL --postmaster PID --jobs N   (one drain; a JSON line)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass

import asyncpg

ENTRYPOINT = "noop"
HERTZ = os.sysconf("SC_CLK_TCK")


# --- Measuring -----------------------------------------------------------------------------------------------------


def own_cpu_seconds() -> float:
    """utime + stime of this process, every thread."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HERTZ


def tree_cpu_seconds(root: int) -> float:
    """CPU of `root` and its children: live children with their own time, exited ones through root's cutime/cstime."""
    total = 0.0
    found = False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile: its time is in the parent's cutime once reaped
        pid, parent = int(entry), int(fields[1])
        if pid == root:
            found = True
            total += sum(int(x) for x in fields[11:15])
        elif parent == root:
            total += int(fields[11]) + int(fields[12])
    if not found:
        raise SystemExit(f"no process {root}: pass the postmaster's PID")
    return total / HERTZ


# The WAL insert position as a byte count, and the next transaction id.
MARK_QUERY = """
    SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS wal,
           txid_snapshot_xmax(txid_current_snapshot()) AS next_xid
"""


@dataclass
class Mark:
    """The counters at one moment."""

    at: float
    own_cpu: float
    postgres_cpu: float
    wal: int
    next_xid: int


async def take_mark(admin: asyncpg.Connection, postmaster: int, own_first: bool) -> Mark:
    """Reads every counter. `own_first` reads this process's CPU before the others (at the end of a window), else
    after them (at its start), so the reading itself stays out of the window."""
    own = own_cpu_seconds() if own_first else 0.0
    at = time.monotonic()
    row = await admin.fetchrow(MARK_QUERY)
    postgres = tree_cpu_seconds(postmaster)
    if not own_first:
        own = own_cpu_seconds()
        at = time.monotonic()
    return Mark(at, own, postgres, int(row["wal"]), int(row["next_xid"]))


STATEMENTS_QUERY = """
    SELECT queryid, toplevel, query, calls, total_exec_time, rows, wal_bytes, shared_blks_hit, shared_blks_read,
           shared_blks_dirtied
    FROM pg_stat_statements WHERE dbid = $1
"""


async def database_oid(url: str, database: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return int(await connection.fetchval("SELECT oid FROM pg_database WHERE datname = $1", database))
    finally:
        await connection.close()


async def statements(url: str, dbid: int) -> dict:
    """pg_stat_statements for the database `dbid` (its entries outlive the database), by (queryid, toplevel)."""
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(STATEMENTS_QUERY, dbid)
    finally:
        await connection.close()
    return {(r["queryid"], r["toplevel"]): dict(r) for r in rows}


def statements_since(before: dict, after: dict) -> list[dict]:
    """What ran between two readings, busiest first; our own readings left out."""
    rows = []
    counters = ("calls", "total_exec_time", "rows", "wal_bytes", "shared_blks_hit", "shared_blks_read",
                "shared_blks_dirtied")
    for key, row in after.items():
        old = before.get(key)
        delta = {c: float(row[c]) - (float(old[c]) if old else 0.0) for c in counters}
        if delta["calls"] <= 0 or "pg_stat_statements" in row["query"] or "pg_current_wal_insert_lsn" in row["query"]:
            continue
        rows.append({"query": row["query"], "toplevel": row["toplevel"], **delta})
    return sorted(rows, key=lambda r: -r["total_exec_time"])


# --- pgqueuer ------------------------------------------------------------------------------------------------------


async def consume(url: str, postmaster: int, jobs: int, batch_size: int) -> dict:
    """Drains the queue with one QueueManager; returns the window's figures. Runs in a process of its own."""
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.models import Job
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    admin = await asyncpg.connect(url)
    connection = await asyncpg.connect(url)
    window: dict[str, Mark | None] = {"start": None, "end": None}
    completed = {"successful": 0, "other": 0}

    class MeasuredQueries(Queries):
        """Marks the first dequeue and the completion that brings the successful jobs to `jobs`."""

        async def dequeue(self, *args, **kwargs):  # type: ignore[override]
            if window["start"] is None:
                window["start"] = await take_mark(admin, postmaster, own_first=False)
            return await super().dequeue(*args, **kwargs)

        async def log_jobs(self, job_status):  # type: ignore[override]
            await super().log_jobs(job_status)
            for _, status, _ in job_status:
                completed["successful" if status == "successful" else "other"] += 1
            if completed["successful"] >= jobs and window["end"] is None:
                window["end"] = await take_mark(admin, postmaster, own_first=True)

    manager = QueueManager(MeasuredQueries(AsyncpgDriver(connection)))

    @manager.entrypoint(ENTRYPOINT)
    async def noop(job: Job) -> None:
        pass

    await manager.run(batch_size=batch_size, mode=QueueExecutionMode.drain)
    start, end = window["start"], window["end"]
    if start is None or end is None:
        raise SystemExit(f"the consumer completed {completed} of {jobs} jobs")
    result = {
        "completed": completed,
        "seconds": end.at - start.at,
        "worker_cpu_seconds": end.own_cpu - start.own_cpu,
        "postgres_cpu_seconds": end.postgres_cpu - start.postgres_cpu,
        "wal_bytes": end.wal - start.wal,
        "write_transactions": end.next_xid - start.next_xid,
    }
    await connection.close()
    await admin.close()
    return result


async def pgqueuer_round(args, database: str) -> dict:
    """A scratch database with pgqueuer's schema, `args.jobs` empty jobs enqueued, then drained by `consume`
    in a child process; checks in pgqueuer's own tables that every job was completed once."""
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    server = await asyncpg.connect(args.url)
    await server.execute(f'CREATE DATABASE "{database}"')
    url = with_database(args.url, database)
    try:
        connection = await asyncpg.connect(url)
        queries = Queries(AsyncpgDriver(connection))
        await queries.install()
        started = time.monotonic()
        for offset in range(0, args.jobs, args.enqueue_batch):
            count = min(args.enqueue_batch, args.jobs - offset)
            await queries.enqueue([ENTRYPOINT] * count, [None] * count, [0] * count)
        enqueue_seconds = time.monotonic() - started

        dbid = await database_oid(args.url, database) if args.statements else 0
        before = await statements(args.url, dbid) if args.statements else None
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "consume", "--url", url, "--postmaster", str(args.postmaster),
            "--jobs", str(args.jobs), "--batch-size", str(args.batch_size), stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await child.communicate()
        if child.returncode != 0:
            raise SystemExit(f"the pgqueuer consumer failed (exit {child.returncode})")
        run = json.loads(out.decode().strip().splitlines()[-1])
        profile = statements_since(before, await statements(args.url, dbid)) if args.statements else None

        # pgqueuer's own record: the queue empty, one 'successful' log entry per job (aggregated or not).
        left = await connection.fetchval("SELECT count(*) FROM pgqueuer WHERE entrypoint = $1", ENTRYPOINT)
        # Folding the log into pgqueuer_statistics is work pgqueuer defers (every 30 s while running): measured
        # apart, as a note.
        folding = await take_mark(connection, args.postmaster, own_first=False)
        await queries.log_statistics(limit=None)
        folded = await take_mark(connection, args.postmaster, own_first=True)
        successful = await connection.fetchval(
            "SELECT coalesce(sum(count), 0)::bigint FROM pgqueuer_statistics "
            "WHERE entrypoint = $1 AND status = 'successful'",
            ENTRYPOINT,
        )
        await connection.close()
        if left != 0 or successful != args.jobs or run["completed"]["successful"] != args.jobs:
            raise SystemExit(
                f"pgqueuer did not complete every job once: {left} left in the queue, {successful} successful in "
                f"pgqueuer_statistics, {run['completed']} reported by the consumer, {args.jobs} enqueued"
            )
        return {
            "system": "pgqueuer", "jobs": args.jobs, "seconds": run["seconds"],
            "worker_cpu_seconds": run["worker_cpu_seconds"], "postgres_cpu_seconds": run["postgres_cpu_seconds"],
            "wal_bytes": run["wal_bytes"], "write_transactions": run["write_transactions"],
            "note": f"enqueued at {args.jobs / enqueue_seconds:,.0f}/s; {successful} successful in its statistics; "
                    f"folding its log into them afterwards: PostgreSQL "
                    f"{(folded.postgres_cpu - folding.postgres_cpu) / args.jobs * 1e6:.0f} µs/job, "
                    f"{(folded.wal - folding.wal) / args.jobs:.0f} WAL bytes/job (not counted)",
            "statements": profile,
        }
    finally:
        await server.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await server.close()


# --- receipt-worker ------------------------------------------------------------------------------------------------


async def receipt_worker_round(args, database: str) -> dict:
    """`receipt-worker bench` in a scratch database; its JSON line has the drain's figures (--postgres-pid for
    PostgreSQL's CPU). With --statements, pg_stat_statements is read when bench says it starts the worker (the
    enqueue is over) and after it exits."""
    command = [
        args.receipt_worker, "bench", "--apple-latency-ms", "0", "--receipts", str(args.jobs),
        "--scratch-database", database, "--postgres-pid", str(args.postmaster),
        # The fake App Store in a process of its own, so that the worker's CPU is the worker's; no idle pickup probe.
        "--fake-process", "--pickup-samples", "0", "--json",
    ]
    child = await asyncio.create_subprocess_exec(
        *command, env={**os.environ, "DATABASE_URL": args.url},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    before = None
    dbid = None
    errors = []
    assert child.stderr is not None
    async for raw in child.stderr:
        line = raw.decode(errors="replace").rstrip()
        errors.append(line)
        if args.statements and before is None and "starting the worker" in line:
            dbid = await database_oid(args.url, database)
            before = await statements(args.url, dbid)
    out = (await child.stdout.read()).decode() if child.stdout else ""
    if await child.wait() != 0:
        raise SystemExit("receipt-worker bench failed:\n" + "\n".join(errors[-20:]))
    report = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    profile = statements_since(before, await statements(args.url, dbid)) if before is not None else None
    if report["verified"] != args.jobs or report["ledger_rows"] != args.jobs:
        raise SystemExit(f"bench verified {report['verified']} and credited {report['ledger_rows']} of {args.jobs}")
    work = report["database_work"]
    return {
        "system": "receipt-worker", "jobs": report["receipts"], "seconds": report["drain_seconds"],
        "worker_cpu_seconds": report["process_cpu_seconds"], "postgres_cpu_seconds": report["postgres_cpu_seconds"],
        "wal_bytes": work["wal_bytes"], "write_transactions": work["write_transactions"],
        "note": f"verified {report['verified']}, ledger rows {report['ledger_rows']}; the fake App Store's own "
                f"process {report['fake_app_store_process_cpu_seconds'] / report['receipts'] * 1e6:.0f} µs/job "
                f"(not counted)",
        "statements": profile,
    }


# --- Report --------------------------------------------------------------------------------------------------------


def per_job(run: dict) -> dict:
    jobs = run["jobs"]
    worker = run["worker_cpu_seconds"] / jobs * 1e6
    postgres = run["postgres_cpu_seconds"] / jobs * 1e6
    return {
        "jobs/s": jobs / run["seconds"], "worker µs/job": worker, "PostgreSQL µs/job": postgres,
        "total µs/job": worker + postgres, "WAL bytes/job": run["wal_bytes"] / jobs,
        "write xacts/job": run["write_transactions"] / jobs,
    }


COLUMNS = ["jobs/s", "worker µs/job", "PostgreSQL µs/job", "total µs/job", "WAL bytes/job", "write xacts/job"]


def table(runs: list[dict]) -> str:
    rows = []
    for system in ("receipt-worker", "pgqueuer"):
        mine = [r for r in runs if r["system"] == system]
        figures = [per_job(r) for r in mine]
        for r, f in zip(mine, figures):
            rows.append([system, f"round {r['round']}"] + [fmt(c, f[c]) for c in COLUMNS])
        if figures:
            rows.append([system, "median"] + [fmt(c, statistics.median(f[c] for f in figures)) for c in COLUMNS])
    header = ["system", "run"] + COLUMNS
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    lines = ["  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def fmt(column: str, value: float) -> str:
    return f"{value:.3f}" if column == "write xacts/job" else f"{value:,.0f}"


def statements_table(run: dict, limit: int) -> str:
    jobs = run["jobs"]
    lines = [f"{run['system']}, round {run['round']}: pg_stat_statements per job during the drain "
             f"(toplevel * marks statements the client sent; the others ran inside functions and triggers, and "
             f"their time is also in their caller's)",
             f"{'':2}{'calls':>7} {'exec µs':>8} {'rows':>7} {'WAL B':>7} {'blks hit':>8} {'dirtied':>7}  statement"]
    for s in run["statements"][:limit]:
        text = " ".join(re.sub(r"--[^\n]*", "", s["query"]).split())[:110]
        lines.append(
            f"{'*' if s['toplevel'] else ' ':2}{s['calls'] / jobs:7.3f} {s['total_exec_time'] * 1e3 / jobs:8.2f} "
            f"{s['rows'] / jobs:7.2f} {s['wal_bytes'] / jobs:7.0f} {s['shared_blks_hit'] / jobs:8.1f} "
            f"{s['shared_blks_dirtied'] / jobs:7.2f}  {text}"
        )
    top = [s for s in run["statements"] if s["toplevel"]]
    lines.append(
        f"  client statements per job {sum(s['calls'] for s in top) / jobs:.3f}, their execution "
        f"{sum(s['total_exec_time'] for s in top) * 1e3 / jobs:.1f} µs per job, WAL "
        f"{sum(s['wal_bytes'] for s in top) / jobs:.0f} bytes per job"
    )
    return "\n".join(lines)


def with_database(url: str, database: str) -> str:
    base, _, query = url.partition("?")
    scheme, _, rest = base.partition("://")
    host = rest.split("/", 1)[0]
    return f"{scheme}://{host}/{database}" + (f"?{query}" if query else "")


async def compare(args) -> None:
    runs = []
    for n in range(1, args.rounds + 1):
        # Alternate which system goes first, so a drift of the machine's speed does not favour one.
        order = [receipt_worker_round, pgqueuer_round] if n % 2 else [pgqueuer_round, receipt_worker_round]
        for runner in order:
            name = "rw" if runner is receipt_worker_round else "pgq"
            run = await runner(args, f"compare_{name}_{os.getpid()}_{n}")
            run["round"] = n
            runs.append(run)
            f = per_job(run)
            print(f"round {n} {run['system']}: {f['jobs/s']:,.0f} jobs/s, worker {f['worker µs/job']:.0f} + "
                  f"PostgreSQL {f['PostgreSQL µs/job']:.0f} µs/job; {run['note']}", file=sys.stderr, flush=True)
    print(table(runs))
    if args.statements:
        for run in runs:
            if run["round"] == args.rounds:
                print()
                print(statements_table(run, args.statements_limit))
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "statements" or args.statements} for r in runs]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    both = argparse.ArgumentParser(add_help=False)
    both.add_argument("--url", required=True, help="the server, as postgresql://user@host:port/db")
    both.add_argument("--postmaster", type=int, required=True, help="the server's postmaster PID")
    both.add_argument("--jobs", type=int, default=20_000)
    both.add_argument("--batch-size", type=int, default=100, help="pgqueuer's dequeue batch size")
    run = sub.add_parser("compare", parents=[both])
    run.add_argument("--receipt-worker", required=True, help="the release binary")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--enqueue-batch", type=int, default=1_000)
    run.add_argument("--statements", action="store_true", help="read pg_stat_statements around each drain")
    run.add_argument("--statements-limit", type=int, default=25)
    run.add_argument("--json", action="store_true", help="every run's figures as one JSON line at the end")
    sub.add_parser("consume", parents=[both])
    args = parser.parse_args()
    if args.command == "consume":
        import uvloop  # what pgqueuer's own `pgq run` uses when it is installed

        print(json.dumps(uvloop.run(consume(args.url, args.postmaster, args.jobs, args.batch_size))))
    else:
        asyncio.run(compare(args))


if __name__ == "__main__":
    main()
