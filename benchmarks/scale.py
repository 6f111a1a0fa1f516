"""Scale: one user's search latency as other users' data grows (10k, 100k, 1M memories).

    python -m benchmarks.scale load --rows 10000          # create and fill memorybank_bench_10000
    python -m benchmarks.scale query --rows 10000 100000 1000000

`load` generates the corpus (benchmarks.corpus) and writes it through the library's own
import (`memorybank.portability.import_lines`), so the rows are exactly what the library writes;
a database already holding the corpus is kept (pass `--reload` to rebuild it). `query` times
`MemoryBank.search` for the measured user with the seed-literal engine (`fulltext`, which lives
on only here: `benchmarks.seed_search`) and the owner-scoped engine (`owner`) side by side, and
prints p50/p95 and the 1M/10k ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from functools import partial

import sqlalchemy as sa
from tqdm import tqdm

from adapters_mysql.schema import memory
from benchmarks.common import (
    Principal,
    Timing,
    bank_with,
    database_url,
    drop_database,
    machine,
    open_bank,
    table,
    time_calls,
)
from benchmarks.corpus import MEMORIES_PER_USER, QUERIES, CorpusSpec, CorpusWriter
from benchmarks.seed_search import SeedFulltextSearch, add_seed_index
from memorybank.portability import import_lines
from memorybank_core import RecordingEventSink

ENGINES = ("fulltext", "owner")


def spec_for(rows: int) -> CorpusSpec:
    """The corpus of `rows` memories: 100 memories per user."""
    return CorpusSpec(users=max(1, rows // MEMORIES_PER_USER))


def load(rows: int, *, reload: bool = False, batch_size: int = 1000) -> None:
    """Fill the benchmark database of `rows` memories, unless it already holds them."""
    name = str(rows)
    if reload:
        drop_database(name)
    with open_bank(database_url(name), migrate=True) as runtime:
        storage = runtime.storage
        add_seed_index(storage.engine)
        with storage.engine.connect() as connection:
            present = connection.execute(sa.select(sa.func.count()).select_from(memory)).scalar_one()
        if present == rows:
            print(f"{name}: {present} memories already loaded; kept (pass --reload to rebuild)")
            return
        if present:
            raise SystemExit(f"{name}: holds {present} memories, not {rows}: pass --reload")
        writer = CorpusWriter(spec_for(rows))
        started = time.perf_counter()
        with tqdm(total=rows, unit="memory", mininterval=5, file=sys.stderr) as bar:
            report = import_lines(writer.lines(), storage.store, batch_size=batch_size, progress=bar.update)
        elapsed = time.perf_counter() - started
        print(
            f"{name}: imported {report.imported} memories ({len(report.skipped)} skipped) in {elapsed:.1f} s, "
            f"{report.imported / elapsed:,.0f} memories/s"
        )


def measure(rows: int, engine: str, *, repeats: int, budget: float) -> dict[str, Timing]:
    """Time each query for the measured user of the `rows` database with `engine`."""
    with open_bank(database_url(str(rows)), events=RecordingEventSink()) as runtime:
        storage = runtime.storage
        user = CorpusWriter(CorpusSpec(users=1)).measured_user
        with storage.engine.connect() as connection:
            org = connection.execute(sa.select(memory.c.org_id).where(memory.c.user_id == user).limit(1)).scalar_one()
        bank = runtime.services.bank
        if engine == "fulltext":  # the seed-literal engine is a stand-in no deployment serves: assembled here
            seed = SeedFulltextSearch(storage.engine)
            bank = bank_with(runtime, search_engine=seed, events=RecordingEventSink())
        principal = Principal(user_id=user, organization_id=org)
        timings = {}
        for label, query in QUERIES.items():
            found = len(bank.search(principal, query=query))
            timings[label] = time_calls(
                partial(bank.search, principal, query=query), repeats=repeats, budget_seconds=budget
            )
            print(
                f"  {rows:>9,} rows {engine:8} {label:10} p50 {timings[label].p50:9.2f} ms  "
                f"p95 {timings[label].p95:9.2f} ms  ({len(timings[label].samples)} runs, {found} results)",
                file=sys.stderr,
            )
        return timings


def report(
    sizes: Sequence[int], results: dict[tuple[int, str], dict[str, Timing]], engines: Sequence[str] = ENGINES
) -> str:
    """The Markdown tables: p50/p95 per size and engine, and the ratio of the largest to the smallest size."""
    headers = ["query"]
    for size in sizes:
        headers += [f"{engine} {size:,}" for engine in engines]
    rows = []
    for label in QUERIES:
        row: list[object] = [label]
        for size in sizes:
            for engine in engines:
                timing = results[(size, engine)][label]
                row.append(f"{timing.p50:.2f} / {timing.p95:.2f}")
        rows.append(row)
    text = "p50 / p95 of MemoryBank.search, milliseconds\n\n" + table(headers, rows)
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        ratio_rows = [
            [label, *(f"{results[(large, e)][label].p50 / results[(small, e)][label].p50:.2f}" for e in engines)]
            for label in QUERIES
        ]
        text += f"\n\np50 ratio {large:,} / {small:,} rows\n\n" + table(["query", *engines], ratio_rows)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: `load` or `query`."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    loading = commands.add_parser("load", help="create and fill the benchmark databases")
    loading.add_argument("--rows", type=int, nargs="+", required=True)
    loading.add_argument("--reload", action="store_true", help="drop and rebuild a database that exists")
    querying = commands.add_parser("query", help="time the searches")
    querying.add_argument("--rows", type=int, nargs="+", required=True)
    querying.add_argument("--repeats", type=int, default=200, help="timed runs per query at most (default 200)")
    querying.add_argument("--budget", type=float, default=20.0, help="seconds per query at most (default 20)")
    querying.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    arguments = parser.parse_args(argv)
    if arguments.command == "load":
        for rows in arguments.rows:
            load(rows, reload=arguments.reload)
        return
    print(f"machine: {machine()}", file=sys.stderr)
    results = {
        (rows, engine): measure(rows, engine, repeats=arguments.repeats, budget=arguments.budget)
        for rows in arguments.rows
        for engine in arguments.engines
    }
    print(report(arguments.rows, results, arguments.engines))


if __name__ == "__main__":
    main()
