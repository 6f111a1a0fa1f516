"""The bulk ports' contract (`BulkMemoryWriter`, `MemoryOwners`): what `memorybank import`, `export` and
`secrets scan` rely on, so a host's own store can run them (`memorybank.portability`).

A bulk write keeps every id, owner, time and context it is given, counts them in each owner's usage,
and is all or nothing: a batch holding an id already stored writes none of it. Export (pages of the
store's `list`) then import into an empty store gives back the very memories. An export's history
(format 2: each memory's earlier versions, its revision and retirement) comes back as it was written:
the versions readable as the memory's history, a retired memory out of search and lists until
restored; a memory without history (format 1) is its own first revision. The owners' list names
each owner once, in order. `scan_owner` (what `memorybank secrets scan` walks) reads every stored version,
earlier ones included (sealed ones opened), and the eraser deletes exactly the earlier versions it is given.
Needs the backend's `bulk_writer`, `memory_owners` and `revision_eraser`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from memorybank_core import (
    BulkMemoryWriter,
    Door,
    EditRequest,
    InvalidInputError,
    Memory,
    MemoryBank,
    SaveRequest,
    ScreenBudget,
    SecretFinding,
    SecretScreen,
    Source,
    WrittenBy,
    scan_owner,
)
from memorybank_core.bodies import JsonValue
from memorybank_core.history import with_history
from memorybank_core.ids import CONTEXT_PREFIX, MEMORY_PREFIX, new_id
from memorybank_core.wire import EXPORT_FORMAT, export_line
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


def imported_history(
    user: User, contents: list[str], *, retired_by: str | None = None, offset: int = 0
) -> tuple[Memory, list[Memory]]:
    """A memory as a format-2 line describes it: the current version (the last of `contents`, retired by
    `retired_by` when given) and its earlier versions, newest first, each written a day after the one before."""
    first = imported_memory(user, contents[0], offset=offset)
    versions = [
        attrs.evolve(
            first,
            content=content,
            tags=(f"v{number}",),
            updated_at=first.created_at + timedelta(days=number),
            revision=number,
            written_by=WrittenBy(door=Door.REST if number % 2 else Door.PANEL, credential=f"tok_{number}"),
        )
        for number, content in enumerate(contents, start=1)
    ]
    current = attrs.evolve(versions[-1], retired_by=retired_by)
    return current, versions[-2::-1]


class WordScreen(SecretScreen):
    """A secret screen that finds one word, so a scan's findings are exact on every backend."""

    def __init__(self, word: str) -> None:
        self.word = word

    def find(self, text: str, budget: ScreenBudget | None = None) -> Sequence[SecretFinding]:
        del budget  # one linear scan
        start = text.find(self.word)
        if start < 0:
            return []
        return [SecretFinding(kind="vault_word", label="the vault word", start=start, end=start + len(self.word))]


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

    def test_a_bulk_write_keeps_each_memorys_history_and_retirement(
        self, backend: Backend, bulk_writer: BulkMemoryWriter, bank: MemoryBank, alice: User
    ) -> None:
        replacing, _ = imported_history(alice, ["I live in Braga"])
        retired, earlier = imported_history(
            alice, ["I live in Lisbon", "I live in Porto", "I live in Porto now"], retired_by=replacing.id, offset=1
        )
        edited, edits = imported_history(alice, ["my bike is red", "my bike is blue"], offset=2)

        bulk_writer.add_many([replacing, retired, edited], [*earlier, *edits])

        stored = backend.store.get_many(user_id=alice.user_id, memory_ids=[retired.id, edited.id])
        assert stored == {retired.id: retired, edited.id: edited}
        revisions = backend.store.revisions(user_id=alice.user_id, memory_id=retired.id, limit=10, before=None)
        assert list(revisions) == earlier
        assert [m.id for m in backend.store.list(user_id=alice.user_id, limit=10, after=None)] == [
            replacing.id,
            edited.id,
        ]
        everything = backend.store.list(user_id=alice.user_id, limit=10, after=None, include_retired=True)
        assert {m.id for m in everything} == {replacing.id, retired.id, edited.id}
        # Retired on import as by a save: nothing to be found by, for the engine and through the bank alike.
        hits = backend.search_engine.search(user_id=alice.user_id, query="I live in Porto now", limit=10)
        assert retired.id not in {hit.memory_id for hit in hits}
        assert [r.memory.id for r in bank.search(alice, query="bike")] == [edited.id]
        history = bank.revisions(alice, memory_id=retired.id)
        assert [(m.revision, m.content) for m in history.revisions] == [
            (3, "I live in Porto now"),
            (2, "I live in Porto"),
            (1, "I live in Lisbon"),
        ]
        assert bank.usage(alice).usage.memories == 3

    def test_an_imported_history_goes_on_as_if_it_had_been_written_here(
        self, bulk_writer: BulkMemoryWriter, bank: MemoryBank, alice: User
    ) -> None:
        replacing, _ = imported_history(alice, ["the standup is at ten"])
        retired, earlier = imported_history(alice, ["the standup is at nine"], retired_by=replacing.id)
        bulk_writer.add_many([replacing, retired], earlier)

        restored = bank.edit(alice, memory_id=retired.id, request=EditRequest.parse({"retired": False}))

        assert (restored.revision, restored.retired_by) == (retired.revision + 1, None)
        assert {r.memory.id for r in bank.search(alice, query="standup")} == {replacing.id, retired.id}
        kept = bank.revisions(alice, memory_id=retired.id).revisions
        assert [m.revision for m in kept] == [2, 1]
        assert kept[1].retired_by == replacing.id

    def test_the_export_of_a_bulk_write_carries_its_history_as_it_was_given(
        self, backend: Backend, bulk_writer: BulkMemoryWriter, alice: User
    ) -> None:
        replacing, _ = imported_history(alice, ["the office is in building C"])
        retired, earlier = imported_history(
            alice, ["the office is in building A", "the office is in building B"], retired_by=replacing.id, offset=1
        )
        bulk_writer.add_many([replacing, retired], earlier)

        page = backend.store.list(user_id=alice.user_id, limit=10, after=None, include_retired=True)
        exported = [
            export_line(line.memory, line.revisions)
            for line in with_history(backend.store, user_id=alice.user_id, memories=page)
        ]

        assert exported == [export_line(replacing), export_line(retired, earlier)]
        assert f'"format":{EXPORT_FORMAT}' in exported[1]

    def test_a_memory_without_history_imports_as_its_first_revision(
        self, backend: Backend, bulk_writer: BulkMemoryWriter, bank: MemoryBank, alice: User
    ) -> None:
        # What a format-1 line (written before revisions were kept) becomes: no history, revision 1, not retired.
        old = imported_memory(alice, "my locker is number 12")
        bulk_writer.add_many([old])

        assert backend.store.revisions(user_id=alice.user_id, memory_id=old.id, limit=10, before=None) == []
        edited = bank.edit(alice, memory_id=old.id, request=EditRequest.parse({"content": "my locker is number 14"}))

        assert edited.revision == 2
        assert [(m.revision, m.content) for m in bank.revisions(alice, memory_id=old.id).revisions] == [
            (2, "my locker is number 14"),
            (1, "my locker is number 12"),
        ]

    def test_a_scan_reads_every_version_and_the_eraser_drops_only_the_earlier_ones_it_is_given(
        self, backend: Backend, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        screen = WordScreen("swordfish")
        eraser = backend.require(backend.revision_eraser, "revision_eraser")
        edited = bank.save(alice, SaveRequest.parse({"content": "the vault word is swordfish"})).id
        bank.edit(alice, memory_id=edited, request=EditRequest.parse({"content": "the vault word is in the safe"}))
        bank.edit(alice, memory_id=edited, request=EditRequest.parse({"tags": ["vault"]}))
        still = bank.save(alice, SaveRequest.parse({"content": "note", "tags": ["swordfish"]})).id
        bank.save(alice, SaveRequest.parse({"content": "an ordinary note", "supersedes": [still]}))
        bobs = bank.save(bob, SaveRequest.parse({"content": "bob's swordfish"})).id
        bank.edit(bob, memory_id=bobs, request=EditRequest.parse({"content": "bob's fish"}))

        found = [
            (f.version.id, f.version.revision, f.earlier, [p.path for p in f.problems])
            for f in scan_owner(backend.store, screen, user_id=alice.user_id)
        ]

        # The retired memory as it is now and before its retirement, and the edited one's first version only.
        assert sorted(found) == sorted(
            [(still, 2, False, ["tags.0"]), (still, 1, True, ["tags.0"]), (edited, 1, True, ["content"])]
        )
        eraser.drop_revisions(user_id=bob.user_id, memory_id=edited, revisions=[1])  # not bob's: nothing
        assert len(bank.revisions(alice, memory_id=edited).revisions) == 3
        eraser.drop_revisions(user_id=alice.user_id, memory_id=edited, revisions=[1])
        history = bank.revisions(alice, memory_id=edited)
        assert [(m.revision, m.content) for m in history.revisions] == [
            (3, "the vault word is in the safe"),
            (2, "the vault word is in the safe"),
        ]
        assert [(f.version.id, f.earlier) for f in scan_owner(backend.store, screen, user_id=alice.user_id)] == [
            (still, False),
            (still, True),
        ]
        assert [(f.version.id, f.earlier) for f in scan_owner(backend.store, screen, user_id=bob.user_id)] == [
            (bobs, True)
        ]
        # The history goes on: the next edit keeps the current version beside the ones left.
        bank.edit(alice, memory_id=edited, request=EditRequest.parse({"content": "the vault word moved"}))
        assert [m.revision for m in bank.revisions(alice, memory_id=edited).revisions] == [4, 3, 2]
