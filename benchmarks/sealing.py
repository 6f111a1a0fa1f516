"""Encryption at rest: plaintext against sealed storage on MySQL/MariaDB, in one run.

    python -m benchmarks.sealing --rows 10000 100000 [--saves 400] [--no-recall]

For each size, two databases hold the same generated corpus (benchmarks.corpus, parsed by the
library's own import and sealed by its own store): one plaintext, one sealed (AES-256-GCM,
authenticated blind-index tokens). Loading is a bulk load: the FULLTEXT index is dropped, rows
go in 5,000 per multi-row insert (pre-sealed by the store's row codec), and the index is built
once at the end, so a million rows per mode load in minutes. A kept database is reused
(`--reload` rebuilds). Then, interleaving the two so drift hits both alike:
save p50 (`MemoryBank.save` of a memory with two snippets, as the measured user, the two modes
alternating save by save; the saves are deleted afterwards) and search p50 of the scale
benchmark's queries for the measured user.
Last, LoCoMo recall on both (benchmarks.recall's questions), which must be identical.

The sealed databases use a fixed benchmark key (below): it protects nothing and must never
be used for real data.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import sqlalchemy as sa
from tqdm import tqdm

from adapters_crypto import KeyRing, write_key_ring
from adapters_mysql import SqlStorage
from adapters_mysql.mysql_search import OWNER_FULLTEXT_INDEX_NAME, owner_fulltext_index_exists
from adapters_mysql.schema import memory
from benchmarks import locomo, recall
from benchmarks.common import NO_SCREEN, Principal, Timing, database_url, drop_database, machine, open_bank, table
from benchmarks.corpus import QUERIES, CorpusSpec, CorpusWriter
from benchmarks.scale import spec_for
from benchmarks.write_cost import requests
from memorybank.bootstrap import Runtime
from memorybank.portability import import_lines
from memorybank.settings import KeyRingChoice
from memorybank_core import Memory, RecordingEventSink

MODES = ("plaintext", "sealed")
#: Public and fixed, so a kept benchmark database can be reopened: never a real key.
BENCH_KEY_ID = "kbench001"
BENCH_RING = KeyRing(
    keys={BENCH_KEY_ID: hashlib.sha256(b"memorybank benchmark key, not a secret").digest()},
    primary=BENCH_KEY_ID,
    index=BENCH_KEY_ID,
)


def _open(name: str, mode: str) -> Runtime:
    """The `mode` database `name`, migrated, opened as `serve --key-file` opens it (the benchmark ring's file)."""
    keys = None
    if mode == "sealed":
        ring_file = Path(tempfile.mkdtemp(prefix="memorybank-bench-ring-")) / "keys.json"
        write_key_ring(ring_file, BENCH_RING)
        keys = KeyRingChoice(source="benchmark", path=ring_file)
    return open_bank(database_url(name), migrate=True, events=RecordingEventSink(), secret_screen=NO_SCREEN, keys=keys)


#: Memories per multi-row insert transaction while bulk loading.
BULK_ROWS = 5000


class _BulkWriter:
    """Gathers the import's per-user batches into large ones: one transaction per `BULK_ROWS` memories."""

    def __init__(self, storage: SqlStorage) -> None:
        self._storage = storage
        self._pending: list[Memory] = []

    def add_many(self, memories: Sequence[Memory], revisions: Sequence[Memory] = ()) -> None:
        if revisions:
            raise ValueError("the benchmark's corpora have no history")
        self._pending.extend(memories)
        if len(self._pending) >= BULK_ROWS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._storage.store.add_many(self._pending)
            self._pending = []


def _bulk_import(storage: SqlStorage, rows: int, mode: str) -> None:
    """Load the corpus of `rows` memories with the FULLTEXT index dropped, then build it once."""
    with storage.engine.begin() as connection:
        if owner_fulltext_index_exists(connection):
            connection.exec_driver_sql(f"ALTER TABLE memory DROP INDEX {OWNER_FULLTEXT_INDEX_NAME}")
    writer = _BulkWriter(storage)
    with tqdm(total=rows, unit="memory", mininterval=5, file=sys.stderr, desc=f"{mode} {rows}") as bar:
        report = import_lines(CorpusWriter(spec_for(rows)).lines(), writer, progress=bar.update)
        writer.flush()
    if report.skipped:
        raise SystemExit(f"{mode}: {len(report.skipped)} corpus lines were refused")
    started = time.perf_counter()
    storage.migrate()  # builds the FULLTEXT index, once
    print(f"  {mode} {rows}: FULLTEXT index built in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def load(rows: int, mode: str, *, reload: bool) -> Runtime:
    """The `mode` database of `rows` memories, filled unless it holds them already."""
    name = f"seal_{mode}_{rows}"
    if reload:
        drop_database(name)
    runtime = _open(name, mode)
    storage = runtime.storage
    with storage.engine.connect() as connection:
        present = connection.execute(sa.select(sa.func.count()).select_from(memory)).scalar_one()
    if present != rows:
        if present:
            raise SystemExit(f"{name}: holds {present} memories, not {rows}: pass --reload")
        started = time.perf_counter()
        _bulk_import(storage, rows, mode)
        print(f"  {name}: loaded {rows} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    storage.check_ready()
    return runtime


def _measured(storage: SqlStorage) -> Principal:
    user = CorpusWriter(CorpusSpec(users=1)).measured_user
    with storage.engine.connect() as connection:
        org = connection.execute(sa.select(memory.c.org_id).where(memory.c.user_id == user).limit(1)).scalar_one()
    return Principal(user_id=user, organization_id=org)


def save_p50(storages: dict[str, Runtime], saves: int) -> dict[str, float]:
    """Median save latency per mode, in ms, alternating the modes save by save; the saves are deleted after."""
    batch = requests(saves)
    banks = {mode: (runtime.services.bank, _measured(runtime.storage)) for mode, runtime in storages.items()}
    samples: dict[str, list[float]] = {mode: [] for mode in storages}
    saved: dict[str, list[str]] = {mode: [] for mode in storages}
    for request in batch:
        for mode, (bank, user) in banks.items():
            before = time.perf_counter()
            saved[mode].append(bank.save(user, request).id)
            samples[mode].append((time.perf_counter() - before) * 1000)
    for mode, (bank, user) in banks.items():
        for memory_id in saved[mode]:
            bank.delete(user, memory_id=memory_id)
    return {mode: statistics.median(values) for mode, values in samples.items()}


def search_timings(storages: dict[str, Runtime], *, repeats: int, budget: float) -> dict[tuple[str, str], Timing]:
    """p50/p95 of each query per mode, alternating the modes call by call; results must be identical."""
    timings = {}
    for label, query in QUERIES.items():
        calls = {}
        answers = {}
        for mode, runtime in storages.items():
            bank = runtime.services.bank
            user = _measured(runtime.storage)
            # Each database minted its own ids for the same corpus: compare what was found, and its score.
            answers[mode] = [(r.memory.content, round(r.score, 9)) for r in bank.search(user, query=query)]
            calls[mode] = partial(bank.search, user, query=query)
        if answers["plaintext"] != answers["sealed"]:
            raise SystemExit(f"{label}: sealed search returned other memories or scores than plaintext")
        samples: dict[str, list[float]] = {mode: [] for mode in calls}
        started = time.perf_counter()
        while len(samples["sealed"]) < repeats and time.perf_counter() - started < 2 * budget:
            for mode, call in calls.items():
                before = time.perf_counter()
                call()
                samples[mode].append((time.perf_counter() - before) * 1000)
        for mode, values in samples.items():
            timings[(label, mode)] = Timing(tuple(values[3:] or values))
    return timings


def recall_both(data: Path) -> dict[str, locomo.Scores]:
    """LoCoMo recall on a plaintext and a sealed MySQL database."""
    conversations, questions = locomo.load(data)
    scores = {}
    for mode in MODES:
        drop_database(f"seal_recall_{mode}")
        with _open(f"seal_recall_{mode}", mode) as runtime:
            bank = runtime.services.bank
            scores[f"MySQL owner-scoped, {mode}"] = locomo.evaluate(
                recall.searching(bank, recall.save_turns(bank, conversations)), questions
            )
    return scores


def main(argv: Sequence[str] | None = None) -> None:
    """Command line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sealing", description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[10000])
    parser.add_argument("--saves", type=int, default=1000, help="saves per mode, the modes alternating")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per query and mode at most")
    parser.add_argument("--reload", action="store_true", help="rebuild kept databases")
    parser.add_argument("--no-recall", action="store_true")
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    arguments = parser.parse_args(argv)
    print(f"machine: {machine()}", file=sys.stderr)
    sections = []
    for rows in arguments.rows:
        storages = {mode: load(rows, mode, reload=arguments.reload) for mode in MODES}
        try:
            searches = search_timings(storages, repeats=arguments.repeats, budget=arguments.budget)
            saves = save_p50(storages, arguments.saves)
        finally:
            for runtime in storages.values():
                runtime.close()
        lines = [
            [
                label,
                f"{searches[(label, 'plaintext')].p50:.2f}",
                f"{searches[(label, 'sealed')].p50:.2f}",
                f"{searches[(label, 'sealed')].p50 / searches[(label, 'plaintext')].p50:.2f}",
            ]
            for label in QUERIES
        ]
        lines.append(
            [
                "save",
                f"{saves['plaintext']:.2f}",
                f"{saves['sealed']:.2f}",
                f"{saves['sealed'] / saves['plaintext']:.2f}",
            ]
        )
        sections.append(
            f"{rows:,} memories: p50 in ms (search: the same memories and scores in both)\n\n"
            + table(["operation", "plaintext", "sealed", "sealed / plaintext"], lines)
        )
    if not arguments.no_recall:
        scores = recall_both(arguments.data)
        sections.append("LoCoMo recall\n\n" + locomo.report(scores))
    print("\n\n".join(sections))


if __name__ == "__main__":
    main()
