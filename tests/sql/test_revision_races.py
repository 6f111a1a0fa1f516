"""Changes racing on MariaDB: two edits of one version (exactly one lands, the other is a 412 and nothing is
lost), and an edit against a delete (whichever wins, no revision outlives its memory).

A barrier in the store holds each racer until all of them have read the memory and reached their write, so
the database's own locking decides: the conditional update of an edit waits on the row the other holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import pytest
import sqlalchemy as sa

from adapters_mysql import SqlStorage
from adapters_mysql.schema import memory_revision
from memorybank_core import (
    EditRequest,
    ListPosition,
    Memory,
    MemoryBank,
    MemoryChange,
    MemoryStore,
    NotFoundError,
    Quota,
    RevisionConflictError,
    SaveRequest,
    Usage,
)
from tests.conftest import User
from tests.sql.backends import bank_on

pytestmark = pytest.mark.mysql

ROUNDS = 10


class RacingStore(MemoryStore):
    """The real store, whose writes first wait for every racer to reach theirs."""

    def __init__(self, store: MemoryStore, racers: int) -> None:
        self._store = store
        self.barrier = threading.Barrier(racers, timeout=30)

    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        self._store.add(user_id=user_id, memory=memory, quota=quota, retiring=retiring)

    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        return self._store.get_many(user_id=user_id, memory_ids=memory_ids)

    def list(
        self, *, user_id: str, limit: int, after: ListPosition | None, include_retired: bool = False
    ) -> Sequence[Memory]:
        return self._store.list(user_id=user_id, limit=limit, after=after, include_retired=include_retired)

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        self.barrier.wait()
        return self._store.delete(user_id=user_id, memory_id=memory_id)

    def revise(self, *, user_id: str, change: MemoryChange, quota: Quota | None = None) -> bool:
        self.barrier.wait()
        return self._store.revise(user_id=user_id, change=change, quota=quota)

    def revisions(self, *, user_id: str, memory_id: str, limit: int, before: int | None) -> Sequence[Memory]:
        return self._store.revisions(user_id=user_id, memory_id=memory_id, limit=limit, before=before)

    def usage(self, *, user_id: str) -> Usage:
        return self._store.usage(user_id=user_id)


def _banks(storage: SqlStorage, racers: int) -> tuple[MemoryBank, MemoryBank]:
    return bank_on(storage), bank_on(storage, store=RacingStore(storage.store, racers))


def _race(*calls: Callable[[], object]) -> list[str]:
    outcomes: list[str] = []
    lock = threading.Lock()

    def run(call: Callable[[], object]) -> None:
        try:
            call()
            outcome = "done"
        except RevisionConflictError:
            outcome = "conflict"
        except NotFoundError:
            outcome = "not found"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(outcomes)


def test_two_edits_of_one_version_land_once_and_the_other_is_a_conflict(mysql_storage: SqlStorage) -> None:
    plain, racing = _banks(mysql_storage, racers=2)
    alice = User()
    for _ in range(ROUNDS):
        memory_id = plain.save(alice, SaveRequest.parse({"content": "the first version"})).id

        outcomes = _race(
            partial(
                racing.edit, alice, memory_id=memory_id, request=EditRequest.parse({"content": "edit A"}), if_match={1}
            ),
            partial(
                racing.edit, alice, memory_id=memory_id, request=EditRequest.parse({"content": "edit B"}), if_match={1}
            ),
        )

        assert outcomes == ["conflict", "done"]
        page = plain.revisions(alice, memory_id=memory_id)
        assert page.memory.revision == 2
        assert page.memory.content in {"edit A", "edit B"}
        assert [(m.revision, m.content) for m in page.revisions[1:]] == [(1, "the first version")]


def test_two_edits_without_if_match_both_land_one_after_the_other(mysql_storage: SqlStorage) -> None:
    plain, racing = _banks(mysql_storage, racers=2)
    alice = User()
    memory_id = plain.save(alice, SaveRequest.parse({"content": "the first version"})).id
    racing_store = racing._store
    assert isinstance(racing_store, RacingStore)
    # The loser's retry reads again and writes alone: it must not wait for a second racer.
    racing_store.barrier = threading.Barrier(1)
    plain_store = plain._store

    outcomes = _race(
        lambda: racing.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "edit A"})),
        lambda: racing.edit(alice, memory_id=memory_id, request=EditRequest.parse({"content": "edit B"})),
    )

    assert outcomes == ["done", "done"]
    assert plain_store.get_many(user_id=alice.user_id, memory_ids=[memory_id])[memory_id].revision == 3


def test_an_edit_racing_a_delete_leaves_no_orphan_revision(mysql_storage: SqlStorage) -> None:
    plain, racing = _banks(mysql_storage, racers=2)
    alice = User()
    seen: set[tuple[str, ...]] = set()
    for _ in range(ROUNDS):
        memory_id = plain.save(alice, SaveRequest.parse({"content": "about to go"})).id

        outcomes = _race(
            partial(
                racing.edit, alice, memory_id=memory_id, request=EditRequest.parse({"content": "edited as it goes"})
            ),
            partial(racing.delete, alice, memory_id=memory_id),
        )

        seen.add(tuple(outcomes))
        assert outcomes in (["done", "done"], ["done", "not found"])
        with mysql_storage.engine.connect() as connection:
            left = connection.execute(
                sa.select(sa.func.count()).where(memory_revision.c.memory_id == memory_id)
            ).scalar_one()
        assert left == 0
        with pytest.raises(NotFoundError):
            plain.revisions(alice, memory_id=memory_id)
    assert seen  # the outcomes the rounds took, for the failure message
