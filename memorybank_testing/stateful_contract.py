"""Several users interleave saves, edits, supersedes, restores, searches, lists and deletes against a real
backend, checked step by step against a plain-Python model of what each user owns.

A hypothesis `RuleBasedStateMachine`. It is the slowest contract: a host may mark its subclass
(memorybank's own runs in its fuzz tier) or trim `stateful_settings` for a quick run.
"""

from __future__ import annotations

from datetime import datetime

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memorybank_core import EditRequest, InvalidInputError, MemoryStore, NotFoundError, SaveRequest, limits
from memorybank_core.bodies import JsonValue
from memorybank_core.configuration import BankSettings
from memorybank_core.ids import MEMORY_PREFIX, new_id
from memorybank_testing.backends import BackendFactory
from memorybank_testing.principals import User, bank_over

#: Words every engine indexes: four letters or more, no engine's stopword, no stem of another.
VOCABULARY = ["harbor", "falcon", "juniper", "kettle", "lantern", "meadow", "orchid", "quartz"]
USERS = 2
#: Earlier versions kept per memory in the machine's bank: small, so pruning runs too.
KEPT = 2


def contents() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5).map(" ".join)


@attrs.define
class Walk:
    """A paginated listing in progress, interleaved with other operations."""

    who: int
    page_size: int
    alive_at_start: set[str]
    cursor: str | None = None
    seen: list[str] = attrs.field(factory=list)
    deleted: set[str] = attrs.field(factory=set)
    """Deleted or retired during the walk: each may or may not come back."""
    restored: set[str] = attrs.field(factory=set)
    """Restored during the walk: each may or may not come back."""


class MemoryBankMachine(RuleBasedStateMachine):
    """The model: for each user, the ids they own with content and save time, which are retired, each one's
    revision, and every id ever deleted (none of which may keep a revision)."""

    def __init__(self, factory: BackendFactory) -> None:
        super().__init__()
        backend = factory.fresh()
        self.store: MemoryStore = backend.store
        self.bank = bank_over(backend, settings=BankSettings(revisions_kept=KEPT))
        self.users = [User() for _ in range(USERS)]
        self.owned: list[dict[str, tuple[str, datetime]]] = [{} for _ in range(USERS)]
        self.retired: list[set[str]] = [set() for _ in range(USERS)]
        self.revision: dict[str, int] = {}
        self.deleted: list[set[str]] = [set() for _ in range(USERS)]
        self.walk: Walk | None = None

    @initialize()
    def background(self) -> None:
        # Rows no query matches: table-wide statistics (InnoDB's idf) never see a word in every row.
        filler = User()
        for text in ("unrelated background text", "another unrelated row", "third unrelated row"):
            self.bank.save(filler, JsonValue({"content": text}))

    @rule(who=st.integers(0, USERS - 1), content=contents(), contexts=st.integers(0, 3))
    def save(self, who: int, content: str, contexts: int) -> None:
        request = SaveRequest.parse({"content": content, "contexts": [{"snippet": content}] * contexts})
        memory = self.bank.save(self.users[who], request)
        assert memory.user_id == self.users[who].user_id
        assert len(memory.contexts) == contexts
        self.owned[who][memory.id] = (memory.content, memory.created_at)
        self.revision[memory.id] = 1

    def _current(self, who: int) -> list[str]:
        return sorted(set(self.owned[who]) - self.retired[who])

    @precondition(lambda self: any(self.owned))
    @rule(data=st.data(), who=st.integers(0, USERS - 1), content=contents())
    def edit_any(self, data: st.DataObject, who: int, content: str) -> None:
        owner = data.draw(st.sampled_from([i for i in range(USERS) if self.owned[i]]))
        memory_id = data.draw(st.sampled_from(sorted(self.owned[owner])))
        if owner != who:
            with pytest.raises(NotFoundError):
                self.bank.edit(self.users[who], memory_id=memory_id, request=EditRequest.parse({"content": content}))
            return
        edited = self.bank.edit(self.users[who], memory_id=memory_id, request=EditRequest.parse({"content": content}))
        created_at = self.owned[who][memory_id][1]
        if content != self.owned[who][memory_id][0]:
            self.revision[memory_id] += 1
        assert (edited.content, edited.created_at, edited.revision) == (content, created_at, self.revision[memory_id])
        self.owned[who][memory_id] = (content, created_at)

    @precondition(lambda self: any(self._current(i) for i in range(USERS)))
    @rule(data=st.data(), content=contents())
    def save_superseding(self, data: st.DataObject, content: str) -> None:
        who = data.draw(st.sampled_from([i for i in range(USERS) if self._current(i)]))
        replaced = data.draw(st.sampled_from(self._current(who)))
        memory = self.bank.save(self.users[who], SaveRequest.parse({"content": content, "supersedes": [replaced]}))
        self.owned[who][memory.id] = (memory.content, memory.created_at)
        self.revision[memory.id] = 1
        self.retired[who].add(replaced)
        self.revision[replaced] += 1
        if self.walk is not None:
            self.walk.deleted.add(replaced)

    @precondition(lambda self: any(self.retired))
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        who = data.draw(st.sampled_from([i for i in range(USERS) if self.retired[i]]))
        memory_id = data.draw(st.sampled_from(sorted(self.retired[who])))
        restored = self.bank.edit(self.users[who], memory_id=memory_id, request=EditRequest.parse({"retired": False}))
        self.retired[who].discard(memory_id)
        self.revision[memory_id] += 1
        assert (restored.retired_by, restored.revision) == (None, self.revision[memory_id])
        if self.walk is not None:
            self.walk.restored.add(memory_id)

    @precondition(lambda self: any(self.owned))
    @rule(data=st.data(), who=st.integers(0, USERS - 1))
    def delete_any(self, data: st.DataObject, who: int) -> None:
        owner = data.draw(st.sampled_from([i for i in range(USERS) if self.owned[i]]))
        memory_id = data.draw(st.sampled_from(sorted(self.owned[owner])))
        if owner == who:
            self.bank.delete(self.users[who], memory_id=memory_id)
            del self.owned[owner][memory_id]
            self.retired[owner].discard(memory_id)
            self.deleted[owner].add(memory_id)
            if self.walk is not None:
                self.walk.deleted.add(memory_id)
        else:
            with pytest.raises(NotFoundError):
                self.bank.delete(self.users[who], memory_id=memory_id)

    @rule(who=st.integers(0, USERS - 1))
    def delete_unknown(self, who: int) -> None:
        with pytest.raises(NotFoundError):
            self.bank.delete(self.users[who], memory_id=new_id(MEMORY_PREFIX))

    @rule(
        who=st.integers(0, USERS - 1), word=st.sampled_from(VOCABULARY), limit=st.integers(1, limits.SEARCH_LIMIT.max)
    )
    def search(self, who: int, word: str, limit: int) -> None:
        results = self.bank.search(self.users[who], query=word, limit=limit)
        ids = [r.memory.id for r in results]
        assert set(ids) <= set(self.owned[who]), "search returned a memory the user does not own"
        assert len(ids) == len(set(ids)) <= limit
        scores = [r.score for r in results]
        assert all(s > 0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert not set(ids) & self.retired[who], "search returned a retired memory"
        containing = {
            i for i, (content, _) in self.owned[who].items() if word in content.split() and i not in self.retired[who]
        }
        assert set(ids) <= containing, "search returned a memory without the word"
        if len(containing) <= limit:
            assert set(ids) == containing, "search missed a memory holding the word"

    @precondition(lambda self: self.walk is None)
    @rule(who=st.integers(0, USERS - 1), page_size=st.integers(1, 4))
    def start_walk(self, who: int, page_size: int) -> None:
        self.walk = Walk(who=who, page_size=page_size, alive_at_start=set(self._current(who)))
        self.continue_walk()

    @precondition(lambda self: self.walk is not None)
    @rule()
    def continue_walk(self) -> None:
        walk = self.walk
        assert walk is not None
        page = self.bank.list(self.users[walk.who], limit=walk.page_size, cursor=walk.cursor)
        # A page may come back empty only when the memories after the cursor were deleted meanwhile.
        assert len(page.memories) <= walk.page_size
        walk.seen.extend(m.id for m in page.memories)
        # Also bounds the loop in teardown if a backend keeps handing out the same page.
        assert len(walk.seen) <= len(walk.alive_at_start | walk.restored), (
            "the walk returned more memories than there are"
        )
        walk.cursor = page.next_cursor
        if walk.cursor is not None:
            return
        # The walk is over: every memory that lived through it came back exactly once, newest first,
        # and memories saved during the walk (newer than any cursor) did not.
        self.walk = None
        owned = self.owned[walk.who]
        assert len(walk.seen) == len(set(walk.seen)), "a memory was returned twice"
        assert set(walk.seen) <= walk.alive_at_start | walk.restored, "a page held a memory it should not"
        assert walk.alive_at_start - walk.deleted <= set(walk.seen), "a memory was skipped"
        order = [(owned[i][1], i) for i in walk.seen if i in owned]
        assert order == sorted(order, reverse=True)

    def teardown(self) -> None:
        # Finish a walk the run left open, so every walk is checked to the end.
        while self.walk is not None:
            self.continue_walk()

    @invariant()
    def lists_match_the_model(self) -> None:
        for who, user in enumerate(self.users):
            listed = self.bank.list(user, limit=limits.LIST_LIMIT.max).memories
            expected = sorted(self._current(who), key=lambda i: (self.owned[who][i][1], i), reverse=True)
            assert [m.id for m in listed] == expected[: limits.LIST_LIMIT.max]
            assert all(m.revision == self.revision[m.id] for m in listed)

    @invariant()
    def no_revision_outlives_its_memory(self) -> None:
        for who, user in enumerate(self.users):
            for memory_id in self.deleted[who]:
                kept = self.store.revisions(user_id=user.user_id, memory_id=memory_id, limit=10, before=None)
                assert list(kept) == [], "a deleted memory left a revision behind"

    @invariant()
    def each_memory_keeps_its_last_versions(self) -> None:
        for who, user in enumerate(self.users):
            for memory_id in self.owned[who]:
                kept = self.store.revisions(user_id=user.user_id, memory_id=memory_id, limit=10, before=None)
                revision = self.revision[memory_id]
                assert [m.revision for m in kept] == list(range(revision - 1, max(0, revision - 1 - KEPT), -1))

    @rule(who=st.integers(0, USERS - 1), limit=st.sampled_from([0, -1, limits.SEARCH_LIMIT.max + 1]))
    def out_of_range_limit_is_rejected(self, who: int, limit: int) -> None:
        with pytest.raises(InvalidInputError):
            self.bank.search(self.users[who], query="harbor", limit=limit)


class StatefulContract:
    """Users interleaving operations never see each other, and every step matches the model."""

    #: Override in a subclass for a longer or a quicker run.
    stateful_settings = settings(
        max_examples=40, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )

    def test_users_interleaving_operations_never_see_each_other(self, backend_factory: BackendFactory) -> None:
        run_state_machine_as_test(
            lambda: MemoryBankMachine(backend_factory),  # type: ignore[arg-type]  # hypothesis accepts any factory
            settings=self.stateful_settings,
        )
