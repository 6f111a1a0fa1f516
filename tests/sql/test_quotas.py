"""Storage quotas on SQL: the usage ledger under concurrent first saves, refused saves, rows older than 0010.

On SQLite (a file, as served) and MariaDB; concurrent saves run in real threads, each on its own pooled
connection to the server. The race at the quota boundary is the shipped ControlsContract's (tests/contract).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import attrs
import pytest
import sqlalchemy as sa
from alembic import command

from adapters_crypto import AesGcmSealer, new_key_ring
from adapters_mysql import SqlStorage
from adapters_mysql.revisions import alembic_config
from adapters_mysql.schema import memory, memory_context, memory_usage
from adapters_mysql.seal_keys import register_primary
from adapters_mysql.sealed_rows import SealState
from adapters_mysql.usage import backfill_characters
from memorybank.settings import Settings
from memorybank_core import (
    Memory,
    MemoryBank,
    MemoryControls,
    Quota,
    QuotaExceededError,
    SubjectKind,
    UnavailableError,
    Usage,
    charged_characters,
)
from memorybank_core.bodies import JsonValue
from memorybank_core.configuration import BankSettings
from memorybank_search import OwnerIndexer
from tests.conftest import User
from tests.sql.backends import bank_on, storage_at
from tests.sql.memories import make_memory


def _bank(storage: SqlStorage, quota: Quota | None = None) -> MemoryBank:
    quota = quota or Quota()
    bank = BankSettings(quota_memories=quota.max_memories, quota_characters=quota.max_characters)
    return bank_on(storage, Settings.for_database("sqlite://", bank=bank))


def _stored(storage: SqlStorage, user_id: str) -> int:
    with storage.engine.connect() as connection:
        return int(connection.execute(sa.select(sa.func.count()).where(memory.c.user_id == user_id)).scalar_one())


def test_concurrent_first_saves_build_one_ledger_row(storage: SqlStorage) -> None:
    alice = User()
    bank = _bank(storage)
    threads = [threading.Thread(target=bank.save, args=(alice, JsonValue({"content": f"first {n}"}))) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert _stored(storage, alice.user_id) == 8
    assert storage.store.usage(user_id=alice.user_id).memories == 8


def test_operators_creating_the_same_control_at_once_all_succeed_and_leave_one(storage: SqlStorage) -> None:
    alice = User()
    controls = MemoryControls(controls=storage.controls, store=storage.store)
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def set_quota(n: int) -> None:
        barrier.wait(timeout=30)
        try:
            controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=100 + n)
        except BaseException as error:  # collected for the assertion below
            failures.append(error)

    threads = [threading.Thread(target=set_quota, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    [control] = controls.list()
    assert control.max_memories in range(100, 108)


def test_a_refused_save_leaves_no_row_behind_in_any_table(storage: SqlStorage) -> None:
    alice = User()
    bank = _bank(storage, Quota(max_memories=1))
    bank.save(alice, JsonValue({"content": "the only one", "contexts": [{"snippet": "why"}]}))
    with storage.engine.connect() as connection:
        before = {
            t: connection.execute(sa.select(sa.func.count()).select_from(t)).scalar()
            for t in (memory, memory_context, memory_usage)
        }
    with pytest.raises(QuotaExceededError):
        bank.save(alice, JsonValue({"content": "over", "contexts": [{"snippet": "refused"}]}))
    with storage.engine.connect() as connection:
        after = {
            t: connection.execute(sa.select(sa.func.count()).select_from(t)).scalar()
            for t in (memory, memory_context, memory_usage)
        }
    assert after == before


def test_a_missing_ledger_row_is_rebuilt_from_the_users_memories(storage: SqlStorage) -> None:
    alice = User()
    bank = _bank(storage, Quota(max_memories=3))
    saved = [bank.save(alice, JsonValue({"content": f"note {n}"})) for n in range(2)]
    with storage.engine.begin() as connection:
        connection.execute(memory_usage.delete())
    assert storage.store.usage(user_id=alice.user_id) == Usage(
        memories=2, characters=sum(charged_characters(m) for m in saved)
    )
    bank.save(alice, JsonValue({"content": "the third fits"}))
    with pytest.raises(QuotaExceededError):
        bank.save(alice, JsonValue({"content": "the fourth does not"}))


def test_migrate_counts_the_characters_of_memories_saved_before_revision_0010(new_database_url: str) -> None:
    sealer = AesGcmSealer(new_key_ring())
    storage = storage_at(new_database_url, sealer)
    try:
        _upgrade_to(storage, "0006")
        alice = User()
        old = make_memory(alice.user_id, "written under 0006", snippets=("a snippet",), tags=("tag",))
        with storage.engine.begin() as connection:
            connection.execute(memory.insert(), [_row_without_characters(storage, old)])
            # The key check a 0006 server registered when it first opened the database with this ring.
            register_primary(connection, sealer, policy="open")
        report = storage.migrate()
        assert report.measured == 1
        with storage.engine.connect() as connection:
            counted = connection.execute(sa.select(memory.c.characters).where(memory.c.id == old.id)).scalar()
        assert storage.store.inner.get_many(user_id=alice.user_id, memory_ids=[old.id])  # it opens
        assert counted == charged_characters(old) - len("a snippet") == len("written under 0006") + len("tag")
        assert storage.store.usage(user_id=alice.user_id) == Usage(memories=1, characters=counted)
        controls = MemoryControls(controls=storage.controls, store=storage.store)
        controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=1)
        with pytest.raises(QuotaExceededError):
            _bank(storage).save(alice, JsonValue({"content": "over"}))
    finally:
        storage.close()


def test_a_backfill_cut_short_leaves_no_ledger_undercounted(storage: SqlStorage) -> None:
    alice, bob = User(), User()
    bank = _bank(storage)
    bank.save(alice, JsonValue({"content": "measured before the cut"}))
    bank.save(bob, JsonValue({"content": "where the backfill stops"}))
    with storage.engine.begin() as connection:  # as if both were saved before revision 0010
        connection.execute(memory.update().values(characters=None))
        connection.execute(memory_usage.delete())
    # A save meanwhile builds Alice's ledger with her unmeasured memory counted as 0 characters.
    bank.save(alice, JsonValue({"content": "saved while unmeasured"}))
    inner = storage.store.inner

    def cut_at_bob(user_id: str, ids: list[str]) -> Mapping[str, Memory]:
        if user_id == bob.user_id:
            raise UnavailableError("the database went away during usage backfill")
        return inner.get_many(user_id=user_id, memory_ids=ids)

    with pytest.raises(UnavailableError):
        backfill_characters(storage.engine, cut_at_bob, batch_size=1)
    assert storage.measure_usage() == 1  # the rerun measures Bob's memory only

    expected = len("measured before the cut") + len("saved while unmeasured")
    assert storage.store.usage(user_id=alice.user_id) == Usage(memories=2, characters=expected)


def _upgrade_to(storage: SqlStorage, revision: str) -> None:
    with storage.engine.begin() as connection:
        command.upgrade(alembic_config(connection), revision)


def _row_without_characters(storage: SqlStorage, saved: Memory) -> dict[str, object]:
    # The row as 0006 code wrote it: sealed and indexed with unstamped (format 1) tokens and no
    # token authenticator (revision 0008 adds it: re-indexing rewrites the row), uncounted.
    row = storage.store.inner._memory_row(saved)
    row.pop("characters")
    row.pop("search_mac")
    # The columns of revisions 0015, 0016 and 0017.
    for later in ("revision", "retired_by", "written_via", "written_by", "author_id", "author_former_member"):
        row.pop(later)
    state = SealState.parse(str(row["seal_state"]))
    assert storage.sealer is not None
    original = storage.sealer.index_for(state.index_key, 1)
    assert original is not None
    row["search_terms"] = OwnerIndexer(blind_index=original).document(saved).search_terms
    row["seal_state"] = str(attrs.evolve(state, token_format=1))
    return row
