"""The contract of memories that change: edits with their history, supersede on save, retirement and restore.

Every backend passes these unchanged, through the use cases (`MemoryBank`), like `MemoryContract`:
an edit keeps the id and the creation time and keeps the version it replaces; a change based on a
revision that is no longer the stored one writes nothing; a memory a save supersedes leaves search
and lists (and comes back when restored); an id that is not the caller's is "not found" whatever
the operation; a deleted memory leaves no revision behind.
"""

from __future__ import annotations

import pytest

from memorybank_core import (
    Door,
    EditRequest,
    ForbiddenError,
    InvalidInputError,
    MemoryBank,
    NotFoundError,
    Quota,
    RecordingEventSink,
    RevisionConflictError,
    SaveRequest,
    limits,
)
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import MEMORY_PREFIX, new_id
from memorybank_core.requests import DELETE_ALL_CONFIRMATION, DeleteAll
from memorybank_core.use_cases import INCLUDE_RETIRED
from memorybank_testing.backends import Backend
from memorybank_testing.principals import User, bank_over


def _save(bank: MemoryBank, user: User, content: str, **fields: object) -> str:
    return bank.save(user, SaveRequest.parse({"content": content, **fields})).id


def _near_duplicate_of_a_dentist_note(bank: MemoryBank, alice: User, bob: User) -> str:
    """Alice's memory like "my dentist appointment is now on tuesday at ten", beside an unlike one of hers and a
    like one of Bob's."""
    near = _save(bank, alice, "my dentist appointment is on tuesday at nine")
    _save(bank, alice, "the lighthouse keeper wrote about the storm")
    _save(bank, bob, "my dentist appointment is on tuesday at ten")
    return near


def _ids(bank: MemoryBank, user: User, query: str) -> list[str]:
    return [result.memory.id for result in bank.search(user, query=query)]


class RevisionContract:
    """What a host relies on when memories change: edit, history, supersede, retire, restore, delete."""

    def test_an_edit_changes_the_memory_and_keeps_its_id_creation_time_and_earlier_version(
        self, bank: MemoryBank, alice: User
    ) -> None:
        saved = bank.save(
            alice,
            SaveRequest.parse({"content": "I live in Lisbon", "tags": ["home"], "contexts": [{"snippet": "moved"}]}),
        )

        edited = bank.edit(
            alice, memory_id=saved.id, request=EditRequest.parse({"content": " I live in Porto ", "tags": ["city"]})
        )

        assert (edited.id, edited.created_at, edited.revision) == (saved.id, saved.created_at, 2)
        assert (edited.content, edited.tags) == ("I live in Porto", ("city",))
        assert edited.contexts == saved.contexts  # not named in the edit: kept as they were
        assert edited.updated_at > saved.updated_at
        assert bank.list(alice).memories == (edited,)
        page = bank.revisions(alice, memory_id=saved.id)
        assert page.memory == edited
        assert [(m.revision, m.content, m.tags) for m in page.revisions] == [
            (2, "I live in Porto", ("city",)),
            (1, "I live in Lisbon", ("home",)),
        ]
        assert page.revisions[1].contexts == saved.contexts
        assert page.next_cursor is None

    def test_an_edit_records_its_door_and_the_credential_never_a_secret(self, bank: MemoryBank, alice: User) -> None:
        saved = bank.save(alice, SaveRequest.parse({"content": "first words"}), door=Door.MCP)

        edited = bank.edit(
            alice, memory_id=saved.id, request=EditRequest.parse({"content": "second words"}), door=Door.PANEL
        )

        assert saved.written_by is not None
        assert saved.written_by.door is Door.MCP
        assert edited.written_by is not None
        assert edited.written_by.door is Door.PANEL
        history = bank.revisions(alice, memory_id=saved.id).revisions
        assert [m.written_by.door for m in history if m.written_by is not None] == [Door.PANEL, Door.MCP]

    def test_edited_memory_is_found_by_its_new_words_and_no_longer_by_the_old(
        self, bank: MemoryBank, alice: User
    ) -> None:
        _save(bank, alice, "unrelated note about gardening")
        memory_id = _save(bank, alice, "the team standup is on mondays", tags=["rituals"])

        bank.edit(
            alice, memory_id=memory_id, request=EditRequest.parse({"content": "the team standup moved to thursdays"})
        )

        assert _ids(bank, alice, "thursdays") == [memory_id]
        assert _ids(bank, alice, "mondays") == []
        assert _ids(bank, alice, "rituals") == [memory_id]  # tags not named in the edit still find it

    def test_an_edit_can_replace_the_tags_and_contexts(self, bank: MemoryBank, alice: User) -> None:
        memory_id = _save(bank, alice, "kettle descaling", tags=["home"], contexts=[{"snippet": "old snippet"}])

        edited = bank.edit(
            alice,
            memory_id=memory_id,
            request=EditRequest.parse(
                {"tags": [], "contexts": [{"snippet": "vinegar works", "conversation_id": "c7"}]}
            ),
        )

        assert edited.tags == ()
        assert [(c.snippet, c.memory_id) for c in edited.contexts] == [("vinegar works", memory_id)]
        assert edited.contexts[0].citation is not None
        assert edited.contexts[0].citation.conversation_id == "c7"
        assert bank.list(alice).memories[0].contexts == edited.contexts
        assert _ids(bank, alice, "vinegar") == [memory_id]

    def test_an_edit_that_changes_nothing_makes_no_revision(self, bank: MemoryBank, alice: User) -> None:
        saved = bank.save(alice, SaveRequest.parse({"content": "same words", "tags": ["t"]}))

        again = bank.edit(
            alice, memory_id=saved.id, request=EditRequest.parse({"content": "same words", "tags": ["t"]})
        )

        assert again == saved
        assert [m.revision for m in bank.revisions(alice, memory_id=saved.id).revisions] == [1]

    def test_an_edit_based_on_a_stale_revision_conflicts_and_writes_nothing(
        self, bank: MemoryBank, alice: User
    ) -> None:
        memory_id = _save(bank, alice, "version one")
        second = bank.edit(
            alice, memory_id=memory_id, request=EditRequest.parse({"content": "version two"}), if_match={1}
        )

        with pytest.raises(RevisionConflictError) as stale_header:
            bank.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "lost update"}), if_match={1})
        with pytest.raises(RevisionConflictError) as stale_body:
            bank.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "lost update", "revision": 1}))

        assert stale_header.value.current == stale_body.value.current == second
        assert bank.list(alice).memories == (second,)
        assert len(bank.revisions(alice, memory_id=memory_id).revisions) == 2

    def test_an_edit_naming_the_current_revision_is_applied(self, bank: MemoryBank, alice: User) -> None:
        memory_id = _save(bank, alice, "version one")

        edited = bank.edit(
            alice, memory_id=memory_id, request=EditRequest.parse({"content": "version two", "revision": 1})
        )
        after = bank.edit(
            alice, memory_id=memory_id, request=EditRequest.parse({"content": "version three"}), if_match={1, 2}
        )

        assert (edited.revision, after.revision, after.content) == (2, 3, "version three")

    def test_an_edit_of_someone_elses_memory_is_not_found_and_changes_nothing(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        bobs = bank.save(bob, SaveRequest.parse({"content": "bob's lighthouse"}))
        refusals = []
        for memory_id in (bobs.id, new_id(MEMORY_PREFIX), "mem_../../etc/passwd"):
            with pytest.raises(NotFoundError) as refused:
                bank.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "taken over"}))
            refusals.append(str(refused.value))
            with pytest.raises(NotFoundError) as unread:
                bank.revisions(alice, memory_id=memory_id)
            refusals.append(str(unread.value))

        assert len(set(refusals)) == 1
        assert bank.list(bob).memories == (bobs,)
        assert [m.revision for m in bank.revisions(bob, memory_id=bobs.id).revisions] == [1]

    def test_an_invalid_edit_is_refused_and_writes_nothing(self, bank: MemoryBank, alice: User) -> None:
        saved = bank.save(alice, SaveRequest.parse({"content": "bounded"}))
        bodies: list[object] = [
            {},
            {"content": ""},
            {"content": "x" * (limits.CONTENT.max + 1)},
            {"tags": [f"tag{n}" for n in range(limits.TAGS_MAX + 1)]},
            {"contexts": [{"snippet": ""}]},
            {"retired": True},
            {"content": "fine", "revision": 0},
            ["content"],
        ]
        for body in bodies:
            with pytest.raises(InvalidInputError):
                bank.edit(alice, memory_id=saved.id, request=JsonValue(body))

        assert bank.list(alice).memories == (saved,)

    def test_edit_needs_the_write_scope_and_history_the_read_scope(self, bank: MemoryBank, alice: User) -> None:
        memory_id = _save(bank, alice, "scoped")
        reader = User(user_id=alice.user_id, organization_id=alice.organization_id, scopes=frozenset({"mcp:read"}))
        writer = User(user_id=alice.user_id, organization_id=alice.organization_id, scopes=frozenset({"mcp:write"}))

        with pytest.raises(ForbiddenError):
            bank.edit(
                reader, memory_id=memory_id, request=JsonValue({"content": ""})
            )  # refused before the body is judged
        with pytest.raises(ForbiddenError):
            bank.revisions(writer, memory_id=memory_id)
        assert bank.revisions(reader, memory_id=memory_id).memory.content == "scoped"

    def test_revisions_page_newest_first_and_keep_only_the_last_ones(self, backend: Backend, alice: User) -> None:
        bank = bank_over(backend, RecordingEventSink())
        bank.revisions_kept = 3
        memory_id = _save(bank, alice, "version 1")
        for n in range(2, 7):
            bank.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": f"version {n}"}))

        first = bank.revisions(alice, memory_id=memory_id, limit=2)
        second = bank.revisions(alice, memory_id=memory_id, limit=2, cursor=first.next_cursor)

        # The current version, then the three kept earlier ones; the oldest two are gone.
        assert [m.content for m in first.revisions] == ["version 6", "version 5"]
        assert [m.content for m in second.revisions] == ["version 4", "version 3"]
        assert second.next_cursor is None
        with pytest.raises(InvalidInputError):
            bank.revisions(alice, memory_id=memory_id, cursor="not-a-cursor")
        with pytest.raises(InvalidInputError):
            bank.revisions(alice, memory_id=memory_id, limit=limits.REVISIONS_LIMIT.max + 1)

    def test_a_save_that_supersedes_retires_the_old_memory_from_search_and_lists(
        self, bank: MemoryBank, alice: User
    ) -> None:
        old = bank.save(alice, SaveRequest.parse({"content": "my office is in building A"}))
        other = _save(bank, alice, "the office coffee machine is broken")

        new = bank.save(alice, SaveRequest.parse({"content": "my office moved to building C", "supersedes": [old.id]}))

        assert set(_ids(bank, alice, "office")) == {new.id, other}
        assert old.id not in _ids(bank, alice, "building")
        assert [m.id for m in bank.list(alice).memories] == [new.id, other]
        everything = bank.list(alice, include=INCLUDE_RETIRED).memories
        assert [m.id for m in everything] == [new.id, other, old.id]
        retired = bank.revisions(alice, memory_id=old.id).memory
        assert (retired.retired_by, retired.revision, retired.content) == (new.id, 2, old.content)
        with pytest.raises(InvalidInputError):
            bank.list(alice, include="everything")

    def test_a_retired_memory_restored_comes_back_into_search_and_lists(self, bank: MemoryBank, alice: User) -> None:
        old = _save(bank, alice, "the wifi password hint is the dog's name")
        new = _save(bank, alice, "the wifi hint is now the cat's name", supersedes=[old])

        restored = bank.edit(alice, memory_id=old, request=EditRequest.parse({"retired": False}))

        assert (restored.retired_by, restored.revision) == (None, 3)
        assert set(_ids(bank, alice, "wifi hint")) == {old, new}
        assert {m.id for m in bank.list(alice).memories} == {old, new}

    def test_supersedes_naming_a_memory_that_is_not_the_callers_saves_nothing(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        mine = _save(bank, alice, "kept as it is")
        bobs = _save(bank, bob, "bob's")
        messages = []
        for stranger in (bobs, new_id(MEMORY_PREFIX), "not-an-id"):
            with pytest.raises(NotFoundError) as refused:
                bank.save(alice, SaveRequest.parse({"content": "replacement", "supersedes": [mine, stranger]}))
            messages.append(str(refused.value))

        assert len(set(messages)) == 1
        assert [m.id for m in bank.list(alice, include=INCLUDE_RETIRED).memories] == [mine]
        assert bank.revisions(alice, memory_id=mine).memory.revision == 1
        assert bank.usage(alice).usage.memories == 1

    def test_supersedes_is_bounded(self, bank: MemoryBank, alice: User) -> None:
        too_many = [new_id(MEMORY_PREFIX) for _ in range(limits.SUPERSEDES_MAX + 1)]
        with pytest.raises(InvalidInputError):
            bank.save(alice, SaveRequest.parse({"content": "x", "supersedes": too_many}))
        with pytest.raises(InvalidInputError):
            bank.save(alice, SaveRequest.parse({"content": "x", "supersedes": "mem_single"}))

    def test_delete_removes_the_memory_with_every_revision(self, backend: Backend, alice: User) -> None:
        bank = bank_over(backend)
        memory_id = _save(bank, alice, "version 1")
        bank.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "version 2"}))

        bank.delete(alice, memory_id=memory_id)

        with pytest.raises(NotFoundError):
            bank.revisions(alice, memory_id=memory_id)
        assert backend.store.revisions(user_id=alice.user_id, memory_id=memory_id, limit=10, before=None) == []

    def test_delete_all_and_export_include_retired_memories(self, bank: MemoryBank, alice: User) -> None:
        old = _save(bank, alice, "old fact")
        new = _save(bank, alice, "new fact", supersedes=[old])

        exported = list(bank.export(alice))
        assert [line.memory.id for line in exported] == [new, old]
        assert [version.revision for version in exported[1].revisions] == [1]
        batch = bank.delete_batch(alice, DeleteAll(confirm=DELETE_ALL_CONFIRMATION))
        assert (batch.deleted, batch.remaining) == (2, 0)

    def test_usage_follows_an_edit_and_an_edit_over_the_quota_writes_nothing(
        self, backend: Backend, alice: User
    ) -> None:
        bank = bank_over(backend)
        bank.default_quota = Quota(max_memories=5, max_characters=20)
        memory_id = _save(bank, alice, "0123456789")

        bank.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "01234"}))
        assert bank.usage(alice).usage.characters == 5
        with pytest.raises(PermissionError):
            bank.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "x" * 21}))

        assert bank.list(alice).memories[0].content == "01234"
        assert bank.usage(alice).usage.characters == 5

    def test_similar_names_the_near_duplicate_and_nothing_for_an_unrelated_save(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        near = _near_duplicate_of_a_dentist_note(bank, alice, bob)

        saved = bank.save(alice, SaveRequest.parse({"content": "my dentist appointment is now on tuesday at ten"}))
        unrelated = bank.save(alice, SaveRequest.parse({"content": "quartz crystals grow slowly in caves"}))

        assert [result.memory.id for result in bank.similar(alice, saved)] == [near]
        assert bank.similar(alice, unrelated) == []
        assert len(bank.similar(alice, saved)) <= limits.SIMILAR_MAX

    def test_similar_asked_in_the_saves_unit_of_work_answers_as_asked_alone(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        near = _near_duplicate_of_a_dentist_note(bank, alice, bob)

        # As a facade answers a save: the save, then its look-up, in the request's one unit of work (storage may
        # read the look-up's rows ahead, in the save's own round trips).
        answers = []
        for text in ("my dentist appointment is now on tuesday at ten", "quartz crystals grow slowly in caves"):
            with bank.unit_of_work():
                saved = bank.save(alice, SaveRequest.parse({"content": text}))
                together = bank.similar(alice, saved)
            answers.append((together, bank.similar(alice, saved)))

        (found, found_alone), (unrelated, unrelated_alone) = answers
        assert [result.memory.id for result in found] == [near]
        assert [(r.memory, r.score, r.match) for r in found] == [(r.memory, r.score, r.match) for r in found_alone]
        assert unrelated == unrelated_alone == []

    def test_similar_leaves_retired_memories_out(self, bank: MemoryBank, alice: User) -> None:
        old = _save(bank, alice, "the standup is at nine on mondays")
        replacing = bank.save(
            alice, SaveRequest.parse({"content": "the standup is at ten on mondays", "supersedes": [old]})
        )

        assert bank.similar(alice, replacing) == []

    def test_an_edit_request_parses_like_a_save(self) -> None:
        request = EditRequest.parse({"content": "  trimmed  ", "tags": ["a", "a", " b "], "retired": False})
        assert (request.content, request.tags, request.restore, request.contexts) == ("trimmed", ("a", "b"), True, None)
