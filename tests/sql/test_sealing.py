"""Encryption at rest on SQLite and MariaDB: nothing readable stored, tampering fails closed,
the key ring is checked before serving, and `encrypt` / `keys rotate` work online.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from adapters_crypto import AesGcmSealer, KeyRing, new_key_ring
from adapters_crypto.sealer import TOKEN_FORMAT
from adapters_mysql import KeyRingError, SpiderSealingError, SqlStorage, open_storage
from adapters_mysql.schema import memory, memory_context, seal_key
from adapters_mysql.seal_keys import tighten
from adapters_mysql.sealed_rows import SealState
from memorybank.portability import export_user, import_lines
from memorybank_core import MemoryBank, SaveRequest, SealBinding, UnavailableError
from memorybank_search import OwnerIndexer
from tests.conftest import User
from tests.mysql_server import ThrowawayDatabase
from tests.sql.backends import bank_on, storage_at
from tests.sql.conftest import DIALECTS

CANARY = "zqxcanaryword"


class Place:
    """A database that can be opened several times, with different key rings."""

    def __init__(self, dialect: str, tmp_path: Path) -> None:
        self.dialect = dialect
        self._database = ThrowawayDatabase() if dialect == "mysql" else None
        self.path = tmp_path / "bank.sqlite3"
        self.url = self._database.url if self._database is not None else f"sqlite:///{self.path}"
        self._opened: list[SqlStorage] = []
        self._migrated = False

    def open(self, ring: KeyRing | None) -> SqlStorage:
        """Storage over this database with `ring` (None: plaintext), ready as `serve` makes it."""
        storage = storage_at(self.url, AesGcmSealer(ring) if ring is not None else None)
        self._opened.append(storage)
        if self.dialect == "sqlite":
            storage.initialize()
        elif not self._migrated:
            storage.migrate()
            self._migrated = True
        else:
            storage.check_ready()  # as `serve` does
        return storage

    def close(self) -> None:
        for storage in self._opened:
            storage.close()
        if self._database is not None:
            self._database.drop()


@pytest.fixture(params=DIALECTS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    opened = Place(request.param, tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def sealed(place: Place) -> tuple[SqlStorage, MemoryBank]:
    """A fresh sealed database of the parametrized dialect, and a bank over it."""
    storage = place.open(new_key_ring())
    return storage, bank_over(storage)


def bank_over(storage: SqlStorage) -> MemoryBank:
    return bank_on(storage)


def save(bank: MemoryBank, user: User, content: str, **extra: Any) -> str:
    body = {"content": content, **extra}
    return bank.save(user, SaveRequest.parse(body)).id


def canary_body(tag: str) -> dict[str, Any]:
    return {
        "tags": [f"{CANARY}tag{tag}"],
        "contexts": [
            {
                "snippet": f"the user said {CANARY}snippet{tag}",
                "conversation_id": f"{CANARY}conv{tag}",
                "message_id": f"{CANARY}msg{tag}",
            }
        ],
    }


def raw_rows(storage: SqlStorage) -> list[str]:
    """Every stored value of the memory tables, as text."""
    with storage.engine.connect() as connection:
        rows = [*connection.execute(sa.select(memory)).all(), *connection.execute(sa.select(memory_context)).all()]
    return [str(value) for row in rows for value in row]


def found(bank: MemoryBank, user: User, query: str) -> list[str]:
    return [result.memory.id for result in bank.search(user, query=query)]


# Nothing readable is stored


def test_sealed_rows_hold_no_user_text_yet_read_and_search_as_plaintext(place: Place) -> None:
    storage = place.open(new_key_ring())
    bank = bank_over(storage)
    alice = User()
    memory_id = save(bank, alice, f"The {CANARY} lives in eu-west-1", **canary_body("1"))

    assert not any(CANARY in value for value in raw_rows(storage))
    listed = bank.list(alice).memories[0]
    assert listed.content == f"The {CANARY} lives in eu-west-1"
    assert listed.tags == (f"{CANARY}tag1",)
    assert listed.contexts[0].snippet == f"the user said {CANARY}snippet1"
    assert listed.contexts[0].citation is not None
    assert listed.contexts[0].citation.message_id == f"{CANARY}msg1"
    assert found(bank, alice, CANARY) == [memory_id]
    assert found(bank, alice, f"{CANARY}snippet1") == [memory_id]


def test_the_sqlite_file_holds_no_canary(tmp_path: Path) -> None:
    sqlite = Place("sqlite", tmp_path)
    storage = sqlite.open(new_key_ring())
    bank = bank_over(storage)
    alice = User()
    for number in range(20):
        save(bank, alice, f"note {number}: {CANARY}{number} and {CANARY}", **canary_body(str(number)))
    assert len(found(bank, alice, CANARY)) == 20
    sqlite.close()

    files = [path for path in tmp_path.iterdir() if path.name.startswith("bank.sqlite3")]
    raw = b"".join(path.read_bytes() for path in files)
    assert len(raw) > 10_000
    assert CANARY.encode() not in raw
    assert CANARY.upper().encode() not in raw


def test_a_spider_head_with_a_key_ring_is_refused_at_startup(tmp_path: Path) -> None:
    # A sharded deployment cannot seal yet: refused with a message, never served half-sealed.
    sealer = AesGcmSealer(new_key_ring())
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'x.sqlite3'}")
    with pytest.raises(SpiderSealingError, match=r"not supported on a sharded \(Spider\) deployment"):
        SqlStorage(
            engine=engine,
            indexer=OwnerIndexer(blind_index=sealer.index),
            display_url="head",
            sealer=sealer,
            spider_head=True,
        )
    engine.dispose()


def test_an_indexer_without_the_sealers_blind_index_is_refused(tmp_path: Path) -> None:
    # Sealed text beside readable search tokens would defeat the point.
    with pytest.raises(ValueError, match="blind index"):
        open_storage(f"sqlite:///{tmp_path / 'x.sqlite3'}", indexer=OwnerIndexer(), sealer=AesGcmSealer(new_key_ring()))


# Tampering fails closed


def _tamper(storage: SqlStorage, statement: sa.Executable) -> None:
    with storage.engine.begin() as connection:
        connection.execute(statement)


def _content_of(storage: SqlStorage, memory_id: str) -> str:
    with storage.engine.connect() as connection:
        value: str = connection.execute(sa.select(memory.c.content).where(memory.c.id == memory_id)).scalar_one()
        return value


def _flipped(value: str) -> str:
    position = len(value) // 2
    return value[:position] + ("A" if value[position] != "A" else "B") + value[position + 1 :]


def _unavailable(bank: MemoryBank, user: User, memory_id: str, word: str) -> None:
    assert memory_id not in [item.id for item in bank.list(user).memories]
    assert memory_id not in found(bank, user, word)


@pytest.mark.parametrize("how", ["flipped byte", "moved from another row", "moved from another user's row"])
def test_tampered_content_fails_closed_is_logged_by_id_and_others_keep_working(
    sealed: tuple[SqlStorage, MemoryBank], how: str, caplog: pytest.LogCaptureFixture
) -> None:
    storage, bank = sealed
    alice, bob = User(), User()
    victim = save(bank, alice, "alpine lake cabin")
    other = save(bank, alice, "alpine meadow note")
    bobs = save(bank, bob, "alpine secret of bob")
    if how == "flipped byte":
        replacement = _flipped(_content_of(storage, victim))
    elif how == "moved from another row":
        replacement = _content_of(storage, other)
    else:
        replacement = _content_of(storage, bobs)
    _tamper(storage, memory.update().where(memory.c.id == victim).values(content=replacement))

    with caplog.at_level(logging.WARNING, logger="memorybank.storage"):
        _unavailable(bank, alice, victim, "alpine")
    assert victim in caplog.text
    assert "alpine" not in caplog.text
    assert [item.id for item in bank.list(alice).memories] == [other]
    assert found(bank, alice, "alpine") == [other]
    assert found(bank, bob, "alpine") == [bobs]
    assert bob.user_id not in [item.user_id for item in bank.list(alice).memories]


def test_a_snippet_moved_to_another_memory_fails_closed(sealed: tuple[SqlStorage, MemoryBank]) -> None:
    storage, bank = sealed
    alice = User()
    first = save(bank, alice, "first harbor", contexts=[{"snippet": "first snippet"}])
    second = save(bank, alice, "second harbor", contexts=[{"snippet": "second snippet"}])
    with storage.engine.connect() as connection:
        snippet = connection.execute(
            sa.select(memory_context.c.snippet).where(memory_context.c.memory_id == first)
        ).scalar_one()
    _tamper(storage, memory_context.update().where(memory_context.c.memory_id == second).values(snippet=snippet))

    assert [item.id for item in bank.list(alice).memories] == [first]
    assert found(bank, alice, "harbor") == [first]


def _swap_search_columns(storage: SqlStorage, first: str, second: str) -> None:
    columns = (memory.c.search_terms, memory.c.doc_length)
    with storage.engine.connect() as connection:
        stored = {row[0]: row[1:] for row in connection.execute(sa.select(memory.c.id, *columns)).all()}
    for target, source in ((first, second), (second, first)):
        terms, length = stored[source]
        _tamper(storage, memory.update().where(memory.c.id == target).values(search_terms=terms, doc_length=length))


@pytest.mark.parametrize("whose", ["two users' rows", "two rows of one user"])
def test_swapped_search_tokens_are_detected_logged_by_id_and_others_keep_working(
    sealed: tuple[SqlStorage, MemoryBank], whose: str, caplog: pytest.LogCaptureFixture
) -> None:
    storage, bank = sealed
    alice, bob = User(), User()
    first = save(bank, alice, "violet garden party")
    second = save(bank, bob if whose == "two users' rows" else alice, "violet garden secret")
    alice_kept = save(bank, alice, "violet tulips")
    bob_kept = save(bank, bob, "violet crocus")
    _swap_search_columns(storage, first, second)

    with caplog.at_level(logging.WARNING, logger="memorybank.storage"):
        # Each tampered row is corrupt wherever it is read: never listed, never found.
        assert [item.id for item in bank.list(alice).memories] == [alice_kept]
        assert [item.id for item in bank.list(bob).memories] == [bob_kept]
        assert found(bank, alice, "violet") == [alice_kept]
        assert found(bank, bob, "violet") == [bob_kept]
        assert found(bank, alice, "garden") == []
        assert found(bank, alice, "secret") == []
        assert found(bank, bob, "secret") == []
    for tampered in (first, second):
        assert f"memory {tampered} does not open (search tokens do not belong to this row" in caplog.text
    assert "garden" not in caplog.text
    assert "violet" not in caplog.text


def test_a_row_claiming_the_unauthenticated_token_format_fails_closed(sealed: tuple[SqlStorage, MemoryBank]) -> None:
    storage, bank = sealed
    alice = User()
    forged = save(bank, alice, "amber river")
    kept = save(bank, alice, "amber lake")
    state = SealState.parse(storage.codec.state or "")
    legacy = f"{state.sealing_key}:{state.index_key}"
    _tamper(storage, memory.update().where(memory.c.id == forged).values(seal_state=legacy, search_mac=None))

    assert [item.id for item in bank.list(alice).memories] == [kept]
    assert found(bank, alice, "amber") == [kept]


def test_a_plaintext_row_in_a_fully_sealed_database_fails_closed(place: Place) -> None:
    ring = new_key_ring()
    storage = place.open(ring)
    bank = bank_over(storage)
    alice = User()
    forged = save(bank, alice, "ordinary words")
    _tamper(storage, memory.update().where(memory.c.id == forged).values(content="forged plaintext", seal_state=None))
    kept = save(bank, alice, "ordinary sentence")

    assert [item.id for item in bank.list(alice).memories] == [kept]
    reopened = bank_over(place.open(ring))
    assert [item.id for item in reopened.list(alice).memories] == [kept]


# The key ring is checked before serving


def test_a_sealed_database_refuses_to_start_without_its_key_ring(place: Place) -> None:
    ring = new_key_ring()
    save(bank_over(place.open(ring)), User(), "kept under lock")

    with pytest.raises(KeyRingError, match=rf"holds sealed memories \(key ids seen: {ring.primary}\)"):
        place.open(None)
    with pytest.raises(KeyRingError, match=rf"does not open this database \(key ids seen: {ring.primary}"):
        place.open(new_key_ring())


def test_a_ring_with_the_right_key_id_but_other_material_is_refused(place: Place) -> None:
    ring = new_key_ring()
    save(bank_over(place.open(ring)), User(), "kept under lock")
    impostor = KeyRing(keys={ring.primary: bytes(32)}, primary=ring.primary, index=ring.primary)

    with pytest.raises(KeyRingError, match="does not open this database"):
        place.open(impostor)


def test_deleting_the_key_check_values_does_not_loosen_the_database(place: Place) -> None:
    # The check value records how strict reads are; without it a restart would accept a forged row of
    # the older, unauthenticated token format again.
    ring = new_key_ring()
    storage = place.open(ring)
    bank = bank_over(storage)
    alice = User()
    forged = save(bank, alice, "amber river")
    state = SealState.parse(storage.codec.state or "")
    _tamper(storage, seal_key.delete())
    legacy = f"{state.sealing_key}:{state.index_key}"
    _tamper(storage, memory.update().where(memory.c.id == forged).values(seal_state=legacy, search_mac=None))

    with pytest.raises(KeyRingError, match=rf"holds no key-check value for \({ring.primary}\)"):
        place.open(ring)


def test_the_mode_is_reported(place: Place) -> None:
    plaintext = place.open(None)
    save(bank_over(plaintext), User(), "an old note")
    assert plaintext.describe_mode().startswith("plaintext")

    ring = new_key_ring()
    sealed = place.open(ring)
    assert "its one memory is still plaintext: run `memorybank encrypt`" in sealed.describe_mode()
    sealed.reindex()
    assert sealed.describe_mode().endswith("its one memory sealed")


# Moving between states, online


def test_encrypt_seals_an_existing_database_while_it_keeps_serving(place: Place) -> None:
    plaintext = bank_over(place.open(None))
    alice, bob = User(), User()
    old = [save(plaintext, alice, f"old {CANARY} note {n}", **canary_body(str(n))) for n in range(5)]
    bobs = save(plaintext, bob, f"bob {CANARY}")
    before = dict(_scores(plaintext, alice, CANARY))

    storage = place.open(new_key_ring())  # the server, restarted with a key ring
    serving = bank_over(storage)
    new = save(serving, alice, f"new {CANARY} note")
    # Mixed: old rows are still found (plaintext tokens), new ones through the blind index.
    assert set(found(serving, alice, CANARY)) == {*old, new}

    batches: list[int] = []
    report = storage.reindex(batch_size=2, progress=batches.append)

    assert report.rewritten == 6
    assert report.broken == 0
    assert batches == [2, 2, 2]
    assert not any(CANARY in value for value in raw_rows(storage))
    assert set(found(serving, alice, CANARY)) == {*old, new}
    assert found(serving, bob, CANARY) == [bobs]
    listed = {item.id: item for item in serving.list(alice).memories}
    assert listed[old[0]].contexts[0].snippet == f"the user said {CANARY}snippet0"
    # A server started afterwards searches the blind index only: the same ids and scores as plaintext.
    after = bank_over(place.open(place_ring(storage)))
    after.delete(alice, memory_id=new)
    assert dict(_scores(after, alice, CANARY)) == pytest.approx(before)


def place_ring(storage: SqlStorage) -> KeyRing:
    sealer = storage.sealer
    assert isinstance(sealer, AesGcmSealer)
    return sealer._ring


def _scores(bank: MemoryBank, user: User, query: str) -> list[tuple[str, float]]:
    return [(result.memory.id, result.score) for result in bank.search(user, query=query)]


@pytest.mark.parametrize("new_index", [False, True], ids=["same index key", "new index key"])
def test_keys_rotate_reseals_old_rows(place: Place, new_index: bool) -> None:
    first = new_key_ring()
    old_bank = bank_over(place.open(first))
    alice = User()
    old = [save(old_bank, alice, f"rotation {CANARY} {n}") for n in range(3)]
    first_scores = dict(_scores(old_bank, alice, CANARY))
    with place.open(first).engine.connect() as connection:
        terms_before = set(connection.execute(sa.select(memory.c.search_terms)).scalars())

    second = first.with_new_primary(new_index=new_index)
    storage = place.open(second)
    serving = bank_over(storage)
    new = save(serving, alice, f"rotation {CANARY} fresh")
    assert set(found(serving, alice, CANARY)) == {*old, new}

    report = storage.reindex(batch_size=2)

    assert report.rewritten == 3
    with storage.engine.connect() as connection:
        states = set(connection.execute(sa.select(memory.c.seal_state)).scalars())
        registered = set(connection.execute(sa.select(seal_key.c.key_id)).scalars())
        terms_after = set(connection.execute(sa.select(memory.c.search_terms).where(memory.c.id != new)).scalars())
    assert states == {f"{second.primary}:{second.index}:{TOKEN_FORMAT}"}
    assert not any(CANARY in value for value in raw_rows(storage))
    # Same index key: the search tokens are untouched; a new one re-tokenizes every row.
    assert (terms_after == terms_before) is not new_index
    assert set(found(serving, alice, CANARY)) == {*old, new}
    if new_index:
        # The old key is needed by nothing any more, and can leave the ring.
        assert registered == {second.primary}
        serving = bank_over(place.open(second.without(first.primary)))
    serving.delete(alice, memory_id=new)
    assert dict(_scores(serving, alice, CANARY)) == pytest.approx(first_scores)


def test_export_writes_plaintext_and_import_seals(place: Place) -> None:
    storage = place.open(new_key_ring())
    alice = User()
    save(bank_over(storage), alice, f"exported {CANARY}", **canary_body("x"))
    out = io.StringIO()

    assert export_user(storage.store, alice.user_id, out) == 1
    exported = out.getvalue()
    assert CANARY in exported

    with storage.engine.begin() as connection:
        connection.execute(memory_context.delete())
        connection.execute(memory.delete())
    report = import_lines(exported.splitlines(), storage.store)
    assert report.imported == 1
    assert not any(CANARY in value for value in raw_rows(storage))
    assert [item.content for item in bank_over(storage).list(alice).memories] == [f"exported {CANARY}"]


# A database sealed before token format 2 (revision 0008)


def rewrite_in_token_format(storage: SqlStorage, ring: KeyRing, token_format: int) -> None:
    """Rewrite every row's search columns as the code of `token_format`'s day wrote them.

    Format 1: unstamped tokens, no authenticator, a two-part seal state; format 2: tokens in word order.
    """
    index = AesGcmSealer(ring).index_for(ring.index, token_format)
    assert index is not None
    indexer = OwnerIndexer(blind_index=index)
    with storage.engine.connect() as connection:
        owners = set(connection.execute(sa.select(memory.c.user_id)).scalars())
    memories = [item for owner in owners for item in storage.store.list(user_id=owner, limit=1000, after=None)]
    with storage.engine.begin() as connection:
        for item in memories:
            document = indexer.document(item)
            binding = SealBinding(table="memory", column="search_terms", row_id=item.id, user_id=item.user_id)
            connection.execute(
                memory.update()
                .where(memory.c.id == item.id)
                .values(
                    search_terms=document.search_terms,
                    seal_state=str(SealState(ring.primary, ring.index, token_format)),
                    search_mac=(
                        index.document_mac(binding, document.search_terms, document.doc_length)
                        if token_format > 1
                        else None
                    ),
                )
            )


def _as_sealed_before_revision_0008(storage: SqlStorage, ring: KeyRing) -> None:
    """Rewrite every row as the code before revision 0008 wrote it: unstamped tokens, no authenticator.

    And the key check as it recorded a fully sealed database then (`closed`).
    """
    rewrite_in_token_format(storage, ring, 1)
    with storage.engine.begin() as connection:
        tighten(connection, AesGcmSealer(ring), "closed")


def test_a_database_sealed_before_token_format_2_keeps_working_and_rotate_upgrades_it(place: Place) -> None:
    ring = new_key_ring()
    storage = place.open(ring)
    alice = User()
    saved = [save(bank_over(storage), alice, f"legacy {CANARY} {n}") for n in range(3)]
    before = dict(_scores(bank_over(storage), alice, CANARY))
    _as_sealed_before_revision_0008(storage, ring)

    # A server started on it (the new code) reads and finds the old rows, and writes new ones in the current format.
    server = place.open(ring)
    serving = bank_over(server)
    assert "3 of 3 memories are under older keys or token formats" in server.describe_mode()
    assert {item.id for item in serving.list(alice).memories} == set(saved)
    assert dict(_scores(serving, alice, CANARY)) == pytest.approx(before)
    fresh = save(serving, alice, f"fresh {CANARY}")
    assert set(found(serving, alice, CANARY)) == {*saved, fresh}

    report = place.open(ring).reindex(batch_size=2)

    assert report.rewritten == 3
    with server.engine.connect() as connection:
        states = set(connection.execute(sa.select(memory.c.seal_state)).scalars())
        macs = connection.execute(sa.select(memory.c.search_mac)).scalars().all()
    assert states == {f"{ring.primary}:{ring.index}:{TOKEN_FORMAT}"}
    assert all(mac is not None for mac in macs)
    assert set(found(serving, alice, CANARY)) == {*saved, fresh}
    # Every row now has its authenticator, and the key check records it: a row claiming the old
    # format from now on fails closed.
    after = place.open(ring)
    _tamper(after, memory.update().where(memory.c.id == saved[0]).values(seal_state=f"{ring.primary}:{ring.index}"))
    reopened = bank_over(place.open(ring))
    assert {item.id for item in reopened.list(alice).memories} == {*saved[1:], fresh}


@pytest.mark.parametrize("new_index", [False, True], ids=["same index key", "new index key"])
def test_a_server_left_on_the_old_ring_after_a_rotation_refuses_rather_than_showing_an_empty_bank(
    place: Place, new_index: bool, caplog: pytest.LogCaptureFixture
) -> None:
    first = new_key_ring()
    stale = bank_over(place.open(first))  # a server nobody restarted after `keys add`
    alice = User()
    saved = [save(stale, alice, f"kept {CANARY} {n}") for n in range(2)]
    second = first.with_new_primary(new_index=new_index)
    place.open(second).reindex()  # `keys rotate` with the new ring

    new_keys = {second.primary, second.index}
    with pytest.raises(UnavailableError, match="this server's key ring lacks key") as refused:
        stale.list(alice)
    assert str(refused.value).rsplit(" ", 1)[-1] in new_keys
    if not new_index:  # its search tokens still match, so the search reaches the rows it cannot open
        with pytest.raises(UnavailableError):
            stale.search(alice, query=CANARY)
    assert "which this server's key ring does not hold: restart it with the current key ring" in caplog.text
    # Restarted with the current ring, the same server sees every memory again.
    assert {m.id for m in bank_over(place.open(second)).list(alice).memories} == set(saved)


def test_a_team_memory_is_sealed_and_its_tokens_say_nothing_about_a_personal_banks(place: Place) -> None:
    storage = place.open(new_key_ring())
    bank = bank_over(storage)
    member = frozenset({"mcp:read", "mcp:write", "org:read", "org:write"})
    ann = User(scopes=member)
    other_org = User(scopes=member)
    text = f"The {CANARY} lives in eu-west-1"
    own = save(bank, ann, text, **canary_body("own"))
    shared = save(bank, ann, text, bankScope="org", **canary_body("team"))
    theirs = save(bank, other_org, text, bankScope="org")

    assert not any(CANARY in value for value in raw_rows(storage))
    with storage.engine.connect() as connection:
        terms = dict(connection.execute(sa.select(memory.c.id, memory.c.search_terms)).all())
    tokens = {memory_id: set(str(terms[memory_id]).split()) for memory_id in (own, shared, theirs)}
    # The same words, three owners: no token in common (each HMAC has its owner inside).
    assert tokens[own].isdisjoint(tokens[shared])
    assert tokens[shared].isdisjoint(tokens[theirs])
    assert found(bank, ann, CANARY) == [own]
    assert [r.memory.id for r in bank.search(ann, query=CANARY, bank="org")] == [shared]
    assert bank.revisions(ann, memory_id=shared, bank="org").memory.contexts[0].snippet == (
        f"the user said {CANARY}snippetteam"
    )
