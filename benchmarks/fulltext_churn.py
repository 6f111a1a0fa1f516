"""How InnoDB's bookkeeping of deleted and edited memories slows every search, and what `memorybank compact` gives
back (docs/benchmarks.md, ADR 0047).

    python -m benchmarks.fulltext_churn [--rows 10000] [--steps 0 1000 5000 20000] [--calls 300]

InnoDB keeps a deleted row's full-text entries, and its document id in a list of deleted documents, until the table
is rebuilt; an edit of a memory's words, a re-index and a purge add to it too. Every full-text query reads that
list. On the benchmark server, into a fresh database: the corpus `request_cost` searches (`rows` memories, 100 a
user). Then, step by step, another user's memories are imported and deleted through the store (as `DELETE
/v1/memory/{id}` deletes them) until the table has seen each step's number of deletes; after each step the measured
user searches a rare and a common word and saves a memory (with its `similar` look-up, as REST and MCP answer a save)
through the bank `serve` builds, `calls` times each (p50, ms); the row's saves are then deleted (and counted), so the
measured user's bank is the same in every row. Last, `memorybank compact` (`SqlStorage.compact_search_index`, timed)
and the same calls again.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from tqdm import tqdm

from adapters_mysql.schema import memory
from benchmarks.common import Principal, database_url, drop_database, open_bank, run_header, table
from benchmarks.corpus import COMMON, RARE, CorpusSpec, CorpusWriter
from memorybank.bootstrap import Runtime
from memorybank.portability import import_lines
from memorybank_core import ids
from memorybank_core.bodies import JsonValue

NAME = "fulltext_churn"
#: Calls before the timed ones: the pool's connections, the statements, the server's pages.
WARM_CALLS = 20
#: The user whose memories come and go: not the measured one, whose bank stays as it is.
CHURN = Principal(user_id=ids.new_id(ids.USER_PREFIX), organization_id=ids.new_id(ids.ORGANIZATION_PREFIX))


Row = tuple[str, list[float]]
"""A table row: its label and its p50s in ms (rare search, common search, save)."""


def _cells(row: Row, first: Row) -> list[object]:
    """The row's p50s, each beside its ratio to the first row's, measured in the same run (a rebuilt table)."""
    label, figures = row
    return [label, *(f"{ms:.2f} ({ms / base:.2f} x)" for ms, base in zip(figures, first[1], strict=True))]


def _p50_ms(call: Callable[[], object], calls: int) -> float:
    for _ in range(WARM_CALLS):
        call()
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def _churn(runtime: Runtime, count: int) -> None:
    """Import `count` memories of the churn user, then delete each through the store."""
    lines = (
        f'{{"user_id": "{CHURN.user_id}", "org_id": "{CHURN.organization_id}", "content": "passing note {n}"}}'
        for n in range(count)
    )
    import_lines(lines, runtime.storage.store, batch_size=1000)
    with runtime.storage.engine.connect() as connection:
        gone = connection.execute(sa.select(memory.c.id).where(memory.c.user_id == CHURN.user_id)).scalars().all()
    for memory_id in tqdm(gone, unit="delete", mininterval=5, file=sys.stderr, leave=False):
        runtime.storage.store.delete(user_id=CHURN.user_id, memory_id=memory_id)


def _row(label: str, runtime: Runtime, measured: Principal, probes: list[str], calls: int) -> tuple[Row, int]:
    """The row's p50s, and how many memories it deleted: its saves, so the measured user's bank stays as it was."""
    bank = runtime.services.bank
    rare = _p50_ms(lambda: bank.search(measured, query=RARE, limit=20), calls)
    common = _p50_ms(lambda: bank.search(measured, query=COMMON, limit=20), calls)
    saved = []

    def save() -> object:
        # As the REST and MCP saves answer: the memory, then the memories like it.
        memory = bank.save(measured, JsonValue({"content": probes.pop()}))
        saved.append(memory.id)
        return bank.similar(measured, memory)

    save_ms = _p50_ms(save, calls)
    for memory_id in saved:
        bank.delete(measured, memory_id=memory_id)
    return (label, [rare, common, save_ms]), len(saved)


def main(argv: Sequence[str] | None = None) -> None:
    """Load the corpus, churn step by step, compact; print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fulltext_churn", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000, help="memories of the corpus (default: 10000)")
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 1000, 5000, 20000], help="deletes seen, ascending")
    parser.add_argument("--calls", type=int, default=300, help="calls of each kind per step (default: 300)")
    args = parser.parse_args(argv)
    writer = CorpusWriter(CorpusSpec(users=max(1, args.rows // 100), memories_per_user=100, seed=24))
    measured = Principal(user_id=writer.measured_user, organization_id=writer.org_ids[0])
    saves = (args.calls + WARM_CALLS) * (len(args.steps) + 1)
    probes = CorpusWriter(CorpusSpec(users=1, seed=25)).probe_sentences(saves)
    drop_database(NAME)
    try:
        with open_bank(database_url(NAME), migrate=True) as runtime:
            import_lines(writer.lines(), runtime.storage.store, batch_size=1000)
            with runtime.storage.engine.connect() as connection:
                org = connection.execute(
                    sa.select(memory.c.org_id).where(memory.c.user_id == measured.user_id).limit(1)
                ).scalar_one()
            measured = Principal(user_id=measured.user_id, organization_id=org)
            runtime.storage.compact_search_index()  # the corpus all in the index tables, as after a rebuild
            rows: list[Row] = []
            seen = 0
            for step in args.steps:
                _churn(runtime, max(0, step - seen))
                seen = max(seen, step)
                row, deleted = _row(f"{seen:,} deleted since the last rebuild", runtime, measured, probes, args.calls)
                rows.append(row)
                seen += deleted
            started = time.perf_counter()
            runtime.storage.compact_search_index()
            compact_seconds = time.perf_counter() - started
            rows.append(_row("after `memorybank compact`", runtime, measured, probes, args.calls)[0])
    finally:
        drop_database(NAME)
    print(run_header(f"full-text churn, MariaDB, {args.rows:,} memories, {args.calls} calls of each kind per row"))
    print(f"command: python -m benchmarks.fulltext_churn --rows {args.rows} --steps {' '.join(map(str, args.steps))}")
    print()
    headers = ["the memory table", f"search, rare word ({RARE}), p50 ms", f"search, common word ({COMMON}), p50 ms"]
    headers.append("save (its `similar` look-up included), p50 ms")
    print("Each p50 beside its ratio to the first row's (a rebuilt table), in this run.")
    print()
    print(table(headers, [_cells(row, rows[0]) for row in rows]))
    print()
    print(f"`memorybank compact` (OPTIMIZE TABLE memory over {args.rows:,} memories): {compact_seconds:.2f} s")


if __name__ == "__main__":
    main()
