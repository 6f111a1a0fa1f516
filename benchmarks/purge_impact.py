"""Purge impact: another user's search latency while a purge of a large user runs, against idle.

    nice -n 10 python -m benchmarks.purge_impact [--memories 100000] [--batch-size 500] [--pause-ms 0] [--seconds 10]

On MariaDB ($MEMORYBANK_BENCH_MYSQL_URL, default mysql://root@127.0.0.1:3306), in a database of
its own (named after the process) that it drops at the end: one user with `--memories` memories
(one context each), the measured user with 1,000, and 20 bystanders with 200 each, loaded through
the bulk import path. The measured user's search is timed for `--seconds` while nothing else runs
(idle), then while a real `memorybank purge --user` process deletes the large user (from its first
write to its exit; the purge's time includes the command's start-up), then idle again, then idle
after `OPTIMIZE TABLE memory` (which drops the deleted rows' FULLTEXT entries). Both phases run in this one
process, one after the other, so their ratio is the figure to read on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

import sqlalchemy as sa

from adapters_mysql.schema import purge_run
from benchmarks.common import Principal, Timing, database_url, drop_database, machine, open_bank, table
from memorybank import portability
from memorybank_core import MemoryBank, ids

_QUERY = "lighthouse keeper"
_MEASURED_MEMORIES = 1_000
_BYSTANDERS = 20
_BYSTANDER_MEMORIES = 200


def _lines(user_id: str, org_id: str, count: int) -> Iterator[str]:
    words = ("harbor", "lighthouse", "keeper", "staging", "deploy", "invoice", "garden", "ramen")
    for n in range(count):
        content = f"note {n}: the {words[n % 8]} and the {words[(n * 3 + 1) % 8]} of week {n % 52}"
        yield json.dumps({"user_id": user_id, "org_id": org_id, "content": content, "contexts": [{"snippet": "s"}]})


def _history_length(storage_engine: sa.Engine) -> int:
    """InnoDB's history list: undo records its background purge has still to clean up after deletes."""
    with storage_engine.connect() as connection:
        status = str(connection.exec_driver_sql("SHOW ENGINE INNODB STATUS").first()[2])  # type: ignore[index]
    found = re.search(r"History list length (\d+)", status)
    return int(found.group(1)) if found else -1


def _search_timing(bank: MemoryBank, user: Principal, *, until: float, done: subprocess.Popen[bytes] | None) -> Timing:
    """Time the user's search back to back until `until` (or until `done` exits)."""
    samples: list[float] = []
    while time.perf_counter() < until and (done is None or done.poll() is None):
        before = time.perf_counter()
        bank.search(user, query=_QUERY, limit=20)
        samples.append((time.perf_counter() - before) * 1000)
    return Timing(tuple(samples))


def main(argv: Sequence[str] | None = None) -> None:
    """Load, measure idle, measure during a purge, print the table and the ratios."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.purge_impact", description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000, help="memories of the purged user")
    parser.add_argument("--batch-size", type=int, default=500, help="the purge's --batch-size")
    parser.add_argument("--pause-ms", type=int, default=0, help="the purge's --pause-ms")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the idle phase is timed")
    args = parser.parse_args(argv)

    name = f"purge_impact_{os.getpid()}"  # its own, so two runs (or a run and the tests) never meet
    url = database_url(name)
    runtime = open_bank(url, migrate=True)
    storage = runtime.storage
    try:
        org = ids.new_id(ids.ORGANIZATION_PREFIX)
        leaving = ids.new_id(ids.USER_PREFIX)
        measured = Principal(user_id=ids.new_id(ids.USER_PREFIX), organization_id=org)
        started = time.perf_counter()
        loaded = portability.import_lines(_lines(leaving, org, args.memories), storage.store, batch_size=2_000)
        loaded_others = portability.import_lines(
            _lines(measured.user_id, org, _MEASURED_MEMORIES), storage.store, batch_size=2_000
        ).imported
        for _ in range(_BYSTANDERS):
            bystander = ids.new_id(ids.USER_PREFIX)
            loaded_others += portability.import_lines(
                _lines(bystander, org, _BYSTANDER_MEMORIES), storage.store
            ).imported
        print(
            f"loaded {loaded.imported} memories of the purged user and {loaded_others} of others "
            f"in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        bank = runtime.services.bank
        idle = _search_timing(bank, measured, until=time.perf_counter() + args.seconds, done=None)

        command = [sys.executable, "-m", "memorybank", "purge", "--db", url, "--user", leaving]
        purge_started = time.perf_counter()
        with subprocess.Popen(  # noqa: S603 - our own interpreter and command
            [*command, "--batch-size", str(args.batch_size), "--pause-ms", str(args.pause_ms)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as purge:
            # Timed from the purge's first write on, not while the command starts up.
            with storage.engine.connect() as connection:
                while (
                    purge.poll() is None
                    and not connection.execute(sa.select(sa.func.count()).select_from(purge_run)).scalar()
                ):
                    connection.rollback()
                    time.sleep(0.01)
            during = _search_timing(bank, measured, until=float("inf"), done=purge)
            out, err = purge.communicate()
        purge_seconds = time.perf_counter() - purge_started
        if purge.returncode != 0:
            raise SystemExit(f"the purge failed: {err.decode(errors='replace')}")
        receipt = json.loads(out)
        history = [_history_length(storage.engine)]
        after = _search_timing(bank, measured, until=time.perf_counter() + args.seconds, done=None)
        history.append(_history_length(storage.engine))
        # InnoDB keeps a deleted row's FULLTEXT entries (and checks every query against the deleted
        # ids) until the table is rebuilt; this database is the benchmark's own, so rebuild it here.
        with storage.engine.connect() as connection:
            connection.exec_driver_sql("OPTIMIZE TABLE memory").all()
        optimized = _search_timing(bank, measured, until=time.perf_counter() + args.seconds, done=None)
    finally:
        runtime.close()
        drop_database(name)

    removed = receipt["removed"]["memories"]
    print(
        f"purge: {removed} memories, {receipt['removed']['contexts']} contexts in {purge_seconds:.1f} s "
        f"({removed / purge_seconds:,.0f} memories/s, batches of {args.batch_size}, "
        f"{args.pause_ms} ms apart); {machine()}"
    )

    def figures(timing: Timing) -> tuple[str, str]:
        return (f"{timing.p50:.2f}", f"{timing.p95:.2f}") if timing.samples else ("-", "-")

    rows = [
        ("idle, before", len(idle.samples), *figures(idle)),
        ("during the purge", len(during.samples), *figures(during)),
        ("idle, after", len(after.samples), *figures(after)),
        ("idle, after OPTIMIZE TABLE memory", len(optimized.samples), *figures(optimized)),
    ]
    print(table(["another user's search", "searches", "p50 ms", "p95 ms"], rows))
    print(f"InnoDB history list length when the purge ended: {history[0]:,}; {args.seconds:g} s later: {history[1]:,}")
    if during.samples:
        print(f"ratio during/idle: p50 {during.p50 / idle.p50:.2f}x, p95 {during.p95 / idle.p95:.2f}x")
    else:
        print("the purge ended before a search could be timed during it: purge more memories")


if __name__ == "__main__":
    main()
