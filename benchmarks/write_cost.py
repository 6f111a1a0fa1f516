"""Write cost: saves per second for each engine, and the size of each index at scale.

    python -m benchmarks.write_cost [--saves 2000] [--sizes-of 1000000]

Each save is `MemoryBank.save` of one memory with two context snippets, one after another on
one thread, into an empty database. The store always writes the owner-scoped search document,
so the MySQL variants differ by the FULLTEXT index present: the owner-scoped one (production),
or the seed's `content` index alone (`benchmarks.seed_search`; the owner index dropped), which
prices the owner-scoped index against the seed's. `--sizes-of N` prints the table, secondary-index and per-FULLTEXT
index sizes of the scale benchmark's database of N rows (`python -m benchmarks.scale load`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import sqlalchemy as sa

from benchmarks.common import NO_SCREEN, Principal, bank_with, database_url, drop_database, machine, open_bank, table
from benchmarks.corpus import CorpusSpec, CorpusWriter
from benchmarks.seed_search import add_seed_index
from memorybank_core import MemoryBank, RecordingEventSink, SaveRequest, ids
from memorybank_search import TextAnalyzer

_MIB = 1024 * 1024


def requests(count: int) -> list[SaveRequest]:
    """`count` realistic save requests: corpus content plus two snippets each."""
    writer = CorpusWriter(CorpusSpec(users=max(1, count // 100 + 1), seed=11))
    lines = writer.lines()
    made = []
    for _ in range(count):
        data = json.loads(next(lines))
        snippet = data["content"][:120]
        body = {"content": data["content"], "tags": data["tags"], "contexts": [{"snippet": snippet}] * 2}
        made.append(SaveRequest.parse(body))
    return made


def saves_per_second(bank: MemoryBank, batch: Sequence[SaveRequest]) -> float:
    """Save every request in turn as one user; saves per second."""
    user = Principal(user_id=ids.new_id(ids.USER_PREFIX), organization_id=ids.new_id(ids.ORGANIZATION_PREFIX))
    started = time.perf_counter()
    for request in batch:
        bank.save(user, request)
    return len(batch) / (time.perf_counter() - started)


def variants(workdir: Path, *, mysql: bool) -> list[tuple[str, Callable[[], MemoryBank]]]:
    """(name, make a bank over an empty store) for each engine measured."""
    made: list[tuple[str, Callable[[], MemoryBank]]] = []

    def in_memory() -> MemoryBank:
        return bank_with(events=RecordingEventSink())

    made.append(("in-memory", in_memory))

    def sqlite() -> MemoryBank:
        workdir.mkdir(parents=True, exist_ok=True)
        runtime = open_bank(
            f"sqlite:///{workdir / 'writes.sqlite3'}", events=RecordingEventSink(), secret_screen=NO_SCREEN
        )
        return runtime.services.bank

    made.append(("SQLite (owner-scoped FTS5 table)", sqlite))
    if mysql:

        def mysql_bank(*, owner_index: bool) -> MemoryBank:
            name = "writes_owner" if owner_index else "writes_seed"
            drop_database(name)
            runtime = open_bank(database_url(name), migrate=True, events=RecordingEventSink(), secret_screen=NO_SCREEN)
            storage = runtime.storage
            if not owner_index:
                with storage.engine.begin() as connection:
                    connection.exec_driver_sql("DROP INDEX memory_search_terms_fulltext ON memory")
                add_seed_index(storage.engine)
            return runtime.services.bank

        made.append(("MySQL, owner-scoped FULLTEXT index", lambda: mysql_bank(owner_index=True)))
        made.append(("MySQL, seed's FULLTEXT index only", lambda: mysql_bank(owner_index=False)))
    return made


def analysis_microseconds(batch: Sequence[SaveRequest]) -> float:
    """The analyzer's share of a save: microseconds to analyze one request's fields."""
    analyzer = TextAnalyzer()
    started = time.perf_counter()
    for request in batch:
        for text in (request.content, *request.tags, *(c.snippet for c in request.contexts)):
            analyzer.document_terms(text)
    return (time.perf_counter() - started) / len(batch) * 1e6


def index_sizes(rows: int) -> str:
    """Sizes of the `rows` scale database's table, secondary indexes and each FULLTEXT index."""
    url = database_url(str(rows))
    runtime = open_bank(url)
    storage = runtime.storage
    schema = sa.make_url(url).database
    try:
        with storage.engine.connect() as connection:
            data, index = connection.execute(
                sa.text(
                    "SELECT data_length, index_length FROM information_schema.TABLES "
                    "WHERE table_schema = :schema AND table_name = 'memory'"
                ),
                {"schema": schema},
            ).one()
            # FULLTEXT indexes live in their own tablespaces, FTS_<table id>_<index id>_INDEX_<n>.
            fulltext = connection.execute(
                sa.text(
                    "SELECT i.NAME AS name, SUM(s.ALLOCATED_SIZE) AS bytes "
                    "FROM information_schema.INNODB_SYS_INDEXES i "
                    "JOIN information_schema.INNODB_SYS_TABLES t ON t.TABLE_ID = i.TABLE_ID "
                    "JOIN information_schema.INNODB_SYS_TABLESPACES s ON s.NAME LIKE CONCAT(:schema, '/FTS_', "
                    "LPAD(LOWER(HEX(i.TABLE_ID)), 16, '0'), '_', LPAD(LOWER(HEX(i.INDEX_ID)), 16, '0'), '_INDEX_%') "
                    "WHERE t.NAME = CONCAT(:schema, '/memory') AND i.TYPE & 32 GROUP BY i.NAME"
                ),
                {"schema": schema},
            ).all()
    finally:
        storage.close()
    rows_out: list[list[object]] = [
        ["memory table (clustered: rows)", f"{data / _MIB:,.0f}"],
        ["secondary B-tree indexes", f"{index / _MIB:,.0f}"],
    ]
    rows_out += [[f"FULLTEXT {row.name}", f"{int(row.bytes) / _MIB:,.0f}"] for row in fulltext]
    return f"Sizes at {rows:,} memories (MiB)\n\n" + table(["structure", "MiB"], rows_out)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.write_cost", description=__doc__)
    parser.add_argument("--saves", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument("--no-mysql", action="store_true")
    parser.add_argument("--sizes-of", type=int, default=None, metavar="ROWS")
    arguments = parser.parse_args(argv)
    print(f"machine: {machine()}", file=sys.stderr)
    batch = requests(arguments.saves)
    rates: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="memorybank-writes-") as workdir:
        # Rounds interleave the variants, so a slow spell of the disk (every save is a commit)
        # does not land on one variant only; the median round is reported.
        for round_number in range(arguments.rounds):
            for name, make in variants(Path(workdir) / str(round_number), mysql=not arguments.no_mysql):
                rate = saves_per_second(make(), batch)
                print(f"  round {round_number + 1}: {name}: {rate:,.0f} saves/s", file=sys.stderr)
                rates.setdefault(name, []).append(rate)
    results = [
        [name, f"{statistics.median(found):,.0f}", f"{1000 / statistics.median(found):.2f}"]
        for name, found in rates.items()
    ]
    print(
        f"{arguments.saves} saves of one memory with two snippets, median of {arguments.rounds} rounds\n\n"
        + table(["engine", "saves/s", "ms per save"], results)
        + f"\n\nanalysis share: {analysis_microseconds(batch):.0f} µs per save (analyzer alone)"
    )
    if arguments.sizes_of:
        print("\n" + index_sizes(arguments.sizes_of))


if __name__ == "__main__":
    main()
