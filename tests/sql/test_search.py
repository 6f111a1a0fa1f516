"""The owner-scoped SQL search engines (SQLite FTS5, MySQL FULLTEXT): safety on any input, ranking, owner scoping."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters_mysql import MysqlOwnerScopedSearch, SqliteOwnerScopedSearch, SqlStorage
from memorybank_core import limits
from tests.sql.backends import storage_at
from tests.sql.memories import SAVED_AT, make_memory, new_user

#: Input that breaks a raw FTS5 MATCH or MySQL boolean mode; every engine must take it in stride.
NASTY_QUERIES = [
    "AND",
    "OR NOT",
    "NEAR(",
    "NEAR(lighthouse keeper, 2)",
    "c++",
    "e-mail",
    "don't",
    '"unbalanced',
    'foo"bar',
    "*",
    "light*",
    "user_id:x",
    "content:lighthouse",
    "(go",
    "-this",
    "+required -excluded ~maybe <less >more",
    "@distance 3",
    "'); DROP TABLE memory;--",
    "^lighthouse",
    "\\",
    "%_%",
    # MariaDB's FULLTEXT parser rejects these with ERROR 1064 even in natural-language mode.
    "%*",
    'lighthouse ""*',
    '"" *',
    '"quoted phrase" *',
]


@pytest.fixture(scope="module")
def fts5_bank() -> Iterator[SqlStorage]:
    """An in-memory SQLite bank with a few memories, for property tests."""
    storage = storage_at("sqlite://")
    storage.initialize()
    owner = "usr_property"
    for n, content in enumerate(["lighthouse keeper", "e-mail from the keeper", "c++ and rust", "东京 tower"]):
        storage.store.add(user_id=owner, memory=make_memory(owner, content, created_at=SAVED_AT + timedelta(n)))
    yield storage
    storage.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=limits.QUERY.max))
def test_fts5_search_never_raises_on_any_text(fts5_bank: SqlStorage, text: str) -> None:
    hits = fts5_bank.search_engine.search(user_id="usr_property", query=text, limit=limits.SEARCH_LIMIT.max)
    assert all(hit.score > 0 for hit in hits)
    if not fts5_bank.indexer.query_tokens("usr_property", text):
        assert hits == []


#: Operators of both query languages, and words of every length, to stress the query parsers.
_QUERY_PIECES = st.sampled_from([*"*\"+-~<>()@%_\\' :^.", "lighthouse", "keeper", "xé", "東京", "AND", "NEAR", "OR"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.lists(_QUERY_PIECES, max_size=12).map("".join), st.text(max_size=40)))
def test_no_query_text_makes_either_engine_raise(storage: SqlStorage, text: str) -> None:
    owner = "usr_fuzz"
    if not storage.store.list(user_id=owner, limit=1, after=None):
        storage.store.add(user_id=owner, memory=make_memory(owner, "the lighthouse keeper in 東京都"))
    hits = storage.search_engine.search(user_id=owner, query=text, limit=5)
    assert all(hit.score > 0 for hit in hits)


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_nasty_queries_never_raise_and_stay_owner_scoped(storage: SqlStorage, query: str) -> None:
    owner, other = new_user(), new_user()
    mine = make_memory(owner, "the lighthouse keeper sends e-mail about c++ and required things")
    storage.store.add(user_id=owner, memory=mine)
    storage.store.add(user_id=other, memory=make_memory(other, "the lighthouse keeper sends e-mail"))
    hits = storage.search_engine.search(user_id=owner, query=query, limit=10)
    assert {hit.memory_id for hit in hits} <= {mine.id}
    assert all(hit.score > 0 for hit in hits)


def test_scores_are_positive_best_first_and_ties_go_to_the_newer_id(storage: SqlStorage) -> None:
    owner = new_user()
    filler = new_user()
    for n in range(6):
        # Rows without the words keep the words rare table-wide, as in real use.
        storage.store.add(user_id=filler, memory=make_memory(filler, f"unrelated filler row {n}"))
    strong = make_memory(owner, "zeppelin zeppelin zeppelin hangar")
    twins = [make_memory(owner, "zeppelin hangar at dawn") for _ in range(2)]
    for memory in [strong, *twins]:
        storage.store.add(user_id=owner, memory=memory)
    hits = storage.search_engine.search(user_id=owner, query="zeppelin", limit=10)
    assert [hit.memory_id for hit in hits] == [strong.id, *sorted((t.id for t in twins), reverse=True)]
    assert hits[0].score > hits[1].score == hits[2].score > 0
    assert [h.memory_id for h in storage.search_engine.search(user_id=owner, query="zeppelin", limit=1)] == [strong.id]


def test_searching_is_case_and_accent_insensitive(storage: SqlStorage) -> None:
    owner = new_user()
    memory = make_memory(owner, "Meeting at the Café Müller in Zürich")
    storage.store.add(user_id=owner, memory=memory)
    for query in ("cafe", "CAFÉ", "muller", "zurich"):
        assert [h.memory_id for h in storage.search_engine.search(user_id=owner, query=query, limit=5)] == [memory.id]


def test_deleted_memories_are_not_found(storage: SqlStorage) -> None:
    owner = new_user()
    gone, kept = make_memory(owner, "quasar observation log"), make_memory(owner, "quasar spectrum notes")
    for memory in (gone, kept):
        storage.store.add(user_id=owner, memory=memory)
    storage.store.delete(user_id=owner, memory_id=gone.id)
    assert [h.memory_id for h in storage.search_engine.search(user_id=owner, query="quasar", limit=5)] == [kept.id]


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("'); DROP TABLE memory;--", "drop table"),
        ("100% of the_underscore% wildcards", "wildcards"),
        (r"C:\Users\léa\notes\backslashes", "backslashes"),
        ('it\'s a "quoted" thing', "quoted"),
        ("bell\x07ringer tab\tseparated escape\x1b[31m", "ringer"),
        ("parrot 🦜 mountain 🏔️", "parrot"),
        ("北京市 is a city", "北京市"),
    ],
)
def test_hostile_text_is_searchable_by_the_words_it_holds(storage: SqlStorage, text: str, query: str) -> None:
    owner = new_user()
    memory = make_memory(owner, text)
    storage.store.add(user_id=owner, memory=memory)
    assert [h.memory_id for h in storage.search_engine.search(user_id=owner, query=query, limit=5)] == [memory.id]


def test_short_words_cjk_and_emoji_are_found_on_both_dialects(storage: SqlStorage) -> None:
    # InnoDB never indexes a word under 3 characters, nor `東京`, nor `🚀`: the tagged tokens are all it sees.
    owner = new_user()
    memory = make_memory(owner, "learn Go and AI in 東京 🚀")
    storage.store.add(user_id=owner, memory=memory)
    for query in ("go", "AI", "東京", "🚀"):
        hits = storage.search_engine.search(user_id=owner, query=query, limit=5)
        assert [h.memory_id for h in hits] == [memory.id]


def test_the_fts5_index_follows_inserts_and_deletes(sqlite_storage: SqlStorage) -> None:
    owner = new_user()
    memories = [make_memory(owner, f"nebula catalogue entry {n}") for n in range(3)]
    for memory in memories:
        sqlite_storage.store.add(user_id=owner, memory=memory)
    sqlite_storage.store.delete(user_id=owner, memory_id=memories[0].id)
    with sqlite_storage.engine.connect() as connection:
        connection.execute(sa.text("INSERT INTO memory_terms_fts(memory_terms_fts) VALUES ('integrity-check')"))
    hits = sqlite_storage.search_engine.search(user_id=owner, query="nebula", limit=5)
    assert {hit.memory_id for hit in hits} == {memory.id for memory in memories[1:]}


def test_the_default_engine_of_each_dialect_is_owner_scoped(storage: SqlStorage) -> None:
    assert isinstance(storage.search_engine.inner, (SqliteOwnerScopedSearch, MysqlOwnerScopedSearch))
