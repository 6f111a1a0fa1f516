"""Hybrid search's vectors in SQL: written with the save, gone with the delete and the purge, sealed at rest,
scored only over their owner's memories, and backfilled online by `reindex --embeddings`."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from adapters_crypto import AesGcmSealer, KeyRing, new_key_ring
from adapters_mysql import ReindexReport, SqlStorage, reindex, seal_keys
from adapters_mysql.schema import memory as memory_table
from adapters_mysql.schema import memory_vector
from memorybank.commands.base import CommandError
from memorybank.commands.reindex import fail_on_broken
from memorybank.settings import Settings
from memorybank_core import Embedder, Embedding, MemoryBank, PackedVectors
from memorybank_core.bodies import JsonValue
from memorybank_core.configuration import BankSettings
from memorybank_core.offboarding import Offboarding
from memorybank_search.fusion import Fusion
from memorybank_search.hybrid import centralities, cosines
from tests.conftest import User, start_clock
from tests.contract.embedders import HashedTermsEmbedder
from tests.sql.backends import bank_on, storage_at


def _storage(
    tmp_path: Path, *, sealed: bool = False, hybrid: bool = True, embedder: Embedder | None = None
) -> SqlStorage:
    """The SQLite file in `tmp_path`, hybrid with `embedder` (default: the test embedder) unless not `hybrid`."""
    sealer = AesGcmSealer(new_key_ring()) if sealed else None
    tmp_path.mkdir(parents=True, exist_ok=True)
    chosen = (embedder or HashedTermsEmbedder()) if hybrid else None
    storage = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}", sealer, embedder=chosen)
    storage.initialize()
    return storage


def _bank(storage: SqlStorage, **overrides: Any) -> MemoryBank:
    return bank_on(storage, **overrides)


def _vector_rows(storage: SqlStorage) -> list[sa.Row[tuple[str, str, str]]]:
    with storage.engine.connect() as connection:
        return list(
            connection.execute(sa.select(memory_vector.c.user_id, memory_vector.c.memory_id, memory_vector.c.model))
        )


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[SqlStorage]:
    opened = _storage(tmp_path)
    yield opened
    opened.close()


def test_a_save_writes_its_vector_in_the_same_transaction_and_a_delete_removes_it(storage: SqlStorage) -> None:
    bank, alice = _bank(storage), User()
    kept = bank.save(alice, JsonValue({"content": "the lighthouse keeper's storm log"}))
    gone = bank.save(alice, JsonValue({"content": "renew the passport"}))
    assert {(row.user_id, row.memory_id, row.model) for row in _vector_rows(storage)} == {
        (alice.user_id, kept.id, HashedTermsEmbedder.model_id),
        (alice.user_id, gone.id, HashedTermsEmbedder.model_id),
    }
    bank.delete(alice, memory_id=gone.id)
    assert [row.memory_id for row in _vector_rows(storage)] == [kept.id]


def test_a_save_refused_by_the_quota_writes_no_vector(storage: SqlStorage) -> None:
    from memorybank_core import QuotaExceededError

    bank = bank_on(
        storage, Settings.for_database("sqlite://", bank=BankSettings(quota_memories=1, quota_characters=10_000))
    )
    alice = User()
    bank.save(alice, JsonValue({"content": "the only memory allowed"}))
    with pytest.raises(QuotaExceededError):
        bank.save(alice, JsonValue({"content": "one too many"}))
    assert len(_vector_rows(storage)) == 1


def test_a_purge_removes_every_vector_of_the_user_and_only_theirs(storage: SqlStorage) -> None:
    bank, alice, bob = _bank(storage), User(), User()
    for number in range(5):
        bank.save(alice, JsonValue({"content": f"alice note {number} about harbors"}))
    kept = bank.save(bob, JsonValue({"content": "bob's note about harbors"}))
    Offboarding(store=storage.purge_store, clock=start_clock()).purge_user(alice.user_id, batch_size=2)
    assert [(row.user_id, row.memory_id) for row in _vector_rows(storage)] == [(bob.user_id, kept.id)]


def test_another_users_near_duplicate_never_appears_and_never_shifts_a_score(storage: SqlStorage) -> None:
    bank, alice, bob = _bank(storage), User(), User()
    mine = bank.save(alice, JsonValue({"content": "kayak rental receipt from the lake"}))
    bank.save(alice, JsonValue({"content": "grandma's cardamom recipe"}))
    before = [(r.memory.id, r.score) for r in bank.search(alice, query="kayak receipt")]
    # Bob saves near-duplicates of Alice's memory: the same words, and the same vectors.
    for _ in range(30):
        bank.save(bob, JsonValue({"content": "kayak rental receipt from the lake"}))
        bank.save(bob, JsonValue({"content": "kayak kayak receipt receipt"}))
    after = [(r.memory.id, r.score) for r in bank.search(alice, query="kayak receipt")]
    assert after == before
    assert after[0][0] == mine.id
    assert all(result.memory.user_id == bob.user_id for result in bank.search(bob, query="kayak receipt"))


def test_sealed_vectors_are_stored_sealed_and_open_to_the_same_scores(tmp_path: Path) -> None:
    sealed, plain = _storage(tmp_path / "sealed", sealed=True), _storage(tmp_path / "plain")
    alice = User()
    for storage in (sealed, plain):
        for number in range(5):
            _bank(storage).save(alice, JsonValue({"content": f"note {number}: the lighthouse keeper logged the storm"}))
    with sealed.engine.connect() as connection:
        stored = connection.execute(sa.select(memory_vector.c.vector, memory_vector.c.seal_state)).all()
    embedder = HashedTermsEmbedder()
    expected = embedder.embed(["note 0: the lighthouse keeper logged the storm"])[0]
    assert all(row.seal_state is not None and expected.to_bytes() not in bytes(row.vector) for row in stored)
    # Opened, the sealed vectors are the plaintext ones: the same search, the same scores.
    ranked = [
        [round(r.score, 12) for r in _bank(storage).search(alice, query="lighthouse storm")]
        for storage in (sealed, plain)
    ]
    assert ranked[0] == ranked[1]
    assert len(ranked[0]) == 5
    sealed.close()
    plain.close()


@pytest.mark.parametrize("sealed", [False, True], ids=["plaintext", "sealed"])
def test_an_owners_vectors_are_read_packed_and_score_as_the_vectors_one_by_one(tmp_path: Path, sealed: bool) -> None:
    storage = _storage(tmp_path, sealed=sealed)
    bank, alice, bob = _bank(storage), User(), User()
    saved = [
        bank.save(alice, JsonValue({"content": f"note {n}: the lighthouse keeper logged the storm"})) for n in range(6)
    ]
    bank.save(bob, JsonValue({"content": "note 0: the lighthouse keeper logged the storm"}))
    embedder = HashedTermsEmbedder()
    read = storage.vectors.vectors(user_id=alice.user_id, model_id=embedder.model_id)
    # One buffer for the scorer, still the mapping of the port: each memory's own vector, only Alice's.
    assert isinstance(read, PackedVectors)
    one_by_one = {memory.id: embedder.embed([memory.content])[0] for memory in saved}
    assert dict(read) == one_by_one
    query = embedder.embed(["lighthouse storm"])[0]
    assert cosines(query, read) == cosines(query, one_by_one)
    # Each memory's centrality too, whatever order the vectors come in: every engine ranks alike.
    assert centralities(read) == centralities(one_by_one) == centralities(dict(reversed(one_by_one.items())))
    storage.close()


def test_a_memorys_centrality_is_its_mean_cosine_with_the_owners_other_memories() -> None:
    embedder = HashedTermsEmbedder()
    texts = [f"the team notes that item {n} moved" for n in range(12)] + ["lighthouse storm", "the team notes"]
    vectors = {f"m{n:02d}": vector for n, vector in enumerate(embedder.embed(texts))}
    central = centralities(vectors)
    for memory_id, vector in vectors.items():
        others = [cosine for other, cosine in cosines(vector, vectors).items() if other != memory_id]
        assert central[memory_id] == pytest.approx(sum(others) / len(others), abs=1e-9)
    # The memory about something else than the rest is the least central.
    assert min(central, key=central.__getitem__) == "m12"
    assert centralities({"m00": vectors["m00"]}) == {"m00": 0.0}


def test_a_hub_that_is_close_to_everything_does_not_stand_out_for_a_question() -> None:
    # 100 memories whose cosines with the question are unremarkable, and one at 0.40 that is as close to
    # every other memory of the bank (centrality 0.35 above the bank's average): it stands out raw, not once
    # its closeness to everything is taken off.
    similarities = {f"m{n:02d}": 0.05 + 0.004 * (n % 25) for n in range(100)} | {"hub": 0.40}
    centrality = dict.fromkeys(similarities, 0.10) | {"hub": 0.45}
    assert [hit.memory_id for hit in Fusion().rank([], similarities, 10)] == ["hub"]
    assert list(Fusion().rank([], similarities, 10, centrality=centrality)) == []
    # A memory as central as the rest keeps its standing.
    assert [
        hit.memory_id for hit in Fusion().rank([], similarities, 10, centrality=dict.fromkeys(similarities, 0.1))
    ] == ["hub"]


def test_a_sealed_vector_moved_to_another_memory_does_not_open_and_the_memory_is_still_found_by_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = _storage(tmp_path, sealed=True)
    bank, alice = _bank(storage), User()
    source = bank.save(alice, JsonValue({"content": "orchids need bright indirect light"}))
    target = bank.save(alice, JsonValue({"content": "the lighthouse keeper logged the storm"}))
    with storage.engine.begin() as connection:
        stolen = connection.execute(
            sa.select(memory_vector.c.vector).where(memory_vector.c.memory_id == source.id)
        ).scalar_one()
        connection.execute(memory_vector.update().where(memory_vector.c.memory_id == target.id).values(vector=stolen))
    assert target.id not in storage.vectors.vectors(user_id=alice.user_id, model_id=HashedTermsEmbedder.model_id)
    assert target.id in caplog.text
    assert [r.memory.id for r in bank.search(alice, query="lighthouse keeper")] == [target.id]
    storage.close()


def test_reindex_embeddings_backfills_memories_saved_by_lexical_search_and_resumes_after_a_stop(tmp_path: Path) -> None:
    lexical = _storage(tmp_path, hybrid=False)
    alice = User()
    saved = [_bank(lexical).save(alice, JsonValue({"content": f"note {n} about harbors and ships"})) for n in range(7)]
    assert _vector_rows(lexical) == []
    lexical.close()

    hybrid = _storage(tmp_path)
    assert hybrid.count_to_embed() == 7
    bank = _bank(hybrid)
    # Until backfilled, a memory is found by its words only.
    assert len(bank.search(alice, query="harbors")) == 7

    class Stop(Exception):
        pass

    def stop_after_first_batch(count: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        hybrid.embed_missing(batch_size=3, progress=stop_after_first_batch)
    assert hybrid.count_to_embed() == 4
    progress: list[int] = []
    report = hybrid.embed_missing(batch_size=3, progress=progress.append)
    assert (report.embedded, report.skipped, progress) == (4, 0, [3, 1])
    assert hybrid.count_to_embed() == 0
    assert {row.memory_id for row in _vector_rows(hybrid)} == {memory.id for memory in saved}
    hybrid.close()


def test_vectors_of_another_model_are_never_compared_and_get_rewritten(tmp_path: Path) -> None:
    first = _storage(tmp_path)
    alice = User()
    _bank(first).save(alice, JsonValue({"content": "the harbor master's boat"}))
    first.close()

    class OtherModel(HashedTermsEmbedder):
        model_id = "another-model"

    storage = _storage(tmp_path, embedder=OtherModel())
    assert storage.vectors.vectors(user_id=alice.user_id, model_id="another-model") == {}
    assert storage.count_to_embed() == 1
    assert storage.embed_missing().embedded == 1
    assert [row.model for row in _vector_rows(storage)] == ["another-model"]
    storage.close()


def test_encrypt_and_key_rotation_seal_the_vectors_too_and_scores_stay_the_same(tmp_path: Path) -> None:
    plaintext = _storage(tmp_path)
    alice = User()
    for number in range(4):
        _bank(plaintext).save(alice, JsonValue({"content": f"note {number}: the lighthouse keeper logged the storm"}))
    before = [(r.memory.id, r.score) for r in _bank(plaintext).search(alice, query="lighthouse storm")]
    plaintext.close()

    ring = new_key_ring()
    for current in (ring, ring.with_new_primary()):
        sealed = storage_at(
            f"sqlite:///{tmp_path / 'bank.sqlite3'}", AesGcmSealer(current), embedder=HashedTermsEmbedder()
        )
        sealed.check_ready()
        sealed.reindex()  # `memorybank encrypt`, then `keys rotate`
        with sealed.engine.connect() as connection:
            states = set(connection.execute(sa.select(memory_vector.c.seal_state)).scalars())
        assert states == {sealed.codec.state}
        assert [(r.memory.id, r.score) for r in _bank(sealed).search(alice, query="lighthouse storm")] == before
        sealed.close()


def _rotated(tmp_path: Path, ring: KeyRing, *, fresh: bool = False) -> SqlStorage:
    storage = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}", AesGcmSealer(ring), embedder=HashedTermsEmbedder())
    if fresh:
        storage.initialize()
    else:
        storage.check_ready()
    return storage


def test_a_vector_that_does_not_reseal_fails_the_rotation_and_keeps_its_key_in_use(tmp_path: Path) -> None:
    ring = new_key_ring()
    first = _rotated(tmp_path, ring, fresh=True)
    bank, alice = _bank(first), User()
    source = bank.save(alice, JsonValue({"content": "orchids need bright indirect light"}))
    target = bank.save(alice, JsonValue({"content": "the lighthouse keeper logged the storm"}))
    with first.engine.begin() as connection:
        stolen = connection.execute(
            sa.select(memory_vector.c.vector).where(memory_vector.c.memory_id == source.id)
        ).scalar_one()
        connection.execute(memory_vector.update().where(memory_vector.c.memory_id == target.id).values(vector=stolen))
    first.close()

    rotated = ring.with_new_primary(new_index=True)
    second = _rotated(tmp_path, rotated)
    report = second.reindex()  # `memorybank keys rotate`
    assert (report.rewritten, report.broken, report.broken_vectors) == (2, 0, 1)
    # The old key still seals that vector: it is not reported unused, so `keys remove` is not advised.
    status = second.sealing_status(vectors=True)
    assert ring.primary in status.registered
    assert ring.primary in status.key_ids_seen
    assert "1 of 2 hybrid-search vectors is plaintext or under older keys" in second.describe_mode(vectors=True)

    # Written again from its text, the vector no longer needs the old key: the next rotation drops it.
    assert second.embed_missing().embedded == 1
    report = second.reindex()
    assert report.broken_vectors == 0
    assert ring.primary not in second.sealing_status(vectors=True).registered
    assert second.describe_mode(vectors=True).endswith("all 2 memories sealed")
    second.close()


def test_a_key_only_a_vector_still_uses_is_never_dropped(tmp_path: Path) -> None:
    ring = new_key_ring()
    first = _rotated(tmp_path, ring, fresh=True)
    _bank(first).save(User(), JsonValue({"content": "the lighthouse keeper logged the storm"}))
    first.close()
    rotated = ring.with_new_primary(new_index=True)
    second = _rotated(tmp_path, rotated)
    # The memory rows move to the new key but the vector does not (say a server still on the old
    # ring wrote it after the vectors' pass): settling must keep the old key.
    reindex.reindex(second.engine, second.indexer, second.codec)
    seal_keys.settle_keys(second.engine, AesGcmSealer(rotated))
    assert ring.primary in second.sealing_status().registered
    second.close()


def test_a_plaintext_vector_keeps_a_database_open_to_plaintext_reads(tmp_path: Path) -> None:
    plaintext = _storage(tmp_path)
    _bank(plaintext).save(User(), JsonValue({"content": "the lighthouse keeper logged the storm"}))
    plaintext.close()
    sealed = _rotated(tmp_path, new_key_ring())
    reindex.reindex(sealed.engine, sealed.indexer, sealed.codec)  # the rows only, not the vector
    assert seal_keys.sealing_status(sealed.engine, vectors=True).strictest_policy() == "open"
    assert seal_keys.sealing_status(sealed.engine).strictest_policy() == "bound"
    sealed.close()


def test_encrypt_and_keys_rotate_exit_1_when_a_vector_kept_its_old_seal() -> None:
    with pytest.raises(CommandError, match="1 hybrid-search vector does not open") as raised:
        fail_on_broken(ReindexReport(rewritten=2, broken=0, broken_vectors=1))
    assert raised.value.status == 1
    assert "reindex --embeddings" in str(raised.value)


def test_reindex_embeddings_racing_deletes_leaves_no_orphan_vector(tmp_path: Path) -> None:
    lexical = _storage(tmp_path, hybrid=False)
    alice = User()
    saved = [_bank(lexical).save(alice, JsonValue({"content": f"note {n} about harbors and ships"})) for n in range(6)]
    lexical.close()
    storage = _storage(tmp_path, hybrid=False)
    bank = _bank(storage)
    deleted: list[str] = []

    class DeletingWhileEmbedding(HashedTermsEmbedder):
        """Deletes one memory of each batch after the walk loaded it, before its vectors are written."""

        def embed(self, texts: Sequence[str]) -> list[Embedding]:
            victim = next(m for m in saved if m.id not in deleted and any(m.content in text for text in texts))
            bank.delete(alice, memory_id=victim.id)
            deleted.append(victim.id)
            return super().embed(texts)

    embedding = _storage(tmp_path, embedder=DeletingWhileEmbedding())
    report = embedding.embed_missing(batch_size=3)

    assert len(deleted) == 2
    assert (report.embedded, report.skipped) == (4, 0)
    with embedding.engine.connect() as connection:
        remaining = set(connection.execute(sa.select(memory_table.c.id)).scalars())
    assert {row.memory_id for row in _vector_rows(embedding)} == remaining == {m.id for m in saved} - set(deleted)
    assert embedding.count_to_embed() == 0
    embedding.close()
    storage.close()


class _Prescribed(Embedder):
    """Each text to the unit vector a test prescribes for its first word (`vectors`)."""

    model_id = "test-prescribed-384"
    dimension = 384

    def __init__(self, vectors: dict[str, Any]) -> None:
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        return [Embedding.quantize(self._vectors[text.split()[0]].tolist()) for text in texts]


def test_a_saves_similar_in_a_large_bank_names_a_close_memory_not_one_that_merely_stands_out(tmp_path: Path) -> None:
    # In a bank of hundreds of memories, some unrelated one always stands out from the rest about as far as a replaced
    # one does: hybrid's look-up also asks a cosine with the new memory of `similar_min_cosine` (ADR 0049).
    import numpy as np

    from memorybank_search.hybrid import HybridSearch

    generator = np.random.default_rng(7)

    def unit(vector: Any) -> Any:
        return vector / np.linalg.norm(vector)

    new, across, apart = (unit(generator.standard_normal(384)) for _ in range(3))
    across, apart = unit(across - (across @ new) * new), unit(apart - (apart @ new) * new)
    vectors = {f"filler{n}": unit(generator.standard_normal(384)) for n in range(300)}
    vectors |= {
        "newfact": new,
        "close": 0.7 * new + math.sqrt(1 - 0.7**2) * across,  # a cosine of 0.7 with the new memory
        "standout": 0.4 * new + math.sqrt(1 - 0.4**2) * apart,  # 0.4: far above random vectors' 0 ± 0.05
    }
    storage = _storage(tmp_path, embedder=_Prescribed(vectors))
    try:
        bank, owner = _bank(storage), User()
        saved_ids = {
            word: bank.save(owner, JsonValue({"content": f"{word} note"})).id for word in vectors if word != "newfact"
        }
        saved = bank.save(owner, JsonValue({"content": "newfact note"}))

        named = [result.memory.id for result in bank.similar(owner, saved)]

        assert named == [saved_ids["close"]], {v: k for k, v in saved_ids.items() if v in named}
        assert HybridSearch.similar_min_cosine == 0.5
    finally:
        storage.close()
