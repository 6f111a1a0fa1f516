"""A sealed row's blind tokens keep no word order (token format 3), and rows of the word-order format 2
keep working until `keys rotate` rewrites them, online and resumably, on SQLite and MariaDB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_crypto import new_key_ring
from adapters_crypto.sealer import TOKEN_FORMAT
from adapters_mysql import SqlStorage
from adapters_mysql.schema import memory
from tests.conftest import User
from tests.sql.conftest import DIALECTS
from tests.sql.test_sealing import Place, _scores, bank_over, found, rewrite_in_token_format, save

WORD_ORDER_FORMAT = 2


@pytest.fixture(params=DIALECTS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    opened = Place(request.param, tmp_path)
    yield opened
    opened.close()


def _search_terms(storage: SqlStorage, memory_id: str) -> bytes:
    with storage.engine.connect() as connection:
        value = connection.execute(sa.select(memory.c.search_terms).where(memory.c.id == memory_id)).scalar_one()
    return str(value).encode("utf-8")


def _states(storage: SqlStorage) -> dict[str, str]:
    with storage.engine.connect() as connection:
        return dict(connection.execute(sa.select(memory.c.id, memory.c.seal_state)).all())


def test_two_orders_of_the_same_words_store_identical_bytes(place: Place) -> None:
    storage = place.open(new_key_ring())
    bank = bank_over(storage)
    alice = User()

    forwards = save(bank, alice, "alpha bravo charlie delta")
    backwards = save(bank, alice, "delta charlie bravo alpha")
    repeated = save(bank, alice, "alpha alpha bravo")

    assert _search_terms(storage, forwards) == _search_terms(storage, backwards)
    tokens = _search_terms(storage, forwards).split(b" ")
    assert tokens == sorted(tokens)
    assert len(set(_search_terms(storage, repeated).split(b" "))) == 2  # a repeat is kept: ranking counts it
    assert set(found(bank, alice, "charlie")) == {forwards, backwards}


class _Interrupted(Exception):
    """Stops a walk after its first committed batch, as a killed `keys rotate` would."""


def _stop_after_first_batch(_count: int) -> None:
    raise _Interrupted


def test_word_order_rows_keep_working_and_keys_rotate_sorts_them_online_and_resumably(place: Place) -> None:
    ring = new_key_ring()
    storage = place.open(ring)
    alice, bob = User(), User()
    texts = ["delta charlie bravo alpha", "alpha bravo charlie delta", "charlie alpha alpha", "bravo echo", "echo"]
    saved = [save(bank_over(storage), alice, text) for text in texts]
    bobs = save(bank_over(storage), bob, "alpha bravo")
    queries = ["alpha", "charlie delta", "echo bravo alpha"]
    ranked = {query: _scores(bank_over(storage), alice, query) for query in queries}
    rewrite_in_token_format(storage, ring, WORD_ORDER_FORMAT)
    assert _search_terms(storage, saved[0]) != _search_terms(storage, saved[1])

    # A server started on it reads, lists and ranks the word-order rows exactly as before, and writes format 3.
    server = place.open(ring)
    serving = bank_over(server)
    assert "6 of 6 memories are under older keys or token formats: run `memorybank keys rotate`" in (
        server.describe_mode()
    )
    assert {item.id for item in serving.list(alice).memories} == set(saved)
    assert {query: _scores(serving, alice, query) for query in queries} == ranked
    fresh = save(serving, alice, "foxtrot alpha")
    assert _states(server)[fresh].endswith(f":{TOKEN_FORMAT}")
    before_walk = {query: _scores(serving, alice, query) for query in queries}

    # `keys rotate` (the walk) stopped after its first batch: both forms are read side by side.
    with pytest.raises(_Interrupted):
        place.open(ring).reindex(batch_size=2, progress=_stop_after_first_batch)
    formats = sorted(state.rsplit(":", 1)[1] for state in _states(server).values())
    assert formats == ["2", "2", "2", "2", "3", "3", "3"]
    assert {query: _scores(serving, alice, query) for query in queries} == before_walk
    assert set(found(serving, alice, "alpha")) == {saved[0], saved[1], saved[2], fresh}

    report = place.open(ring).reindex(batch_size=2)  # run again: it picks up where it stopped

    assert (report.rewritten, report.broken) == (4, 0)
    assert set(_states(server).values()) == {f"{ring.primary}:{ring.index}:{TOKEN_FORMAT}"}
    assert _search_terms(server, saved[0]) == _search_terms(server, saved[1])
    after = bank_over(place.open(ring))
    serving.delete(alice, memory_id=fresh)
    assert {query: _scores(after, alice, query) for query in queries} == ranked
    assert [item.id for item in after.list(bob).memories] == [bobs]
    assert "all 6 memories sealed" in place.open(ring).describe_mode()
