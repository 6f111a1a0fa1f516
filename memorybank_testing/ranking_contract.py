"""Ranking contract: an engine returns exactly what the in-memory reference returns, the same ids
with the same scores and the same reasons (`match`), and no other user's saves or deletes ever change
it, nor whether a memory is returned at all (hybrid search's inclusion rule reads the owner's bank only).

It holds an engine to `memorybank_search`'s one analyzer and BM25 (the SQL engines and the
reference all rank through `memorybank_search.rank_candidates`). An engine with a scoring of its
own runs the other contracts, not this one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import uuid_utils
from typeid import TypeID

from memorybank_core import MemoryBank, SearchResult, limits
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX
from memorybank_testing.backends import BackendFactory, settled
from memorybank_testing.principals import User, bank_over

#: Memories with repeated, shared and rare words, tags and snippets, short tokens and CJK.
CORPUS: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("The service deploys nightly to the staging cluster", ("infra",), ("we deploy at 2am",)),
    ("Deployment of the billing service failed twice in Q3", ("infra", "billing"), ()),
    ("I write Go at work and Python at home", ("languages",), ("go is fast",)),
    ("Our AI roadmap for Q3 covers retrieval and ranking", ("ai", "roadmap"), ()),
    ("Lunch in 東京 was ラーメン again", ("travel",), ("東京でラーメンを食べた",)),
    ("The lighthouse keeper sent an e-mail about the storm", (), ("email from the keeper",)),
    ("Remember to renew the passport before the trip", ("travel",), ()),
    ("C++ build of the renderer takes twenty minutes", ("build",), ("c++ templates are slow",)),
    ("Node.js service uses too much memory under load", ("infra",), ()),
    ("The café near the office serves the best croissants", ("food",), ()),
    ("Deploy freeze starts in December; deployments resume in January", ("infra",), ()),
    ("Staging cluster upgrade is planned for the weekend", ("infra",), ("upgrade the cluster",)),
    ("Grandma's recipe uses cardamom and saffron", ("food", "family"), ()),
    ("My manager prefers written updates over meetings", ("work",), ()),
    ("我的猫很可爱 and it sleeps all day", ("pets",), ()),
    ("Running shoes size 44, bought in Q1", ("health",), ()),
    ("Launch day went well 🚀 thanks to the team", ("🎉", "launch"), ("ship it ❤️",)),
]
QUERIES = [
    "deployment",
    "deploys",
    "Go",
    "AI",
    "Q3",
    "東京",
    "ラーメン",
    "猫",
    "cafe",
    "email",
    "c++",
    "nodejs",
    "what did I say about the staging cluster?",
    "infra",
    "travel plans",
    "keeper storm lighthouse",
    "the",
    "🚀",
    "🎉 launch party",
    "❤",
]


def han_text(size: int, *, start: int = 0) -> str:
    """`size` Han characters in a fixed order that does not repeat soon: text of two search terms a character."""
    return "".join(chr(0x4E00 + (start + 7919 * index) % 3000) for index in range(size))


#: A memory far past the bound on the terms a memory indexes (`limits.INDEXED_TERMS_MAX`, ADR 0041): every field full
#: of Han text (two terms a character, about 144,000 in all), a word at the start of its content, a tag, a word at
#: the start of its first snippet (still inside the bound: content and tags are always indexed whole, snippets fill
#: what is left in order) and one at the end of its last snippet (past it).
LONG_CJK_MEMORY: dict[str, object] = {
    "content": "zeppelin " + han_text(limits.CONTENT.max - len("zeppelin ")),
    "tags": ["archive"],
    "contexts": [
        {"snippet": "marmalade " + han_text(limits.SNIPPET.max - len("marmalade "), start=1)},
        *({"snippet": han_text(limits.SNIPPET.max, start=n)} for n in range(2, limits.CONTEXTS_MAX)),
        {"snippet": han_text(limits.SNIPPET.max - len(" quokka"), start=99) + " quokka"},
    ],
}


def sequential_ids() -> Callable[[str], str]:
    """An id minter that yields the same ids in the same order in every bank."""
    counter = itertools.count(1)

    def new_id(prefix: str) -> str:
        return str(TypeID.from_uuid(uuid_utils.UUID(int=next(counter)), prefix=prefix))

    return new_id


def bank_of(factory: BackendFactory) -> MemoryBank:
    return bank_over(factory.fresh(), new_id=sequential_ids())


def fill(bank: MemoryBank, user: User) -> None:
    for content, tags, snippets in CORPUS:
        request = {"content": content, "tags": list(tags), "contexts": [{"snippet": s} for s in snippets]}
        bank.save(user, JsonValue(request))


def ranking(results: list[SearchResult]) -> list[tuple[str, float, str]]:
    # Which memories, in which order, with which scores, found for which reason: all of it must match.
    return [(result.memory.id, result.score, result.match) for result in results]


def a_user(n: int) -> User:
    def fixed(prefix: str) -> str:
        return str(TypeID.from_uuid(uuid_utils.UUID(int=10**6 + n), prefix=prefix))

    return User(user_id=fixed(USER_PREFIX), organization_id=fixed(ORGANIZATION_PREFIX))


class RankingContract:
    """Every engine ranks as the in-memory reference does, and one user never moves another's scores."""

    @pytest.mark.parametrize("query", QUERIES)
    def test_every_engine_returns_the_references_results_in_the_references_order(
        self, backend_factory: BackendFactory, query: str
    ) -> None:
        alice = a_user(1)
        reference, tested = bank_of(backend_factory.reference()), bank_of(backend_factory)
        fill(reference, alice)
        fill(tested, alice)
        expected = ranking(reference.search(alice, query=query, limit=10))
        found = ranking(tested.search(alice, query=query, limit=10))
        assert expected, f"the reference finds nothing for {query!r}: the corpus no longer covers it"
        # Exactly: one analyzer, one token scheme and one BM25 compute every engine's scores.
        assert found == expected

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("Go", "I write Go at work and Python at home"),
            ("AI", "Our AI roadmap for Q3 covers retrieval and ranking"),
            ("Q3", "Deployment of the billing service failed twice in Q3"),
            ("deployment", "The service deploys nightly to the staging cluster"),
            ("東京", "Lunch in 東京 was ラーメン again"),
            ("猫", "我的猫很可爱 and it sleeps all day"),
            ("🚀", "Launch day went well 🚀 thanks to the team"),
            ("🎉", "Launch day went well 🚀 thanks to the team"),
        ],
    )
    def test_short_words_stems_and_cjk_find_their_memories(
        self, backend_factory: BackendFactory, query: str, expected: str
    ) -> None:
        alice = a_user(1)
        bank = bank_of(backend_factory)
        fill(bank, alice)
        assert expected in [result.memory.content for result in bank.search(alice, query=query, limit=10)]

    def test_another_users_saves_and_deletes_never_change_a_users_scores(self, backend_factory: BackendFactory) -> None:
        alice = a_user(1)
        bank = bank_of(backend_factory)
        fill(bank, alice)
        before = {query: ranking(bank.search(alice, query=query, limit=20)) for query in QUERIES}
        # A heavy corpus of other users, built from the very same words, skewing every statistic.
        others = [a_user(n) for n in range(2, 5)]
        for other in others:
            for _ in range(2):
                fill(bank, other)
        assert {query: ranking(bank.search(alice, query=query, limit=20)) for query in QUERIES} == before
        # ... and all of it deleted again (MySQL keeps deleted rows in its FULLTEXT statistics until OPTIMIZE).
        for other in others:
            page = bank.list(other, limit=100)
            assert len(page.memories) == 2 * len(CORPUS)
            for memory in page.memories:
                bank.delete(other, memory_id=memory.id)
        assert {query: ranking(bank.search(alice, query=query, limit=20)) for query in QUERIES} == before

    def test_a_memory_past_the_index_bound_is_found_by_its_first_terms_and_not_by_words_past_it(
        self, backend_factory: BackendFactory
    ) -> None:
        alice = a_user(1)
        reference, tested = bank_of(backend_factory.reference()), bank_of(backend_factory)
        fill(reference, alice)
        reference.save(alice, JsonValue(LONG_CJK_MEMORY))
        fill(tested, alice)
        long = tested.save(alice, JsonValue(LONG_CJK_MEMORY))

        def by_words(query: str) -> list[str]:
            expected = ranking(reference.search(alice, query=query, limit=10))
            # A document of 20,000 words is the one InnoDB most often shows moments after its commit.
            found = settled(
                lambda: tested.search(alice, query=query, limit=10),
                lambda found: ranking(found) == expected,
                backend_factory.index_lag,
            )
            assert ranking(found) == expected, query
            return [result.memory.id for result in found if result.match in {"words", "both"}]

        # Its content, its tag, its first snippet and a Han phrase lie within the bound: found by their words.
        for query in ("zeppelin", "archive", "marmalade", han_text(6)):
            assert long.id in by_words(query), query
        # The last snippet's words lie past the bound: stored, returned with the memory, but not searchable.
        assert long.id not in by_words("quokka")
        assert tested.revisions(alice, memory_id=long.id).memory.contexts[-1].snippet.endswith(" quokka")

    def test_a_question_the_bank_holds_nothing_about_finds_nothing_whatever_others_hold(
        self, backend_factory: BackendFactory
    ) -> None:
        alice, bob = a_user(1), a_user(2)
        bank = bank_of(backend_factory)
        fill(bank, alice)
        # Words no memory of the corpus holds (nor, under the test embedder, any of their hashed buckets).
        question = "zebra walrus"
        assert bank.search(alice, query=question, limit=20) == []
        # Another person's bank full of exactly that changes nothing for Alice ...
        for _ in range(3):
            bank.save(bob, JsonValue({"content": "The zebra and the walrus", "tags": ["zebra"]}))
        assert bank.search(alice, query=question, limit=20) == []
        assert [r.memory.content for r in bank.search(bob, query=question, limit=20)][:1] == [
            "The zebra and the walrus"
        ]
        # ... and once Alice writes it herself, she finds it by its words.
        mine = bank.save(alice, JsonValue({"content": "We saw a zebra and a walrus"}))
        found = bank.search(alice, query=question, limit=20)
        assert found[0].memory.id == mine.id
        assert found[0].match in {"words", "both"}
