"""The bulk import ports' contract (memorybank_testing.ImportContract), on every backend that brings it, and
`memorybank export` then `import` through the lines themselves (format 2 with history, format 1 without)."""

from __future__ import annotations

import io
import json

from memorybank.portability import export_user, import_lines
from memorybank_core import BulkMemoryWriter, Door, EditRequest, MemoryBank, SaveRequest
from memorybank_core.use_cases import INCLUDE_RETIRED
from memorybank_testing import ImportContract
from memorybank_testing.backends import Backend
from memorybank_testing.principals import User
from tests.contract.backends import on_kinds_with


@on_kinds_with("bulk_writer")
class TestImportContract(ImportContract):
    """`backend_factory` is tests/conftest.py's, on the kinds that list the port."""

    def test_an_export_imported_again_gives_back_each_history_and_retirement(
        self, backend: Backend, bulk_writer: BulkMemoryWriter, bank: MemoryBank, alice: User
    ) -> None:
        old = bank.save(alice, SaveRequest.parse({"content": "the office is in building A"}), door=Door.MCP)
        bank.edit(alice, memory_id=old.id, request=EditRequest.parse({"content": "the office is in building B"}))
        new = bank.save(alice, SaveRequest.parse({"content": "the office moved to building C", "supersedes": [old.id]}))
        before = {line.memory.id: line for line in bank.export(alice)}
        out = io.StringIO()
        export_user(backend.store, alice.user_id, out)
        lines = out.getvalue().splitlines()
        for memory_id in (old.id, new.id):
            bank.delete(alice, memory_id=memory_id)

        report = import_lines(lines, bulk_writer)

        assert (report.imported, report.skipped) == (2, ())
        assert all(json.loads(line)["format"] == 2 for line in lines)
        assert {line.memory.id: line for line in bank.export(alice)} == before
        assert [m.revision for m in before[old.id].revisions] == [2, 1]
        assert [m.id for m in bank.list(alice).memories] == [new.id]
        assert [m.id for m in bank.list(alice, include=INCLUDE_RETIRED).memories] == [new.id, old.id]
        assert [r.memory.id for r in bank.search(alice, query="office building")] == [new.id]

    def test_an_export_of_format_1_still_imports_as_memories_without_history(
        self, bulk_writer: BulkMemoryWriter, bank: MemoryBank, alice: User
    ) -> None:
        line = {
            "user_id": alice.user_id,
            "org_id": alice.organization_id,
            "content": "my locker is number 12",
            "tags": ["gym"],
            "created_at": "2026-01-02T03:04:05Z",
        }

        report = import_lines([json.dumps(line)], bulk_writer)

        assert (report.imported, report.skipped) == (1, ())
        (imported,) = bank.list(alice).memories
        assert (imported.revision, imported.retired_by, imported.tags) == (1, None, ("gym",))
        assert imported.written_by is not None
        assert imported.written_by.door is Door.IMPORT
        assert bank.revisions(alice, memory_id=imported.id).revisions == (imported,)
        assert [r.memory.id for r in bank.search(alice, query="locker")] == [imported.id]
