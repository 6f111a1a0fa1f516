"""The unit of work's contract (`UnitOfWork`): one session per use case, and what it does not promise.

A unit is not a transaction around its block: each store call in it is atomic and committed when it
returns. Calls in one unit see each other's writes and other sessions see them at once; a call that
fails writes nothing and the unit carries on; a block that raises after a write keeps the write; a
unit inside another shares it; units in several threads at once each do their own work. Needs the
backend's `unit_of_work` (the default, `NoUnitOfWork`, passes: it is the in-memory adapters' unit).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from memorybank_core import Memory, Quota, QuotaExceededError, SaveRequest, Source, UnitOfWork, charged_characters
from memorybank_core.ids import CONTEXT_PREFIX, MEMORY_PREFIX, new_id
from memorybank_testing.backends import Backend
from memorybank_testing.principals import User

SAVED_AT = datetime(2026, 7, 2, 12, 0, 0, 123_456, tzinfo=UTC)


def a_memory(user: User, content: str = "a note in a unit of work", *, offset: int = 0) -> Memory:
    """A memory of `user` with one context, as the bank builds it."""
    request = SaveRequest.parse({"content": content, "contexts": [{"snippet": "why"}]})
    return request.to_memory(
        memory_id=new_id(MEMORY_PREFIX),
        user_id=user.user_id,
        org_id=user.organization_id,
        source=Source.CHAT,
        created_at=SAVED_AT + timedelta(milliseconds=offset),
        context_ids=[new_id(CONTEXT_PREFIX)],
    )


class _Abandoned(Exception):
    """Raised inside a unit of work by a test, after a write."""


class UnitOfWorkContract:
    """One session per use case: reads see writes, each call commits or writes nothing, nesting shares."""

    @pytest.fixture
    def unit(self, backend: Backend) -> UnitOfWork:
        return backend.unit_of_work

    def test_calls_in_one_unit_see_each_others_writes(self, backend: Backend, unit: UnitOfWork, alice: User) -> None:
        first, second = a_memory(alice), a_memory(alice, offset=1)
        store = backend.store
        with unit():
            store.add(user_id=alice.user_id, memory=first)
            assert store.get_many(user_id=alice.user_id, memory_ids=[first.id]) == {first.id: first}
            store.add(user_id=alice.user_id, memory=second)
            assert [m.id for m in store.list(user_id=alice.user_id, limit=5, after=None)] == [second.id, first.id]
            assert store.delete(user_id=alice.user_id, memory_id=first.id)
            assert store.get_many(user_id=alice.user_id, memory_ids=[first.id]) == {}
            assert store.usage(user_id=alice.user_id).memories == 1

        assert [m.id for m in store.list(user_id=alice.user_id, limit=5, after=None)] == [second.id]

    def test_a_write_is_seen_by_another_session_as_soon_as_its_call_returns(
        self, backend: Backend, unit: UnitOfWork, alice: User
    ) -> None:
        saved = a_memory(alice)
        seen: list[object] = []

        def look() -> None:
            with unit():
                seen.append(backend.store.get_many(user_id=alice.user_id, memory_ids=[saved.id]))

        with unit():
            backend.store.add(user_id=alice.user_id, memory=saved)
            other = threading.Thread(target=look)  # another thread: a session of its own
            other.start()
            other.join(timeout=30)

        assert seen == [{saved.id: saved}]

    def test_a_block_that_raises_after_a_write_keeps_the_write(
        self, backend: Backend, unit: UnitOfWork, alice: User
    ) -> None:
        saved = a_memory(alice)

        def abandon_after_the_write() -> None:
            with unit():
                backend.store.add(user_id=alice.user_id, memory=saved)
                raise _Abandoned

        with pytest.raises(_Abandoned):
            abandon_after_the_write()

        assert backend.store.get_many(user_id=alice.user_id, memory_ids=[saved.id]) == {saved.id: saved}
        with unit():  # the session the failed block held was given back: the next unit works
            assert backend.store.usage(user_id=alice.user_id).memories == 1

    def test_a_call_that_fails_writes_nothing_and_the_unit_carries_on(
        self, backend: Backend, unit: UnitOfWork, alice: User
    ) -> None:
        first, refused, last = a_memory(alice), a_memory(alice, offset=1), a_memory(alice, offset=2)
        one = Quota(max_memories=1, max_characters=10**6)
        two = Quota(max_memories=2, max_characters=10**6)

        with unit():
            backend.store.add(user_id=alice.user_id, memory=first, quota=one)
            with pytest.raises(QuotaExceededError):
                backend.store.add(user_id=alice.user_id, memory=refused, quota=one)
            backend.store.add(user_id=alice.user_id, memory=last, quota=two)

        stored = backend.store.get_many(user_id=alice.user_id, memory_ids=[first.id, refused.id, last.id])
        assert set(stored) == {first.id, last.id}
        usage = backend.store.usage(user_id=alice.user_id)
        assert (usage.memories, usage.characters) == (2, charged_characters(first) + charged_characters(last))

    def test_a_unit_inside_another_shares_it_and_the_outer_one_carries_on(
        self, backend: Backend, unit: UnitOfWork, alice: User
    ) -> None:
        inner, outer = a_memory(alice), a_memory(alice, offset=1)

        with unit():
            with unit():
                backend.store.add(user_id=alice.user_id, memory=inner)
            backend.store.add(user_id=alice.user_id, memory=outer)
            assert len(backend.store.get_many(user_id=alice.user_id, memory_ids=[inner.id, outer.id])) == 2

        assert backend.store.usage(user_id=alice.user_id).memories == 2

    def test_units_in_several_threads_at_once_each_do_their_own_work(self, backend: Backend, unit: UnitOfWork) -> None:
        users = [User() for _ in range(6)]
        barrier = threading.Barrier(len(users))
        failures: list[BaseException] = []

        def work(user: User) -> None:
            try:
                with unit():
                    barrier.wait(timeout=30)
                    for n in range(2):
                        backend.store.add(user_id=user.user_id, memory=a_memory(user, offset=n))
                    assert backend.store.usage(user_id=user.user_id).memories == 2
            except BaseException as error:  # reported below
                failures.append(error)

        threads = [threading.Thread(target=work, args=(user,)) for user in users]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        assert failures == []
        assert [len(backend.store.list(user_id=u.user_id, limit=5, after=None)) for u in users] == [2] * len(users)
