"""A long save's vector is written just after the save answers (ADR 0045), on both SQL dialects.

The test embedder counts words as tokens; its `embed` of a long text waits on a gate the test opens, so a save
that returned while the gate was shut did not wait for its vector.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest
import sqlalchemy as sa

from adapters_mysql import SqlStorage, deferred_vectors
from adapters_mysql.deferred_vectors import INLINE_EMBEDDING_TOKENS
from adapters_mysql.schema import memory_vector
from memorybank_core import Embedding, Memory, MemoryBank
from memorybank_core.bodies import JsonValue
from tests.conftest import User
from tests.contract.embedders import HashedTermsEmbedder
from tests.sql.backends import MysqlFactory, SqliteFactory, bank_on, storage_at
from tests.sql.conftest import DIALECTS

#: More words than a save embeds itself.
LONG = " ".join(f"harbor{n} lighthouse keeper storm log" for n in range(INLINE_EMBEDDING_TOKENS // 5 + 1))
SHORT = "the lighthouse keeper's storm log"


class GatedEmbedder(HashedTermsEmbedder):
    """Embeds long texts only once `gate` is open; records which thread embedded what."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.embedded: list[tuple[str, bool]] = []
        """(text, embedded in the thread that made the embedder) per text."""
        self._home = threading.get_ident()

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        if any(self.token_count(text) > INLINE_EMBEDDING_TOKENS for text in texts):
            assert self.gate.wait(30), "the gate was never opened"
        self.embedded += [(text, threading.get_ident() == self._home) for text in texts]
        return super().embed(texts)


@pytest.fixture(scope="module", params=DIALECTS)
def factory(request: pytest.FixtureRequest) -> Iterator[tuple[SqliteFactory | MysqlFactory, GatedEmbedder]]:
    """A database of each dialect with the gated embedder, built once for the module (a migration is 0.5 s)."""
    gated = GatedEmbedder()
    built: SqliteFactory | MysqlFactory = (SqliteFactory if request.param == "sqlite" else MysqlFactory)(embedder=gated)
    yield built, gated
    gated.gate.set()
    built.close()


@pytest.fixture
def embedder(factory: tuple[SqliteFactory | MysqlFactory, GatedEmbedder]) -> Iterator[GatedEmbedder]:
    gated = factory[1]
    gated.gate.clear()
    gated.embedded.clear()
    yield gated
    gated.gate.set()  # nothing left waiting for the next test
    deferred = factory[0].storage.deferred_vectors
    assert deferred is not None
    assert deferred.drain(30)


@pytest.fixture
def storage(factory: tuple[SqliteFactory | MysqlFactory, GatedEmbedder], embedder: GatedEmbedder) -> SqlStorage:
    factory[0].fresh()
    return factory[0].storage


def _vectors(storage: SqlStorage) -> dict[str, bytes]:
    with storage.engine.connect() as connection:
        return {row.memory_id: row.vector for row in connection.execute(sa.select(memory_vector))}


def _drained(storage: SqlStorage) -> None:
    assert storage.deferred_vectors is not None
    assert storage.deferred_vectors.drain(30)


def _save(bank: MemoryBank, user: User, content: str) -> Memory:
    return bank.save(user, JsonValue({"content": content}))


def test_a_short_save_writes_its_vector_with_it(storage: SqlStorage, embedder: GatedEmbedder) -> None:
    saved = _save(bank_on(storage), User(), SHORT)
    assert saved.id in _vectors(storage)
    assert embedder.embedded == [(SHORT, True)]


def test_a_long_save_answers_before_its_vector_which_follows(storage: SqlStorage, embedder: GatedEmbedder) -> None:
    bank, alice = bank_on(storage), User()
    saved = _save(bank, alice, LONG)  # the gate is shut: a save waiting for its vector would never return
    assert saved.id not in _vectors(storage)
    assert storage.count_to_embed() == 1
    # Until its vector is written, search finds it by its words.
    assert [found.memory.id for found in bank.search(alice, query="lighthouse keeper")] == [saved.id]
    embedder.gate.set()
    _drained(storage)
    assert saved.id in _vectors(storage)
    assert storage.count_to_embed() == 0
    assert [(text, home) for text, home in embedder.embedded if text == LONG] == [(LONG, False)]


def test_a_long_saves_similar_compares_by_words_without_embedding(storage: SqlStorage, embedder: GatedEmbedder) -> None:
    bank, alice = bank_on(storage), User()
    first = _save(bank, alice, LONG)
    embedder.gate.set()
    _drained(storage)
    embedder.gate.clear()
    second = _save(bank, alice, LONG + " again")
    calls = embedder.calls
    similar = bank.similar(alice, second)
    assert [found.memory.id for found in similar] == [first.id]
    assert embedder.calls == calls  # neither the query nor the new memory was embedded for the look-up


def test_a_long_text_is_judged_by_its_start_and_a_start_of_few_tokens_by_the_whole(
    storage: SqlStorage, embedder: GatedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    deferred = storage.deferred_vectors
    assert deferred is not None
    counted: list[int] = []
    count = embedder.token_count

    def counting(text: str) -> int:
        counted.append(len(text))
        return count(text)

    monkeypatch.setattr(embedder, "token_count", counting)
    at_the_bounds = (LONG + " ") * 200
    assert deferred.defers(at_the_bounds)
    assert counted
    assert max(counted) <= deferred_vectors.JUDGED_CHARACTERS  # not tokenized up to the model's bound
    # A pasted blob of one word, then words: its start is one token, the whole many.
    assert deferred.defers("x" * 1000 + " " + LONG)
    assert not deferred.defers("x" * 1000 + " " + SHORT)
    assert not deferred.defers(SHORT)


def test_an_edit_during_the_wait_keeps_the_edits_vector(storage: SqlStorage, embedder: GatedEmbedder) -> None:
    bank, alice = bank_on(storage), User()
    saved = _save(bank, alice, LONG)
    edited = bank.edit(alice, memory_id=saved.id, request=JsonValue({"content": SHORT}))
    short_vector = _vectors(storage)[saved.id]
    embedder.gate.set()
    _drained(storage)
    # The long text's vector, computed after the edit, was not written over the edit's.
    assert _vectors(storage) == {saved.id: short_vector}
    assert edited.revision == saved.revision + 1
    assert (LONG, False) in embedder.embedded


def test_an_edit_to_a_long_text_drops_the_old_vector_and_writes_the_new_one_after(
    storage: SqlStorage, embedder: GatedEmbedder
) -> None:
    bank, alice = bank_on(storage), User()
    saved = _save(bank, alice, SHORT)
    old = _vectors(storage)[saved.id]
    bank.edit(alice, memory_id=saved.id, request=JsonValue({"content": LONG}))
    assert saved.id not in _vectors(storage)  # a vector of the old text never answers for the new one
    embedder.gate.set()
    _drained(storage)
    assert _vectors(storage)[saved.id] != old


def test_a_memory_deleted_during_the_wait_gets_no_vector(storage: SqlStorage, embedder: GatedEmbedder) -> None:
    bank, alice = bank_on(storage), User()
    saved = _save(bank, alice, LONG)
    bank.delete(alice, memory_id=saved.id)
    embedder.gate.set()
    _drained(storage)
    assert _vectors(storage) == {}


def test_a_full_queue_makes_the_save_write_its_own_vector(
    new_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deferred_vectors, "DEFAULT_QUEUE_BOUND", 0)
    embedder = GatedEmbedder()
    storage = storage_at(new_database_url, embedder=embedder)
    try:
        storage.initialize() if new_database_url.startswith("sqlite") else storage.migrate()
        embedder.gate.set()
        saved = _save(bank_on(storage), User(), LONG)
        assert saved.id in _vectors(storage)
        assert embedder.embedded == [(LONG, True)]
    finally:
        storage.close()


def test_vectors_still_waiting_at_close_are_the_next_fills(new_database_url: str) -> None:
    embedder = GatedEmbedder()
    storage = storage_at(new_database_url, embedder=embedder)
    storage.initialize() if new_database_url.startswith("sqlite") else storage.migrate()
    bank, alice = bank_on(storage), User()
    # The first long save's batch waits at the gate; the second waits in the queue when the storage closes.
    first = _save(bank, alice, LONG)
    second = _save(bank, alice, LONG + " two")
    closing = threading.Thread(target=storage.close)
    closing.start()
    embedder.gate.set()
    closing.join(30)
    reopened = storage_at(new_database_url, embedder=HashedTermsEmbedder())
    try:
        written = set(_vectors(reopened))
        assert first.id in written or second.id not in written
        assert reopened.count_to_embed() == 2 - len(written)
        reopened.embed_missing()
        assert set(_vectors(reopened)) == {first.id, second.id}
    finally:
        reopened.close()


def test_saves_queued_together_get_their_vectors_in_one_batch_the_changed_one_excepted(
    storage: SqlStorage, embedder: GatedEmbedder
) -> None:
    bank, alice, bob = bank_on(storage), User(), User()
    # The first long save's batch waits at the gate; the next four queue behind it and are written together.
    first = _save(bank, alice, LONG)
    queued = [_save(bank, person, f"{LONG} {n}") for n, person in enumerate([alice, bob, alice, bob])]
    bank.edit(bob, memory_id=queued[1].id, request=JsonValue({"content": SHORT}))
    bank.delete(alice, memory_id=queued[2].id)
    embedder.gate.set()
    _drained(storage)
    vectors = _vectors(storage)
    assert set(vectors) == {first.id, queued[0].id, queued[1].id, queued[3].id}
    # The edited memory keeps its short text's vector, written by the edit.
    assert vectors[queued[1].id] == HashedTermsEmbedder().embed([SHORT])[0].to_bytes()
    assert storage.count_to_embed() == 0


def test_long_saves_in_quick_succession_share_one_model_call_and_a_close_ends_the_wait(
    new_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wait long enough that three saves surely fall within it, however loaded the machine.
    monkeypatch.setattr(deferred_vectors, "LINGER_SECONDS", 1.0)
    others = set(threading.enumerate())  # the module's other storages' threads
    embedder = GatedEmbedder()
    embedder.gate.set()
    storage = storage_at(new_database_url, embedder=embedder)
    try:
        storage.initialize() if new_database_url.startswith("sqlite") else storage.migrate()
        bank, alice = bank_on(storage), User()
        calls = embedder.calls
        saved = [_save(bank, alice, f"{LONG} {n}") for n in range(3)]
        _drained(storage)
        assert embedder.calls == calls + 1
        assert {memory.id for memory in saved} <= set(_vectors(storage))
        # A memory queued while the storage closes is left to the next fill, without waiting out the linger.
        monkeypatch.setattr(deferred_vectors, "LINGER_SECONDS", 60.0)
        _save(bank, alice, f"{LONG} late")
    finally:
        storage.close()
    assert not [t for t in threading.enumerate() if t.name == deferred_vectors.THREAD_NAME and t not in others]
