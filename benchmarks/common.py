"""What the benchmarks share: a server URL, databases they keep, timing and tables."""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs
import sqlalchemy as sa

from adapters_mysql.schema import memory
from memorybank.settings import OFF, REFUSE
from memorybank_core import READ_SCOPE, WRITE_SCOPE, EventSink, MemoryBank

if TYPE_CHECKING:
    from memorybank.bootstrap import Runtime

# `serve` searches hybrid by default (ADR 0036). The servers these benchmarks start measure lexical search
# unless they say `--search hybrid` (benchmarks.hybrid, benchmarks.precision): their recorded figures are
# lexical deployments', and a model per process would change what they measure.
os.environ.setdefault("MEMORYBANK_SEARCH", "lexical")

#: The MySQL/MariaDB server the benchmarks use (no database in it); tests use the same variable.
SERVER_ENV = "MEMORYBANK_BENCH_MYSQL_URL"
DEFAULT_SERVER = "mysql://root@127.0.0.1:3306"
DATABASE_PREFIX = "memorybank_bench_"
#: A prefix of its own for one run's databases (the smoke tests give each test one), so two runs on one server
#: never create, fill or drop each other's database under the same name.
DATABASE_PREFIX_ENV = "MEMORYBANK_BENCH_DB_PREFIX"


def database_name(name: str) -> str:
    """The MariaDB database that holds the benchmark database `name` on this run."""
    return os.environ.get(DATABASE_PREFIX_ENV, DATABASE_PREFIX) + name


def server_url() -> str:
    """The server URL from $MEMORYBANK_BENCH_MYSQL_URL, else the local default."""
    return os.environ.get(SERVER_ENV, DEFAULT_SERVER).rstrip("/")


def database_url(name: str) -> str:
    """The URL of the benchmark database `name`, creating the (empty) database if it is missing."""
    server = sa.make_url(server_url())
    engine = sa.create_engine(server, poolclass=sa.pool.NullPool)
    database = database_name(name)
    with engine.begin() as connection:
        # An identifier cannot be bound; the name is ours (a fixed prefix and a size label).
        connection.exec_driver_sql(
            f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        )
    engine.dispose()
    return f"{server_url()}/{database}"


def drop_database(name: str) -> None:
    """Drop the benchmark database `name` if it exists."""
    server = sa.make_url(server_url())
    engine = sa.create_engine(server, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"DROP DATABASE IF EXISTS `{database_name(name)}`")
    engine.dispose()


def open_bank(
    url: str, *, migrate: bool = False, events: EventSink | None = None, secret_screen: str = REFUSE, **settings: Any
) -> Runtime:
    """The runtime over the database at `url`, built as `memorybank serve` builds it (`bootstrap.build`): the
    bank with its controls and secret screen. `migrate` brings a fresh MySQL database's schema up first (an
    SQLite file is created ready); `settings` are `Settings` fields to change, e.g. `secret_screen="off"`.
    Close it (or use `with`) when done.
    """
    from memorybank import bootstrap
    from memorybank.settings import Settings

    chosen = Settings.for_database(url, secret_screen=secret_screen, **settings)
    runtime = bootstrap.build(chosen, events=events, migrating=migrate)
    if migrate:
        runtime.storage.migrate()
    return runtime


def delete_saved_since(url: str, started_at: datetime) -> None:
    """Delete what a run saved, through the store (usage ledger included): the next run sees the same corpus. The
    deletes stay in InnoDB's full-text bookkeeping until the next run's `prepare` compacts (ADR 0047)."""
    with open_bank(url) as runtime:
        with runtime.storage.engine.connect() as connection:
            saved = connection.execute(
                sa.select(memory.c.user_id, memory.c.id).where(memory.c.created_at >= started_at)
            ).all()
        for user_id, memory_id in saved:
            runtime.storage.store.delete(user_id=user_id, memory_id=memory_id)


#: A benchmark that prices something else than the secret screen leaves it off (benchmarks.secret_screen
#: prices it: 0.06-0.09 ms a save).
NO_SCREEN = OFF


def bank_with(runtime: Runtime | None = None, *, screen_setting: str = NO_SCREEN, **overrides: Any) -> MemoryBank:
    """A variant bank, wired by the composition root over `runtime`'s ports (default: the core's in-memory ones)
    with `overrides` (`bootstrap.build`'s: a stand-in `search_engine=`, `events=`, `secret_screen=`...), the
    screen set by `screen_setting` unless one is given. It opens nothing: `runtime` stays the caller's to close."""
    from memorybank import bootstrap
    from memorybank.settings import Settings

    settings = Settings.for_database("sqlite://", secret_screen=screen_setting)
    ports = runtime.ports if runtime is not None else bootstrap.Ports.in_memory()
    return bootstrap.build(settings, ports=ports, **overrides).services.bank


@attrs.frozen
class Principal:
    """A caller with read and write scopes."""

    user_id: str
    organization_id: str
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})


@attrs.frozen
class Timing:
    """Latencies of repeated calls, in milliseconds."""

    samples: tuple[float, ...]

    @property
    def p50(self) -> float:
        """The median."""
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        """The 95th percentile (nearest rank)."""
        ordered = sorted(self.samples)
        return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def time_calls(call: Callable[[], object], *, repeats: int, budget_seconds: float, warmup: int = 3) -> Timing:
    """Time `call` up to `repeats` times, stopping early once `budget_seconds` are spent (at least 3 runs)."""
    for _ in range(warmup):
        call()
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < repeats and (len(samples) < 3 or time.perf_counter() - started < budget_seconds):
        before = time.perf_counter()
        call()
        samples.append((time.perf_counter() - before) * 1000)
    return Timing(tuple(samples))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """One line describing where the figures were taken."""
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, {platform.system()}"
    )


def run_header(what: str) -> str:
    """A benchmark's first lines: when, on what machine and under what load it ran, then `what`."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"{when}; Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}; "
        f"load average {load} at the start\n{what}"
    )
