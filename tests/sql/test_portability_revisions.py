"""Export and import carry each memory's history (export format 2); an export written before it (format 1) still
imports, as memories without history written by the import."""

from __future__ import annotations

import io
import json

import pytest

from adapters_mysql import SqlStorage
from memorybank.portability import export_user, import_lines, parse_exported
from memorybank_core import Door, EditRequest, MemoryBank, RecordingEventSink, SaveRequest
from memorybank_core.ids import MEMORY_PREFIX, ORGANIZATION_PREFIX, new_id
from memorybank_core.use_cases import INCLUDE_RETIRED
from tests.conftest import User
from tests.sql.backends import bank_on
from tests.unit.test_portability import NOW


def _bank(storage: SqlStorage) -> MemoryBank:
    return bank_on(storage, events=RecordingEventSink())


def test_export_then_import_carries_history_retirement_and_who_wrote_each_version(storage: SqlStorage) -> None:
    bank = _bank(storage)
    alice = User()
    old = bank.save(
        alice,
        SaveRequest.parse({"content": "office in building A", "contexts": [{"snippet": "said in standup"}]}),
        door=Door.MCP,
    )
    bank.edit(alice, memory_id=old.id, request=EditRequest.parse({"content": "office in building B"}), door=Door.PANEL)
    new = bank.save(alice, SaveRequest.parse({"content": "office moved to building C", "supersedes": [old.id]}))
    before = {line.memory.id: line for line in bank.export(alice)}
    out = io.StringIO()
    assert export_user(storage.store, alice.user_id, out) == 2
    bank.delete(alice, memory_id=old.id)
    bank.delete(alice, memory_id=new.id)

    report = import_lines(out.getvalue().splitlines(), storage.store)

    assert (report.imported, report.skipped) == (2, ())
    after = {line.memory.id: line for line in bank.export(alice)}
    assert after == before
    assert [m.revision for m in after[old.id].revisions] == [2, 1]
    assert after[old.id].memory.retired_by == new.id
    assert [m.id for m in bank.list(alice).memories] == [new.id]
    assert [m.id for m in bank.list(alice, include=INCLUDE_RETIRED).memories] == [new.id, old.id]
    history = bank.revisions(alice, memory_id=old.id).revisions
    assert [(m.content, m.written_by.door if m.written_by else None) for m in history] == [
        ("office in building B", Door.REST),
        ("office in building B", Door.PANEL),
        ("office in building A", Door.MCP),
    ]
    assert history[2].contexts[0].snippet == "said in standup"


def test_a_format_1_line_imports_as_a_memory_without_history_written_by_the_import() -> None:
    user, org = User().user_id, new_id(ORGANIZATION_PREFIX)
    line = json.dumps(
        {"user_id": user, "org_id": org, "content": "from an old export", "created_at": "2026-01-02T03:04:05Z"}
    )

    parsed = parse_exported(line, now=lambda: NOW)

    assert parsed.revisions == ()
    assert (parsed.memory.revision, parsed.memory.retired_by) == (1, None)
    assert parsed.memory.written_by is not None
    assert parsed.memory.written_by.door is Door.IMPORT


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"format": 3}, "format"),
        ({"revision": 0}, "revision"),
        ({"retired_by": "mem_nonsense"}, "retired_by"),
        ({"door": "fax"}, "door"),
        ({"revisions": "none"}, "revisions"),
        ({"revision": 2, "revisions": [{"revision": 1, "content": ""}]}, "revisions.0.content"),
        ({"revision": 2, "revisions": [{"revision": 3, "content": "later"}]}, "revision"),
    ],
)
def test_a_bad_history_is_reported_by_field(fields: dict[str, object], path: str) -> None:
    base = {
        "user_id": User().user_id,
        "org_id": new_id(ORGANIZATION_PREFIX),
        "content": "ok",
        "id": new_id(MEMORY_PREFIX),
    }

    report = import_lines([json.dumps({**base, **fields})], _NoWrites())

    assert report.imported == 0
    (problem,) = report.skipped
    assert any(text.startswith(f"{path} ") for text in problem.problems), problem.problems


class _NoWrites:
    def add_many(self, memories: object, revisions: object = ()) -> None:
        raise AssertionError("nothing valid to write")
