"""Bulk import and export (memorybank.portability) against both SQL dialects: the round trip with search.

The import's line rules run over any store (tests/unit/test_portability.py, in memory); the bulk ports'
behaviour is the shipped memorybank_testing.ImportContract, run on every backend by tests/contract."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from adapters_mysql import SqlStorage
from adapters_mysql.schema import memory, memory_context
from memorybank.commands.reindex import reindex_with_progress
from memorybank.portability import (
    export_user,
    import_lines,
)
from tests.sql.memories import make_memory, new_user

NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def exported(storage: SqlStorage, user_id: str) -> str:
    out = io.StringIO()
    export_user(storage.store, user_id, out)
    return out.getvalue()


def test_export_then_import_round_trips_exactly(storage: SqlStorage) -> None:
    owner = new_user()
    originals = [
        make_memory(owner, f"memory {n} about the 東京 harbor 🎉", snippets=("one", "two") if n % 2 else ())
        for n in range(250)
    ]
    storage.store.add_many(originals)
    first = exported(storage, owner)
    assert len(first.splitlines()) == 250
    # Into a fresh database of the same dialect: drop everything, import, export again.
    with storage.engine.begin() as connection:
        connection.execute(memory_context.delete())
        connection.execute(memory.delete())
    report = import_lines(io.StringIO(first), storage.store, now=lambda: NOW, batch_size=100)
    assert (report.imported, report.skipped) == (250, ())
    assert exported(storage, owner) == first
    assert storage.store.get_many(user_id=owner, memory_ids=[m.id for m in originals]) == {m.id: m for m in originals}
    hits = storage.search_engine.search(user_id=owner, query="harbor", limit=5)
    assert len(hits) == 5


def test_reindex_with_progress_rewrites_stale_rows(storage: SqlStorage) -> None:
    owner = new_user()
    storage.store.add(user_id=owner, memory=make_memory(owner, "kettle"))
    with storage.engine.begin() as connection:
        connection.execute(memory.update().values(search_version=0))
    assert reindex_with_progress(storage, show_progress=False).rewritten == 1
    assert reindex_with_progress(storage, show_progress=False).rewritten == 0
    assert reindex_with_progress(storage, everything=True, show_progress=False).rewritten == 1
