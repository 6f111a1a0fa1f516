"""The bulk ports' contract (`BulkMemoryWriter`, `MemoryOwners`): what `memorybank import`, `export` and
`secrets scan` rely on, so a host's own store can run them (`memorybank.portability`).

A bulk write keeps every id, owner, time and context it is given, counts them in each owner's usage,
and is all or nothing: a batch holding an id already stored writes none of it. Export (pages of the
store's `list`) then import into an empty store gives back the very memories. The owners' list names
each owner once, in order. Needs the backend's `bulk_writer` and `memory_owners`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memorybank_core import BulkMemoryWriter, InvalidInputError, Memory, MemoryBank, SaveRequest, Source
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import CONTEXT_PREFIX, MEMORY_PREFIX, new_id
from memorybank_core.wire import export_line
from memorybank_testing.backends import Backend
from memorybank_testing.principals import User

SAVED_AT = datetime(2026, 7, 2, 12, 0, 0, 123_456, tzinfo=UTC)


def imported_memory(user: User, content: str, *, snippets: int = 1, offset: int = 0) -> Memory:
    """A memory as an import line describes it: its own ids, times (microseconds included) and citations."""
    contexts = [
        {"snippet": f"snippet {n} 東京 🎉", "conversation_id": "c1", "message_id": f"m{n}"} for n in range(snippets)
    ]
    created = SAVED_AT - timedelta(days=30, seconds=offset)
    return SaveRequest.parse({"content": content, "tags": ["imported"], "contexts": contexts}).to_memory(
        memory_id=new_id(MEMORY_PREFIX),
        user_id=user.user_id,
        org_id=user.organization_id,
        source=Source.MODAL,
        created_at=created,
        updated_at=created + timedelta(hours=1),
        context_ids=[new_id(CONTEXT_PREFIX) for _ in range(snippets)],
    )


class ImportContract:
    """Bulk writes keep what they are given, count it, and are all or nothing; owners are listed once each."""

    @pytest.fixture
    def bulk_writer(self, backend: Backend) -> BulkMemoryWriter:
        return backend.require(backend.bulk_writer, "bulk_writer")

    def test_a_bulk_write_keeps_every_id_time_and_context_and_counts_usage(
        self, backend: Backend, bulk_writer: BulkMemoryWriter, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        mine = [imported_memory(alice, f"imported harbor note {n}", snippets=n % 3, offset=n) for n in range(5)]
        theirs = imported_memory(bob, "bob's imported note")

        bulk_writer.add_many([*mine, theirs])

        assert backend.store.get_many(user_id=alice.user_id, memory_ids=[m.id for m in mine]) == {m.id: m for m in mine}
        assert list(backend.store.list(user_id=alice.user_id, limit=10, after=None)) == mine
        assert backend.store.get_many(user_id=alice.user_id, memory_ids=[theirs.id]) == {}
        assert bank.usage(alice).usage.memories == 5
        assert bank.usage(bob).usage.memories == 1
        assert len(bank.search(alice, query="harbor")) == 5

    def test_a_batch_holding_an_id_already_stored_writes_none_of_it(
        self, backend: Backend, bulk_writer: BulkMemoryWriter, alice: User
    ) -> None:
        first, second = imported_memory(alice, "first"), imported_memory(alice, "second", snippets=2, offset=1)
        bulk_writer.add_many([first])

        with pytest.raises(InvalidInputError) as taken:
            bulk_writer.add_many([second, first])

        assert [problem.path for problem in taken.value.problems] == ["id"]
        assert [m.id for m in backend.store.list(user_id=alice.user_id, limit=5, after=None)] == [first.id]
        assert backend.store.usage(user_id=alice.user_id).memories == 1

    def test_the_export_of_a_bulk_write_is_the_lines_it_was_given(
        self, backend: Backend, bulk_writer: BulkMemoryWriter, alice: User
    ) -> None:
        # What makes `memorybank export` then `import` round-trip on this store (the lines' own
        # round trip, `portability.parse_line`, is the same for every store).
        originals = [imported_memory(alice, f"exported note {n}", snippets=n % 2, offset=n) for n in range(7)]
        bulk_writer.add_many(originals)

        exported = [export_line(m) for m in backend.store.list(user_id=alice.user_id, limit=100, after=None)]

        assert exported == [export_line(m) for m in originals]

    def test_memory_owners_names_each_owner_once_in_order(
        self, backend: Backend, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        owners = backend.require(backend.memory_owners, "memory_owners")
        assert list(owners.memory_owners()) == []
        for user in (alice, bob, alice):
            bank.save(user, JsonValue({"content": "an owner's note"}))
        gone = User()
        bank.delete(gone, memory_id=bank.save(gone, JsonValue({"content": "deleted at once"})).id)

        assert list(owners.memory_owners()) == sorted({alice.user_id, bob.user_id})
