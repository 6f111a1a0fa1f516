"""Bulk import and export (memorybank.portability) against both SQL dialects."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_mysql import SqlStorage
from adapters_mysql.schema import memory, memory_context
from memorybank.portability import (
    export_user,
    import_file,
    import_lines,
    memory_line,
    parse_line,
    reindex_with_progress,
)
from memorybank_core import InvalidInputError, Memory, limits
from memorybank_core.ids import ORGANIZATION_PREFIX, new_id
from memorybank_core.wire import EXPORT_TIMESPEC, memory_json
from tests.sql.memories import make_memory, new_user

NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def line(**fields: object) -> str:
    base: dict[str, object] = {"user_id": USER, "org_id": ORG, "content": "a memory"}
    base.update(fields)
    return json.dumps({key: value for key, value in base.items() if value is not None})


USER, ORG = new_user(), new_id(ORGANIZATION_PREFIX)


def all_rows(storage: SqlStorage) -> tuple[int, int]:
    with storage.engine.connect() as connection:
        return (
            connection.execute(sa.select(sa.func.count()).select_from(memory)).scalar_one(),
            connection.execute(sa.select(sa.func.count()).select_from(memory_context)).scalar_one(),
        )


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


def test_missing_ids_and_times_are_minted_and_the_owner_comes_from_the_line(storage: SqlStorage) -> None:
    report = import_lines(
        [line(tags=["a", "b"], contexts=[{"snippet": "from chat", "conversation_id": "c1"}])],
        storage.store,
        now=lambda: NOW,
    )
    assert report.imported == 1
    (saved,) = storage.store.list(user_id=USER, limit=5, after=None)
    assert saved.created_at == saved.updated_at == NOW
    assert saved.org_id == ORG
    assert saved.tags == ("a", "b")
    assert saved.contexts[0].citation is not None
    assert saved.contexts[0].created_at == NOW


def test_bad_lines_are_reported_by_number_and_skipped_while_good_lines_land(storage: SqlStorage) -> None:
    lines = [
        line(content="good one"),
        "not json",
        line(content=""),
        line(user_id="alice"),
        "",
        line(content="x" * (limits.CONTENT.max + 1), org_id="org_nope"),
        line(created_at="yesterday"),
        line(created_at="2026-07-02T12:00:00"),
        line(contexts=[{"snippet": "ok", "id": "mem_01m8vgptfke8as43r5emqcrs44"}]),
        json.dumps(["a", "list"]),
        line(content="good two", source="modal"),
    ]
    report = import_lines(lines, storage.store, now=lambda: NOW)
    assert report.imported == 2
    assert [problem.line for problem in report.skipped] == [2, 3, 4, 6, 7, 8, 9, 10]
    described = [problem.describe() for problem in report.skipped]
    assert described[0] == "line 2: line must be one JSON object (Expecting value at column 1)"
    assert described[1].startswith("line 3: content must hold")
    assert "user_id" in described[2]
    assert "content" in described[3]
    assert "org_id" in described[3]
    assert "contexts.0.id" in described[6]
    # Never the content itself.
    assert all("x" * 50 not in text for text in described)
    assert all_rows(storage) == (2, 0)


def test_an_id_already_stored_skips_only_that_line(storage: SqlStorage) -> None:
    existing = make_memory(USER, "already here")
    storage.store.add(user_id=USER, memory=existing)
    taken = json.loads(memory_line(existing))
    lines = [line(content="before"), json.dumps(taken), line(content="after")]
    report = import_lines(lines, storage.store, now=lambda: NOW)
    assert report.imported == 2
    assert [(p.line, p.problems) for p in report.skipped] == [(2, ("id is already stored",))]
    assert all_rows(storage) == (3, 1)


def test_a_batch_is_all_or_nothing(storage: SqlStorage) -> None:
    first, second = make_memory(USER, "first"), make_memory(USER, "second", snippets=("s1", "s2"))
    storage.store.add(user_id=USER, memory=first)
    with pytest.raises(InvalidInputError):
        storage.store.add_many([second, first])
    assert all_rows(storage) == (1, 1)


def test_parse_line_builds_the_same_memory_as_the_exported_line(storage: SqlStorage) -> None:
    original: Memory = make_memory(USER, "exact", snippets=("with citation", "plain"))
    assert parse_line(memory_line(original), now=lambda: NOW) == original


def test_export_refuses_a_malformed_user_id(storage: SqlStorage) -> None:
    with pytest.raises(InvalidInputError, match="user"):
        export_user(storage.store, "alice", io.StringIO())


def test_import_file_reads_utf8_and_reports_undecodable_lines(storage: SqlStorage, tmp_path: Path) -> None:
    path = tmp_path / "memories.jsonl"
    good = line(content="東京 café").encode()
    broken = line(content="latin1 MARK").encode().replace(b"MARK", b"\xe9")
    path.write_bytes(good + b"\n" + broken + b"\n")
    report = import_file(path, storage.store, show_progress=False)
    assert report.imported == 1
    assert [(p.line, p.problems) for p in report.skipped] == [
        (2, ("content must be valid Unicode (it holds a lone surrogate)",))
    ]
    assert [m.content for m in storage.store.list(user_id=USER, limit=5, after=None)] == ["東京 café"]


def test_reindex_with_progress_rewrites_stale_rows(storage: SqlStorage) -> None:
    owner = new_user()
    storage.store.add(user_id=owner, memory=make_memory(owner, "kettle"))
    with storage.engine.begin() as connection:
        connection.execute(memory.update().values(search_version=0))
    assert reindex_with_progress(storage, show_progress=False).rewritten == 1
    assert reindex_with_progress(storage, show_progress=False).rewritten == 0
    assert reindex_with_progress(storage, everything=True, show_progress=False).rewritten == 1


def test_the_export_line_is_the_wire_memory_with_the_owners_ids_and_microseconds() -> None:
    # One shape of a memory in JSON (memorybank_core.wire): export adds only who owns it.
    original: Memory = make_memory(USER, "exact", snippets=("with citation", "plain"))
    line = json.loads(memory_line(original))
    assert (line.pop("user_id"), line.pop("org_id")) == (original.user_id, original.org_id)
    assert line == memory_json(original, timespec=EXPORT_TIMESPEC)
    assert line["created_at"].endswith(f".{original.created_at.microsecond:06d}Z")
