"""The vector store's contract (`VectorStore`), for a backend with hybrid search.

A memory saved through the bank has its embedder's vector under its owner and model, exactly as the
embedder made it; no owner ever reads another's; a deleted or purged memory's vector is gone with it
(an embedding can be inverted to much of its text). Needs the backend's `vectors` and `embedder` (and,
for the purge, `purge_store`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memorybank_core import Embedder, Embedding, MemoryBank, SaveRequest, VectorStore
from memorybank_core.bodies import JsonValue
from memorybank_core.offboarding import Offboarding
from memorybank_core.requests import DELETE_ALL_CONFIRMATION, DeleteAll
from memorybank_search import embedding_text
from memorybank_testing.backends import Backend
from memorybank_testing.principals import User, start_clock


class VectorStoreContract:
    """Vectors keyed by owner and memory, written with the memory and removed with it."""

    @pytest.fixture
    def vectors(self, backend: Backend) -> VectorStore:
        return backend.require(backend.vectors, "vectors")

    @pytest.fixture
    def embedder(self, backend: Backend) -> Embedder:
        return backend.require(backend.embedder, "embedder")

    def owned(self, vectors: VectorStore, embedder: Embedder, user: User) -> dict[str, Embedding]:
        return dict(vectors.vectors(user_id=user.user_id, model_id=embedder.model_id))

    def test_a_saved_memory_has_its_embedders_vector_under_its_owner_only(
        self, bank: MemoryBank, vectors: VectorStore, embedder: Embedder, alice: User, bob: User
    ) -> None:
        mine = bank.save(alice, JsonValue({"content": "the harbor ferry leaves at nine", "tags": ["travel"]}))
        theirs = bank.save(bob, JsonValue({"content": "the harbor ferry is bob's"}))

        assert self.owned(vectors, embedder, alice) == {mine.id: embedder.embed([embedding_text(mine)])[0]}
        assert self.owned(vectors, embedder, bob) == {theirs.id: embedder.embed([embedding_text(theirs)])[0]}
        assert self.owned(vectors, embedder, User()) == {}

    def test_another_models_vectors_are_never_returned(
        self, bank: MemoryBank, vectors: VectorStore, embedder: Embedder, alice: User
    ) -> None:
        bank.save(alice, JsonValue({"content": "a memory with a vector"}))

        assert dict(vectors.vectors(user_id=alice.user_id, model_id=embedder.model_id + "-other")) == {}

    def test_a_deleted_memorys_vector_goes_with_it(
        self, bank: MemoryBank, vectors: VectorStore, embedder: Embedder, alice: User
    ) -> None:
        kept = bank.save(alice, JsonValue({"content": "kept lantern note"}))
        gone = bank.save(alice, JsonValue({"content": "deleted lantern note"}))
        batch = [bank.save(alice, JsonValue({"content": f"batch lantern {n}"})).id for n in range(2)]

        bank.delete(alice, memory_id=gone.id)
        assert set(self.owned(vectors, embedder, alice)) == {kept.id, *batch}
        bank.delete_batch(alice, DeleteAll(confirm=DELETE_ALL_CONFIRMATION, limit=2))

        assert set(self.owned(vectors, embedder, alice)) == {kept.id}

    def test_a_purged_users_vectors_are_gone_and_no_one_elses(
        self, backend: Backend, bank: MemoryBank, vectors: VectorStore, embedder: Embedder, alice: User, bob: User
    ) -> None:
        for n in range(3):
            bank.save(alice, JsonValue({"content": f"alice's quartz note {n}"}))
        bobs = bank.save(bob, JsonValue({"content": "bob's quartz note"}))
        offboarding = Offboarding(store=backend.require(backend.purge_store, "purge_store"), clock=start_clock())

        offboarding.purge_user(alice.user_id, batch_size=2)

        assert self.owned(vectors, embedder, alice) == {}
        assert set(self.owned(vectors, embedder, bob)) == {bobs.id}

    def test_a_save_and_its_similar_look_up_embed_the_new_memory_once(
        self, bank: MemoryBank, embedder: Embedder, alice: User, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        near = bank.save(alice, JsonValue({"content": "my dentist appointment is on tuesday at nine"}))
        bank.save(alice, JsonValue({"content": "the lighthouse keeper wrote about the storm"}))
        bank.search(alice, query="dentist")  # an engine that embeds on first use has the earlier memories' now
        embedded: list[str] = []
        embed = embedder.embed

        def counted(texts: Sequence[str]) -> list[Embedding]:
            embedded.extend(texts)
            return embed(texts)

        monkeypatch.setattr(embedder, "embed", counted)
        with bank.unit_of_work():  # as a facade answers a save (storage may read the look-up's vectors ahead)
            saved = bank.save(
                alice,
                SaveRequest.parse({"content": "my dentist appointment is now on tuesday at ten", "tags": ["health"]}),
            )
            similar = bank.similar(alice, saved)

        # The save's vector is the look-up's too: one text embedded for the whole save (the answer's `similar`).
        assert embedded == [embedding_text(saved)]
        assert [result.memory.id for result in similar] == [near.id]
