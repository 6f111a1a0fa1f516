"""The memory bank's contract: every backend passes these unchanged.

They run through the use cases (`MemoryBank`), so they assert what a host relies on,
whatever stores the memories. Subclass `MemoryContract` in a test module (its name starting with
`Test`) and provide a `backend_factory` fixture; the fixtures come from `memorybank_testing.fixtures`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC

import pytest

from memorybank_core import (
    Citation,
    ForbiddenError,
    InvalidInputError,
    MemoryBank,
    NotFoundError,
    Origin,
    SaveRequest,
    Scope,
    Source,
    limits,
)
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import CONTEXT_PREFIX, MEMORY_PREFIX, is_id, new_id
from memorybank_core.requests import DELETE_ALL_CONFIRMATION, DeleteAll
from memorybank_testing.principals import User

HOSTILE_TEXTS = [
    "it's a \"quoted\" 'thing'",
    "100% of the_underscore% wildcards _ %",
    "back\\slash \\\\ and \\n literal",
    "'); DROP TABLE memory;-- robert",
    "tabs\tand\x01control\x1fcharacters\x7f kept",
    "emoji party 🎉🧠 memory",
    "東京でラーメンを食べた tokyo",
    "zero\u200bwidth and rtl \u202e text",
]


def save(bank: MemoryBank, user: User, content: str, **kwargs: object) -> str:
    return bank.save(user, SaveRequest.parse({"content": content, **kwargs})).id


class MemoryContract:
    """What a host relies on whatever stores the memories: saves, search, lists, deletes, owners, scopes."""

    def test_saved_memory_comes_back_exactly_as_stored(self, bank: MemoryBank, alice: User) -> None:
        request = {
            "content": "  User deploys into a Daytona sandbox  ",
            "tags": ["deploy", "infra"],
            "contexts": [
                {
                    "snippet": " we ship to daytona ",
                    "conversation_id": "c1",
                    "message_id": "m9",
                    "origin": Origin.ACTIVE_CONVERSATION.value,
                },
                {"snippet": "no citation here"},
            ],
        }
        saved = bank.save(alice, JsonValue(request))

        assert is_id(saved.id, prefix=MEMORY_PREFIX)
        assert saved.content == "User deploys into a Daytona sandbox"
        assert saved.scope is Scope.USER
        assert saved.source is Source.CHAT
        assert saved.user_id == alice.user_id
        assert saved.org_id == alice.organization_id
        assert saved.tags == ("deploy", "infra")
        assert [c.snippet for c in saved.contexts] == ["we ship to daytona", "no citation here"]
        assert saved.contexts[0].citation == Citation(conversation_id="c1", message_id="m9")
        assert saved.contexts[1].citation is None
        assert all(is_id(c.id, prefix=CONTEXT_PREFIX) and c.memory_id == saved.id for c in saved.contexts)
        assert saved.created_at.tzinfo is not None
        assert saved.created_at.utcoffset() == UTC.utcoffset(None)

        listed = bank.list(alice).memories
        assert listed == (saved,)
        found = bank.search(alice, query="Daytona")
        assert [r.memory for r in found] == [saved]

    def test_client_cannot_choose_scope_or_source(self, bank: MemoryBank, alice: User) -> None:
        memory = bank.save(alice, SaveRequest.parse({"content": "org secret plan", "scope": "org", "source": "modal"}))
        assert memory.scope is Scope.USER
        assert memory.source is Source.CHAT
        assert bank.list(alice).memories[0].scope is Scope.USER

    def test_server_may_declare_the_source(self, bank: MemoryBank, alice: User) -> None:
        memory = bank.save(alice, JsonValue({"content": "from the desktop modal"}), source=Source.MODAL)
        assert bank.list(alice).memories[0].source is Source.MODAL == memory.source

    @pytest.mark.parametrize("text", HOSTILE_TEXTS)
    def test_hostile_text_round_trips_and_is_searchable(self, bank: MemoryBank, alice: User, text: str) -> None:
        bank.save(alice, JsonValue({"content": "unrelated filler about gardening"}))
        memory_id = save(bank, alice, text, tags=[text[:64]], contexts=[{"snippet": text}])
        stored = bank.list(alice).memories[0]
        assert stored.id == memory_id
        assert stored.content == text.strip()
        assert stored.tags == (text[:64].strip(),)
        assert stored.contexts[0].snippet == text.strip()
        # Every backend tokenizes ASCII words of three or more letters.
        found = bank.search(alice, query=text)
        assert memory_id in [r.memory.id for r in found]

    def test_search_finds_a_distinctive_word_and_ranks_by_score(self, bank: MemoryBank, alice: User) -> None:
        for filler in ("groceries list for sunday", "the dentist appointment moved", "book club reads dune"):
            save(bank, alice, filler)
        strong = save(bank, alice, "kayak kayak trip planning: kayak rental in June")
        weak = save(bank, alice, "maybe a kayak later, mostly hiking and camping and cooking outdoors this summer")

        results = bank.search(alice, query="kayak")

        assert [r.memory.id for r in results] == [strong, weak]
        assert results[0].score >= results[1].score > 0

    def test_no_match_is_an_empty_result_not_an_error(self, bank: MemoryBank, alice: User) -> None:
        save(bank, alice, "the quarterly report is due friday")
        assert bank.search(alice, query="xylophone") == []
        assert bank.search(alice, query="!!! ??? ...") == []

    def test_search_respects_limit(self, bank: MemoryBank, alice: User) -> None:
        for i in range(7):
            save(bank, alice, f"note {i} about the lighthouse")
        save(bank, alice, "something else entirely")
        assert len(bank.search(alice, query="lighthouse", limit=3)) == 3
        assert len(bank.search(alice, query="lighthouse")) == 7

    def test_search_never_returns_another_users_memory(self, bank: MemoryBank, alice: User, bob: User) -> None:
        save(bank, bob, "bob's private kayak rental receipt")
        mine = save(bank, alice, "alice's kayak")
        save(bank, alice, "alice's unrelated gardening note")
        assert [r.memory.id for r in bank.search(alice, query="kayak rental receipt")] == [mine]
        assert all(r.memory.user_id == bob.user_id for r in bank.search(bob, query="kayak"))

    @pytest.mark.parametrize(("mine", "theirs"), [("Alice", "alice"), ("josé", "jose"), ("straße", "strasse")])
    def test_host_ids_that_differ_only_in_case_or_accents_are_different_people(
        self, bank: MemoryBank, mine: str, theirs: str
    ) -> None:
        # Hosts bring their own user ids; the database must compare them byte for byte.
        me, them = User(user_id=mine), User(user_id=theirs)
        kept = save(bank, me, "my private kayak receipt")
        save(bank, them, "their private kayak receipt")

        assert [m.id for m in bank.list(me).memories] == [kept]
        assert [r.memory.id for r in bank.search(me, query="kayak receipt")] == [kept]
        with pytest.raises(NotFoundError):
            bank.delete(them, memory_id=kept)
        assert [m.id for m in bank.list(me).memories] == [kept]

    @pytest.mark.parametrize("user_id", ["bob ", " bob", "bob\n"])
    def test_a_host_id_with_surrounding_whitespace_is_refused(self, bank: MemoryBank, user_id: str) -> None:
        # MySQL ignores trailing spaces in comparisons: `bob ` would be `bob` there.
        with pytest.raises(ForbiddenError):
            bank.save(User(user_id=user_id), JsonValue({"content": "never stored"}))

    def test_list_is_newest_first_and_owner_scoped(self, bank: MemoryBank, alice: User, bob: User) -> None:
        first = save(bank, alice, "first")
        save(bank, bob, "bob's")
        second = save(bank, alice, "second")
        third = save(bank, alice, "third")
        assert [m.id for m in bank.list(alice).memories] == [third, second, first]
        assert [m.content for m in bank.list(bob).memories] == ["bob's"]

    def test_cursor_walk_returns_each_memory_once_despite_saves_and_deletes(
        self, bank: MemoryBank, alice: User
    ) -> None:
        ids = [save(bank, alice, f"memory number {i}") for i in range(10)]
        first = bank.list(alice, limit=4)
        assert [m.id for m in first.memories] == ids[::-1][:4]
        assert first.next_cursor is not None

        save(bank, alice, "saved between pages")  # newer than the cursor: belongs to an earlier page
        bank.delete(alice, memory_id=ids[0])  # the oldest, not yet returned
        second = bank.list(alice, limit=4, cursor=first.next_cursor)
        assert second.next_cursor is not None
        third = bank.list(alice, limit=4, cursor=second.next_cursor)

        walked = [m.id for page in (first, second, third) for m in page.memories]
        assert walked == ids[::-1][:9]
        assert third.next_cursor is None

    def test_last_full_page_has_no_next_cursor(self, bank: MemoryBank, alice: User) -> None:
        for i in range(3):
            save(bank, alice, f"m{i}")
        page = bank.list(alice, limit=3)
        assert len(page.memories) == 3
        assert page.next_cursor is None
        assert bank.list(alice).next_cursor is None

    def test_empty_bank_lists_nothing(self, bank: MemoryBank, alice: User) -> None:
        page = bank.list(alice)
        assert page.memories == ()
        assert page.next_cursor is None

    def test_delete_removes_memory_and_contexts_everywhere(self, bank: MemoryBank, alice: User) -> None:
        keep = save(bank, alice, "keep this harbor note")
        gone = save(bank, alice, "forget this harbor note", contexts=[{"snippet": "harbor snippet"}] * 3)
        bank.delete(alice, memory_id=gone)
        assert [m.id for m in bank.list(alice).memories] == [keep]
        assert [r.memory.id for r in bank.search(alice, query="harbor")] == [keep]
        with pytest.raises(NotFoundError):
            bank.delete(alice, memory_id=gone)

    def test_delete_of_someone_elses_memory_reports_not_found_and_keeps_it(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        bobs = save(bank, bob, "bob's memory")
        with pytest.raises(NotFoundError) as not_yours:
            bank.delete(alice, memory_id=bobs)
        with pytest.raises(NotFoundError) as never_existed:
            bank.delete(alice, memory_id=new_id(MEMORY_PREFIX))
        with pytest.raises(NotFoundError) as malformed:
            bank.delete(alice, memory_id="mem_../../etc/passwd")
        assert str(not_yours.value) == str(never_existed.value) == str(malformed.value)
        assert [m.id for m in bank.list(bob).memories] == [bobs]

    def test_same_organization_does_not_share_memories(self, bank: MemoryBank, alice: User) -> None:
        colleague = User(organization_id=alice.organization_id)
        save(bank, alice, "alice's lighthouse")
        assert bank.list(colleague).memories == ()
        assert bank.search(colleague, query="lighthouse") == []

    def test_user_recalls_memories_across_organizations(self, bank: MemoryBank, alice: User) -> None:
        elsewhere = User(user_id=alice.user_id)
        saved = save(bank, alice, "cross-org lighthouse")
        assert [r.memory.id for r in bank.search(elsewhere, query="lighthouse")] == [saved]

    @pytest.mark.parametrize(
        ("scopes", "allowed"),
        [
            (frozenset(), set()),
            (frozenset({"mcp:read"}), {"search", "list"}),
            (frozenset({"mcp:write"}), {"save", "delete"}),
        ],
    )
    def test_each_operation_requires_its_scope(
        self, bank: MemoryBank, alice: User, scopes: frozenset[str], allowed: set[str]
    ) -> None:
        existing = save(bank, alice, "scoped lighthouse")
        limited = User(user_id=alice.user_id, organization_id=alice.organization_id, scopes=scopes)
        operations: dict[str, Callable[[], object]] = {
            "save": lambda: bank.save(limited, JsonValue({"content": "x"})),
            "search": lambda: bank.search(limited, query="lighthouse"),
            "list": lambda: bank.list(limited),
            "delete": lambda: bank.delete(limited, memory_id=existing),
        }
        for name, run in operations.items():
            if name in allowed:
                run()
            else:
                with pytest.raises(ForbiddenError):
                    run()

    def test_invalid_save_writes_nothing(self, bank: MemoryBank, alice: User) -> None:
        with pytest.raises(InvalidInputError):
            bank.save(alice, SaveRequest.parse({"content": "ok", "contexts": [{"snippet": "ok"}, {"snippet": ""}]}))
        assert bank.list(alice).memories == ()

    def test_a_caller_without_write_scope_is_refused_before_its_body_is_judged(
        self, bank: MemoryBank, alice: User
    ) -> None:
        reader = User(user_id=alice.user_id, organization_id=alice.organization_id, scopes=frozenset({"mcp:read"}))
        with pytest.raises(ForbiddenError):
            bank.save(reader, JsonValue({"content": ""}))
        saved = bank.save(alice, JsonValue({"content": " from a JSON body ", "scope": "org"}))
        assert (saved.content, saved.scope) == ("from a JSON body", Scope.USER)

    def test_usage_counts_only_the_callers_memories_against_their_quota(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        save(bank, alice, "abc", tags=["de"], contexts=[{"snippet": "fg"}])
        save(bank, bob, "Bob's memory is not Alice's")

        report = bank.usage(alice)

        assert (report.usage.memories, report.usage.characters) == (1, 7)
        assert report.quota == bank.default_quota
        assert bank.usage(bob).usage.memories == 1

    def test_export_yields_every_memory_once_newest_first_across_pages(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        saved = [save(bank, alice, f"memory {n}") for n in range(limits.EXPORT_PAGE + 3)]
        save(bank, bob, "Bob's")

        exported = [line.memory.id for line in bank.export(alice)]

        assert exported == list(reversed(saved))

    def test_delete_batch_removes_at_most_its_limit_and_only_the_callers(
        self, bank: MemoryBank, alice: User, bob: User
    ) -> None:
        for n in range(3):
            save(bank, alice, f"alice {n}")
        bobs = save(bank, bob, "Bob keeps this")

        first = bank.delete_batch(alice, DeleteAll(confirm=DELETE_ALL_CONFIRMATION, limit=2))
        second = bank.delete_batch(alice, DeleteAll(confirm=DELETE_ALL_CONFIRMATION, limit=2))

        assert (first.deleted, first.remaining, second.deleted, second.remaining) == (2, 1, 1, 0)
        assert bank.list(alice).memories == ()
        assert bank.search(alice, query="alice") == []
        assert [m.id for m in bank.list(bob).memories] == [bobs]

    def test_delete_batch_without_the_confirmation_deletes_nothing(self, bank: MemoryBank, alice: User) -> None:
        save(bank, alice, "kept")

        with pytest.raises(InvalidInputError) as refused:
            bank.delete_batch(alice, JsonValue({"confirm": "yes", "limit": 0}))

        assert [p.path for p in refused.value.problems] == ["confirm", "limit"]
        assert len(bank.list(alice).memories) == 1

    def test_the_account_use_cases_need_their_scopes(self, bank: MemoryBank) -> None:
        reader = User(scopes=frozenset({"mcp:read"}))
        nobody = User(scopes=frozenset())

        with pytest.raises(ForbiddenError):
            bank.delete_batch(reader, DeleteAll(confirm=DELETE_ALL_CONFIRMATION))
        with pytest.raises(ForbiddenError):
            bank.usage(nobody)
        with pytest.raises(ForbiddenError):
            bank.export(nobody)  # refused at the call, before any memory is read
