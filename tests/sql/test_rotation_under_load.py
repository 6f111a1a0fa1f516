"""`keys rotate` while clients save, search, list and delete: nothing lost, every read succeeds."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_crypto import AesGcmSealer, new_key_ring
from adapters_crypto.sealer import TOKEN_FORMAT
from adapters_mysql import SqlStorage
from adapters_mysql.schema import memory
from memorybank_core import MemoryBank, SaveRequest
from tests.conftest import User
from tests.mysql_server import ThrowawayDatabase
from tests.sql.backends import bank_on, storage_at
from tests.sql.conftest import DIALECTS

WORD = "rotationword"


def _ready(url: str, sealer: AesGcmSealer, *, first: bool, dialect: str) -> SqlStorage:
    storage = storage_at(url, sealer)
    if dialect == "sqlite":
        storage.initialize()
    elif first:
        storage.migrate()
    else:
        storage.check_ready()
    return storage


def _all_listed(bank: MemoryBank, user: User) -> set[str]:
    listed: set[str] = set()
    cursor = None
    while True:
        page = bank.list(user, limit=100, cursor=cursor)
        listed.update(item.id for item in page.memories)
        if page.next_cursor is None:
            return listed
        cursor = page.next_cursor


@pytest.mark.parametrize("new_index", [False, True], ids=["same index key", "new index key"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_rotation_under_load_loses_nothing_and_every_read_succeeds(
    dialect: str, new_index: bool, tmp_path: Path
) -> None:
    database = ThrowawayDatabase() if dialect == "mysql" else None
    url = database.url if database is not None else f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    first = new_key_ring()
    second = first.with_new_primary(new_index=new_index)
    users = [User() for _ in range(3)]
    opened: list[SqlStorage] = []
    try:
        old = _ready(url, AesGcmSealer(first), first=True, dialect=dialect)
        opened.append(old)
        old_bank = bank_on(old)
        kept: dict[str, set[str]] = {user.user_id: set() for user in users}
        for number in range(120):
            user = users[number % 3]
            saved = old_bank.save(user, SaveRequest.parse({"content": f"{WORD} old {number}"}))
            kept[user.user_id].add(saved.id)

        server = _ready(url, AesGcmSealer(second), first=False, dialect=dialect)
        rotator = _ready(url, AesGcmSealer(second), first=False, dialect=dialect)
        opened += [server, rotator]
        bank = bank_on(server)
        errors: list[BaseException] = []
        stop = threading.Event()
        rotating = threading.Event()
        during: list[int] = []

        def client(user: User) -> None:
            mine = kept[user.user_id]
            step = 0
            try:
                while not stop.is_set():
                    step += 1
                    saved = bank.save(user, SaveRequest.parse({"content": f"{WORD} new {step}"}))
                    mine.add(saved.id)
                    if step % 3 == 0:
                        victim = sorted(mine)[0]
                        mine.discard(victim)
                        bank.delete(user, memory_id=victim)
                    hits = {result.memory.id for result in bank.search(user, query=WORD, limit=50)}
                    # Only this thread changes this user's memories: every read must see all of them.
                    assert hits <= mine
                    # Complete too: a search overlapping a batch that rewrites tokens runs again
                    # (adapters_mysql.rewrite_fence) rather than miss that batch's rows.
                    assert len(hits) == min(50, len(mine))
                    assert _all_listed(bank, user) == mine
                    if rotating.is_set():
                        during.append(1)
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=client, args=(user,)) for user in users]
        for thread in threads:
            thread.start()
        rotating.set()
        # Paced between batches (each its own transaction), so the clients overlap many commits.
        report = rotator.reindex(batch_size=5, progress=lambda _count: time.sleep(0.02))
        rotating.clear()
        stop.set()
        for thread in threads:
            thread.join(timeout=60)

        assert errors == []
        assert report.broken == 0
        assert report.rewritten > 0  # clients deleted some old rows meanwhile; the states below cover the rest
        assert len(during) >= 3, "the clients did not overlap the rotation"
        with rotator.engine.connect() as connection:
            states = set(connection.execute(sa.select(memory.c.seal_state)).scalars())
        assert states == {f"{second.primary}:{second.index}:{TOKEN_FORMAT}"}
        final_ring = second.without(first.primary) if new_index else second
        after = _ready(url, AesGcmSealer(final_ring), first=False, dialect=dialect)
        opened.append(after)
        final = bank_on(after)
        for user in users:
            assert _all_listed(final, user) == kept[user.user_id]
            hits = {result.memory.id for result in final.search(user, query=WORD, limit=50)}
            assert hits <= kept[user.user_id]
            assert len(hits) == min(50, len(kept[user.user_id]))
    finally:
        for storage in opened:
            storage.close()
        if database is not None:
            database.drop()
