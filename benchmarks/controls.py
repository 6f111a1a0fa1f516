"""What the gate and the quota cost each request: the same calls with and without the operators' controls.

    python -m benchmarks.controls [--repeats 400] [--budget 10] [--mysql]

Every memory request reads the controls that apply to its caller (`memory_control`: a primary-key
lookup of at most three rows, on the request's connection); every save also charges the usage
ledger (`memory_usage`: one conditional UPDATE, in the save's transaction). This times a list of
20 memories and a save through the use cases, on one connection per call as the server runs them,
once with controls wired and once without, in the same run, and prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from adapters_mysql.schema import memory_usage
from benchmarks.common import (
    NO_SCREEN,
    Principal,
    Timing,
    bank_with,
    database_url,
    drop_database,
    machine,
    open_bank,
    table,
)
from memorybank_core import InMemoryControlStore, MemoryBank
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id

if TYPE_CHECKING:
    from memorybank.bootstrap import Runtime

MEMORIES = 40


def _banks(runtime: Runtime) -> dict[str, MemoryBank]:
    # The deliberate variant: the runtime's bank with its controls read from memory (none set) instead of the
    # database, and nothing else different (the screen is off in both), so the ratio is the controls' reads alone.
    without = bank_with(runtime, controls=InMemoryControlStore())
    return {"with controls": runtime.services.bank, "without": without}


def interleaved(
    call: Callable[[MemoryBank], object], banks: dict[str, MemoryBank], *, repeats: int, budget: float
) -> tuple[Timing, Timing]:
    """Time `call` on both banks turn by turn, so the machine's drift (it is shared) hits both alike."""
    first, second = banks["with controls"], banks["without"]
    for _ in range(3):
        call(first)
        call(second)
    samples: tuple[list[float], list[float]] = ([], [])
    started = time.perf_counter()
    while len(samples[0]) < repeats and time.perf_counter() - started < 2 * budget:
        for bank, kept in ((first, samples[0]), (second, samples[1])):
            before = time.perf_counter()
            call(bank)
            kept.append((time.perf_counter() - before) * 1000)
    return Timing(tuple(samples[0])), Timing(tuple(samples[1]))


def measure(runtime: Runtime, *, repeats: int, budget: float) -> list[list[object]]:
    """Rows of (operation, p50 with, p50 without, ratio) in milliseconds."""
    banks = _banks(runtime)
    who = Principal(user_id=new_id(USER_PREFIX), organization_id=new_id(ORGANIZATION_PREFIX))
    for n in range(MEMORIES):
        banks["without"].save(who, JsonValue({"content": f"benchmark memory {n} about harbours and ferries"}))
    rows: list[list[object]] = []
    for operation, call in (
        ("list 20", lambda bank: bank.list(who, limit=20)),
        ("save", lambda bank: bank.save(who, JsonValue({"content": "one more benchmark memory about ferries"}))),
    ):
        with_p50, without_p50 = (t.p50 for t in interleaved(call, banks, repeats=repeats, budget=budget))
        rows.append([operation, f"{with_p50:.2f}", f"{without_p50:.2f}", f"{with_p50 / without_p50:.2f}"])
    with runtime.storage.engine.begin() as connection:
        connection.execute(memory_usage.delete())
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table for SQLite (a file) and, with --mysql, MariaDB."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.controls", description=__doc__)
    parser.add_argument("--repeats", type=int, default=400)
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per operation and variant at most")
    parser.add_argument("--mysql", action="store_true", help="also on $MEMORYBANK_BENCH_MYSQL_URL")
    args = parser.parse_args(argv)
    rows: list[list[object]] = []
    with (
        tempfile.TemporaryDirectory(prefix="memorybank-bench-") as directory,
        open_bank(f"sqlite:///{Path(directory) / 'bench.sqlite3'}", secret_screen=NO_SCREEN) as runtime,
    ):
        rows += [["SQLite file", *row] for row in measure(runtime, repeats=args.repeats, budget=args.budget)]
    if args.mysql:
        name = f"controls_{uuid.uuid4().hex[:8]}"
        try:
            with open_bank(database_url(name), migrate=True, secret_screen=NO_SCREEN) as runtime:
                rows += [["MariaDB", *row] for row in measure(runtime, repeats=args.repeats, budget=args.budget)]
        finally:
            drop_database(name)
    print(f"per-call median, ms ({machine()})")
    print(table(["database", "operation", "with controls", "without", "ratio"], rows))


if __name__ == "__main__":
    main()
