"""Safe retries: an interrupted save that landed is a success and never a second row; conflicts retry."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa

from adapters_mysql import SqlStorage
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.retrying import Failure, ResilientMemoryStore, ResilientTokenStore, classify, retrying
from adapters_mysql.token_store import SqlTokenStore
from memorybank_core import Memory, MemoryChange, Quota, UnavailableError
from memorybank_core.ids import TOKEN_PREFIX, new_id
from memorybank_testing.token_contract import START, a_token
from tests.sql.memories import make_memory, new_user
from tests.sql.test_store import rows_of

LOST_DURING_COMMIT = 2013
CERTIFICATION_CONFLICT = 1213


def driver_failure(code: int) -> UnavailableError:
    """The error the store raises when the driver fails with MySQL error `code`."""
    cause = sa.exc.OperationalError("COMMIT", {}, Exception(code, "injected"))
    error = UnavailableError(f"the database is unavailable during save (driver error {code})")
    error.__cause__ = cause
    return error


class FlakyStore(SqlMemoryStore):
    """A real store whose next writes fail as scripted: before or after the real write runs."""

    def __init__(self, storage: SqlStorage) -> None:
        super().__init__(storage.engine, storage.indexer)
        self.script: list[tuple[int, bool]] = []
        self.writes = 0

    def _fail_or_run(self, write: Callable[[], object]) -> object:
        self.writes += 1
        if not self.script:
            return write()
        code, landed = self.script.pop(0)
        if landed:
            write()
        raise driver_failure(code)

    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        self._fail_or_run(
            lambda: super(FlakyStore, self).add(user_id=user_id, memory=memory, quota=quota, retiring=retiring)
        )

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        return bool(self._fail_or_run(lambda: super(FlakyStore, self).delete(user_id=user_id, memory_id=memory_id)))


class FlakyTokens(SqlTokenStore):
    """A real token store whose next revokes fail as scripted: before or after the real revoke runs."""

    def __init__(self, storage: SqlStorage) -> None:
        super().__init__(storage.engine)
        self.script: list[tuple[int, bool]] = []

    def revoke(self, token_id: str, *, at: datetime) -> bool:
        if not self.script:
            return super().revoke(token_id, at=at)
        code, landed = self.script.pop(0)
        if landed:
            super().revoke(token_id, at=at)
        raise driver_failure(code)


@pytest.fixture
def flaky(storage: SqlStorage) -> FlakyStore:
    return FlakyStore(storage)


def test_a_save_whose_commit_landed_before_the_connection_died_is_reported_saved_once(
    storage: SqlStorage, flaky: FlakyStore
) -> None:
    owner = new_user()
    memory = make_memory(owner, snippets=("one", "two"))
    flaky.script = [(LOST_DURING_COMMIT, True)]

    ResilientMemoryStore(flaky).add(user_id=owner, memory=memory)

    assert rows_of(storage, owner) == (1, 2)
    assert flaky.writes == 1, "the landed save must be found by id, not written again"


def test_a_save_whose_connection_died_before_commit_is_written_by_the_retry(
    storage: SqlStorage, flaky: FlakyStore
) -> None:
    owner = new_user()
    memory = make_memory(owner, snippets=("one",))
    flaky.script = [(LOST_DURING_COMMIT, False), (LOST_DURING_COMMIT, False)]

    ResilientMemoryStore(flaky).add(user_id=owner, memory=memory)

    assert rows_of(storage, owner) == (1, 1)
    assert flaky.writes == 3


def test_a_certification_conflict_is_retried(storage: SqlStorage, flaky: FlakyStore) -> None:
    owner = new_user()
    flaky.script = [(CERTIFICATION_CONFLICT, False)]

    ResilientMemoryStore(flaky).add(user_id=owner, memory=make_memory(owner))

    assert rows_of(storage, owner) == (1, 1)


def test_a_delete_whose_commit_landed_is_reported_deleted(storage: SqlStorage, flaky: FlakyStore) -> None:
    owner = new_user()
    memory = make_memory(owner)
    storage.store.add(user_id=owner, memory=memory)
    flaky.script = [(LOST_DURING_COMMIT, True)]

    assert ResilientMemoryStore(flaky).delete(user_id=owner, memory_id=memory.id) is True
    assert rows_of(storage, owner) == (0, 0)


def test_a_delete_of_someone_elses_memory_without_interruption_still_finds_nothing(
    storage: SqlStorage, flaky: FlakyStore
) -> None:
    owner, stranger = new_user(), new_user()
    memory = make_memory(owner)
    storage.store.add(user_id=owner, memory=memory)

    assert ResilientMemoryStore(flaky).delete(user_id=stranger, memory_id=memory.id) is False
    assert rows_of(storage, owner) == (1, 1)


def test_a_failure_no_retry_can_fix_is_raised_at_once(storage: SqlStorage, flaky: FlakyStore) -> None:
    owner = new_user()
    flaky.script = [(1146, False)]  # no such table: retrying cannot help

    with pytest.raises(UnavailableError):
        ResilientMemoryStore(flaky).add(user_id=owner, memory=make_memory(owner))
    assert flaky.writes == 1
    assert rows_of(storage, owner) == (0, 0)


def test_retries_end_with_the_last_failure() -> None:
    attempts: list[bool] = []

    def attempt(unknown: bool) -> None:
        attempts.append(unknown)
        raise driver_failure(LOST_DURING_COMMIT)

    with pytest.raises(UnavailableError, match="2013"):
        retrying("save", attempt, pauses=(0, 0))
    assert attempts == [False, True, True]


@pytest.mark.parametrize(
    ("code", "failure"),
    [
        (2013, Failure.OUTCOME_UNKNOWN),
        (2006, Failure.OUTCOME_UNKNOWN),
        (1213, Failure.NOTHING_COMMITTED),
        (1047, Failure.NOTHING_COMMITTED),
        (2003, Failure.NOTHING_COMMITTED),
        (1146, None),
    ],
)
def test_failures_are_classified_by_what_they_say_about_the_commit(code: int, failure: Failure | None) -> None:
    assert classify(driver_failure(code)) is failure


def test_a_revoke_whose_commit_landed_before_the_connection_died_is_reported_revoked(storage: SqlStorage) -> None:
    tokens = FlakyTokens(storage)
    stored = a_token(new_user())
    tokens.add(stored)
    tokens.script = [(LOST_DURING_COMMIT, True)]
    at = START + timedelta(hours=1)

    assert ResilientTokenStore(tokens).revoke(stored.id, at=at) is True
    revoked = tokens.get(stored.id)
    assert revoked is not None
    assert revoked.revoked_at == at


def test_after_a_lost_connection_an_unknown_or_already_revoked_token_is_still_not_revoked_by_this_call(
    storage: SqlStorage,
) -> None:
    tokens = FlakyTokens(storage)
    earlier = a_token(new_user())
    tokens.add(earlier)
    tokens.revoke(earlier.id, at=START)
    resilient = ResilientTokenStore(tokens)

    tokens.script = [(LOST_DURING_COMMIT, False)]
    assert resilient.revoke(new_id(TOKEN_PREFIX), at=START + timedelta(hours=1)) is False
    tokens.script = [(LOST_DURING_COMMIT, False)]
    assert resilient.revoke(earlier.id, at=START + timedelta(hours=1)) is False
    again = tokens.get(earlier.id)
    assert again is not None
    assert again.revoked_at == START
