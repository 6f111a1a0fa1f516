"""`memorybank compact`: drop deleted and rewritten memories' entries from the search index."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from memorybank.commands.base import PROGRAM, Shared, Subcommands, memories, runtime
from memorybank.settings import Settings


def register(commands: Subcommands, shared: Shared) -> None:
    compacting = commands.add_parser(
        "compact",
        parents=[shared.database],
        help="drop deleted and rewritten memories' entries from the search index",
        description="Every delete, edit, purge and re-index leaves the old text's entries in the full-text index, "
        "and on MySQL/MariaDB every search of every user pays for them until the table is rebuilt. MySQL/MariaDB: "
        "rebuilds the memory table (OPTIMIZE TABLE; searches go on, saves wait until it ends: seconds per 100,000 "
        "memories). SQLite: merges the search index and truncates the write-ahead log.",
    )
    compacting.set_defaults(run=run_compact)


def run_compact(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:  # noqa: ARG001
    with runtime(settings) as opened:
        started = time.perf_counter()  # the rebuild's time, the wait it costs writers: not the start-up's
        held = opened.storage.compact_search_index()
        elapsed = time.perf_counter() - started
    print(f"{PROGRAM}: compacted the search index of {memories(held)} in {elapsed:.1f} s", file=out)
