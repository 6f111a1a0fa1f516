"""The kept earlier versions of memories (`memory_revision`) at rest: sealed like the memory, bound to their row,
re-sealed by `encrypt` and `keys rotate`, and removed with their memory by delete and purge."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_crypto import new_key_ring
from adapters_mysql import SqlStorage
from adapters_mysql.schema import memory_revision
from memorybank_core import EditRequest, MemoryBank
from memorybank_core.offboarding import Offboarding
from tests.conftest import User
from tests.sql.test_sealing import CANARY, Place, bank_over, canary_body, found, place, place_ring, raw_rows, save

__all__ = ["place"]  # the fixture, imported to be used here


def raw_revisions(storage: SqlStorage) -> list[str]:
    """Every stored value of `memory_revision`, as text."""
    with storage.engine.connect() as connection:
        rows = connection.execute(sa.select(memory_revision)).all()
    return [str(value) for row in rows for value in row]


def _edited_canaries(bank: MemoryBank, alice: User) -> str:
    """A memory whose first two versions hold the canary everywhere, and whose current one holds none of it."""
    memory_id = save(bank, alice, f"The {CANARY} lives in eu-west-1", **canary_body("1"))
    bank.edit(
        alice,
        memory_id=memory_id,
        request=EditRequest.parse({"content": f"The {CANARY}two moved", "tags": [f"{CANARY}tag2"]}),
    )
    bank.edit(
        alice,
        memory_id=memory_id,
        request=EditRequest.parse({"content": "It moved to us-east-2", "tags": [], "contexts": []}),
    )
    return memory_id


def test_kept_revisions_hold_no_user_text_and_are_never_found_yet_read_back(place: Place) -> None:
    storage = place.open(new_key_ring())
    bank = bank_over(storage)
    alice = User()
    memory_id = _edited_canaries(bank, alice)

    assert len(raw_revisions(storage)) > 0
    assert not any(CANARY in value for value in [*raw_rows(storage), *raw_revisions(storage)])
    assert found(bank, alice, CANARY) == []
    assert found(bank, alice, f"{CANARY}two") == []
    assert found(bank, alice, f"{CANARY}snippet1") == []
    history = bank.revisions(alice, memory_id=memory_id).revisions
    assert [m.content for m in history] == [
        "It moved to us-east-2",
        f"The {CANARY}two moved",
        f"The {CANARY} lives in eu-west-1",
    ]
    assert history[2].contexts[0].snippet == f"the user said {CANARY}snippet1"
    assert history[2].contexts[0].citation is not None
    assert history[2].contexts[0].citation.conversation_id == f"{CANARY}conv1"


def test_the_sqlite_file_holds_no_canary_of_an_old_version(tmp_path: Path) -> None:
    sqlite = Place("sqlite", tmp_path)
    storage = sqlite.open(new_key_ring())
    bank = bank_over(storage)
    alice = User()
    for _ in range(10):
        _edited_canaries(bank, alice)
    sqlite.close()

    raw = b"".join(path.read_bytes() for path in tmp_path.iterdir() if path.name.startswith("bank.sqlite3"))
    assert len(raw) > 10_000
    assert CANARY.encode() not in raw


def test_a_revision_moved_to_another_memory_does_not_open_and_is_logged_by_id(
    place: Place, caplog: pytest.LogCaptureFixture
) -> None:
    storage = place.open(new_key_ring())
    bank = bank_over(storage)
    alice = User()
    first = _edited_canaries(bank, alice)
    second = save(bank, alice, "another memory")
    bank.edit(alice, memory_id=second, request=EditRequest.parse({"content": "another memory, edited"}))
    with storage.engine.begin() as connection:
        body = connection.execute(
            sa.select(memory_revision.c.body).where(
                memory_revision.c.memory_id == first, memory_revision.c.revision == 1
            )
        ).scalar_one()
        connection.execute(
            memory_revision.update()
            .where(memory_revision.c.memory_id == second, memory_revision.c.revision == 1)
            .values(body=body)
        )

    with caplog.at_level(logging.WARNING, logger="memorybank.storage"):
        history = bank.revisions(alice, memory_id=second).revisions

    assert [m.revision for m in history] == [2]
    assert f"revision 1 of memory {second} does not open" in caplog.text
    assert CANARY not in caplog.text


def test_encrypt_and_keys_rotate_reseal_kept_revisions_and_free_the_old_key(place: Place) -> None:
    plaintext = bank_over(place.open(None))
    alice = User()
    memory_id = _edited_canaries(plaintext, alice)

    ring = new_key_ring()
    storage = place.open(ring)
    assert storage.reindex().broken_revisions == 0
    assert not any(CANARY in value for value in raw_revisions(storage))
    with storage.engine.connect() as connection:
        states = set(connection.execute(sa.select(memory_revision.c.seal_state)).scalars())
    assert states == {storage.codec.state}

    rotated = ring.with_new_primary(new_index=True)
    storage = place.open(rotated)
    storage.reindex()
    with storage.engine.connect() as connection:
        states = set(connection.execute(sa.select(memory_revision.c.seal_state)).scalars())
    assert states == {storage.codec.state}
    # Nothing needs the first key any more: the ring may drop it, and every version still opens.
    after = bank_over(place.open(place_ring(storage).without(ring.primary)))
    history = after.revisions(alice, memory_id=memory_id).revisions
    assert [m.revision for m in history] == [3, 2, 1]
    assert history[2].content == f"The {CANARY} lives in eu-west-1"


def test_delete_and_purge_leave_no_revision(place: Place) -> None:
    storage = place.open(new_key_ring())
    bank = bank_over(storage)
    alice, bob = User(), User()
    deleted = _edited_canaries(bank, alice)
    _edited_canaries(bank, alice)
    kept = _edited_canaries(bank, bob)

    bank.delete(alice, memory_id=deleted)
    with storage.engine.connect() as connection:
        owners = connection.execute(sa.select(memory_revision.c.user_id, memory_revision.c.memory_id)).all()
    assert deleted not in {memory_id for _, memory_id in owners}
    if place.dialect == "sqlite":  # a purge runs per database; one dialect shows it
        Offboarding(store=storage.purge_store).purge_user(alice.user_id)
        with storage.engine.connect() as connection:
            left = connection.execute(sa.select(memory_revision.c.user_id, memory_revision.c.memory_id)).all()
        assert {row.user_id for row in left} == {bob.user_id}
        assert {row.memory_id for row in left} == {kept}
