"""The owner-scoped engines on SQLite and MariaDB: tokens, bound SQL, the candidate bound,
tag collisions, re-indexing and the upgrade from revision 0001.
"""

from __future__ import annotations

import math
import re
from collections import namedtuple
from collections.abc import Sequence
from datetime import timedelta
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
from alembic import command
from hypothesis import given, settings
from hypothesis import strategies as st

import adapters_mysql.owner_search as owner_search
import memorybank_search.indexer as indexer_module
from adapters_mysql import (
    MysqlOwnerScopedSearch,
    SchemaNotReadyError,
    SqliteOwnerScopedSearch,
    SqlStorage,
    rewrite_fence,
)
from adapters_mysql.revisions import alembic_config
from adapters_mysql.schema import memory
from memorybank_core import SearchHit, SearchHits
from memorybank_search import SEARCH_VERSION, OwnerIndexer
from memorybank_search.indexer import MAX_TOKEN_LENGTH, TAG_LENGTH, encode_term, owner_tag
from memorybank_testing import InMemoryFactory
from memorybank_testing.backends import settled
from tests.sql.backends import MysqlFactory, SqliteFactory, storage_at
from tests.sql.conftest import Statement
from tests.sql.memories import SAVED_AT, make_memory, new_user

_TOKEN = re.compile(rf"[0-9a-z_]{{{TAG_LENGTH + 1},{MAX_TOKEN_LENGTH}}}")


def engine_of(
    storage: SqlStorage,
    *,
    candidate_limit: int,
    terms_budget: int = owner_search.DEFAULT_TERMS_BUDGET,
    like_candidates: int = owner_search.DEFAULT_LIKE_CANDIDATES,
) -> MysqlOwnerScopedSearch | SqliteOwnerScopedSearch:
    engine = MysqlOwnerScopedSearch if storage.dialect_name == "mysql" else SqliteOwnerScopedSearch
    return engine(
        storage.engine,
        storage.indexer,
        candidate_limit=candidate_limit,
        terms_budget=terms_budget,
        like_candidates=like_candidates,
    )


def scored_as(hits: Sequence[SearchHit], scores: dict[str, float]) -> bool:
    """Whether every hit has the score `scores` gives its memory (to twelve digits)."""
    return all(
        hit.memory_id in scores and math.isclose(hit.score, scores[hit.memory_id], rel_tol=1e-12) for hit in hits
    )


def long_words(n: int, *words: str) -> str:
    """`words`, then enough fillers of memory `n`'s own that it holds more than `INLINE_TERMS_MAX` terms (its stored
    terms are read after the candidates, by id)."""
    return " ".join([*words, *(f"filler{n}x{i}" for i in range(owner_search.INLINE_TERMS_MAX + 20))])


@settings(max_examples=300)
@given(st.text(max_size=300), st.text(min_size=1, max_size=64))
def test_every_stored_token_is_one_innodb_word_of_legal_length(text: str, user_id: str) -> None:
    memory_row = make_memory(new_user(), "placeholder")
    document = OwnerIndexer().document(memory_row)
    tokens = [encode_term(owner_tag(user_id), term) for term in OwnerIndexer().analyzer.document_terms(text)]
    for token in [*tokens, *document.search_terms.split()]:
        assert _TOKEN.fullmatch(token), token


def test_the_owner_tag_is_stable_short_and_differs_between_owners() -> None:
    assert owner_tag("usr_a") == owner_tag("usr_a")
    assert owner_tag("usr_a") != owner_tag("usr_b")
    assert re.fullmatch(r"[0-9a-z]{8}", owner_tag("usr_a"))


def test_short_and_long_and_foreign_terms_are_encoded_into_word_characters() -> None:
    tag = owner_tag("usr_a")
    assert encode_term(tag, "go") == tag + "go"
    for term in ("c++", "東京", "3.11", "x" * 200, "don't"):
        token = encode_term(tag, term)
        assert token.startswith(tag + "_")
        assert _TOKEN.fullmatch(token)
    assert encode_term(tag, "東京") != encode_term(tag, "京東")


def test_the_store_writes_the_search_document_in_the_same_row(storage: SqlStorage) -> None:
    owner = new_user()
    saved = make_memory(owner, "Deploys nightly", tags=("infra",), snippets=("Go service",))
    storage.store.add(user_id=owner, memory=saved)
    with storage.engine.connect() as connection:
        row = connection.execute(sa.select(memory).where(memory.c.id == saved.id)).one()
    tag = owner_tag(owner)
    assert row.search_terms == " ".join(tag + term for term in ["deploy", "night", "infra", "go", "servic"])
    assert row.doc_length == 5
    assert row.search_version == SEARCH_VERSION


def test_the_query_is_one_bound_parameter_and_the_owner_is_always_bound(
    storage: SqlStorage, statements: list[Statement]
) -> None:
    owner = new_user()
    storage.store.add(user_id=owner, memory=make_memory(owner, "secret lighthouse words"))
    statements.clear()
    storage.search_engine.search(user_id=owner, query="secret lighthouse", limit=5)
    searches = [s for s in statements if "MATCH" in s.sql]
    assert searches
    tokens = " ".join(storage.indexer.query_tokens(owner, "secret lighthouse"))
    for search in searches:
        assert "lighthous" not in search.sql
        assert owner_tag(owner) not in search.sql
        assert search.binds(owner)
    assert any(s.binds(tokens) or s.binds(" OR ".join(f'"{t}"' for t in tokens.split())) for s in searches)
    if storage.dialect_name == "mysql":
        assert all("IN NATURAL LANGUAGE MODE" in s.sql and "BOOLEAN" not in s.sql for s in searches)


def test_a_tag_collision_costs_time_but_never_leaks(storage: SqlStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer_module, "owner_tag", lambda _user_id: "samesame")
    alice, mallory = new_user(), new_user()
    mine = make_memory(alice, "the harbor lighthouse")
    storage.store.add(user_id=alice, memory=mine)
    storage.store.add(user_id=mallory, memory=make_memory(mallory, "the harbor lighthouse and more harbor"))
    with storage.engine.connect() as connection:
        tags = connection.execute(sa.select(memory.c.search_terms)).scalars().all()
    assert all(terms.startswith("samesame") for terms in tags)
    hits = storage.search_engine.search(user_id=alice, query="harbor lighthouse", limit=10)
    assert [hit.memory_id for hit in hits] == [mine.id]


def test_past_the_candidate_bound_scores_still_use_all_the_owners_rows(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory
) -> None:
    owner = new_user()
    for n in range(12):
        words = "kettle " * (1 + n % 4) + ("meadow " if n % 3 == 0 else "") + f"filler{n}"
        storage.store.add(
            user_id=owner, memory=make_memory(owner, words, snippets=(), tags=(), created_at=SAVED_AT + timedelta(n))
        )
    unbounded = {
        h.memory_id: h.score
        for h in settled(
            lambda: engine_of(storage, candidate_limit=1000).search(user_id=owner, query="kettle meadow", limit=50),
            lambda hits: len(hits) == 12,
            sql_factory.index_lag,
        )
    }
    bounded = settled(
        lambda: engine_of(storage, candidate_limit=5).search(user_id=owner, query="kettle meadow", limit=50),
        lambda hits: scored_as(hits, unbounded),
        sql_factory.index_lag,
    )
    assert len(unbounded) == 12
    assert len(bounded) == 5
    for hit in bounded:
        assert hit.score == pytest.approx(unbounded[hit.memory_id], rel=1e-12)


def test_long_memories_rank_as_short_ones_do_with_their_terms_read_after_the_candidates(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory
) -> None:
    owner = new_user()
    short = make_memory(owner, "kettle kettle meadow", snippets=(), tags=())
    long = make_memory(owner, long_words(1, "kettle", "meadow", "meadow"), snippets=(), tags=())
    for saved in (short, long):
        storage.store.add(user_id=owner, memory=saved)
    reference = InMemoryFactory().fresh()  # the reference engine, as the ranking contract builds it
    for saved in (short, long):
        reference.store.add(user_id=owner, memory=saved)

    expected = reference.search_engine.search(user_id=owner, query="kettle meadow", limit=5)

    hits = settled(
        lambda: engine_of(storage, candidate_limit=1000).search(user_id=owner, query="kettle meadow", limit=5),
        lambda hits: [(hit.memory_id, hit.score) for hit in hits] == [(hit.memory_id, hit.score) for hit in expected],
        sql_factory.index_lag,
    )

    assert [(hit.memory_id, hit.score) for hit in hits] == [(hit.memory_id, hit.score) for hit in expected]
    assert {hit.memory_id for hit in hits} == {short.id, long.id}


def test_past_the_terms_budget_the_best_candidates_are_kept_with_exact_scores(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory
) -> None:
    owner = new_user()
    for n in range(8):
        words = ["kettle"] * (1 + n % 4) + (["meadow"] if n % 3 == 0 else [])
        storage.store.add(
            user_id=owner,
            memory=make_memory(owner, long_words(n, *words), snippets=(), tags=(), created_at=SAVED_AT + timedelta(n)),
        )
    per_memory = owner_search.INLINE_TERMS_MAX + 25
    unbounded = {
        h.memory_id: h.score
        for h in settled(
            lambda: engine_of(storage, candidate_limit=1000).search(user_id=owner, query="kettle meadow", limit=50),
            lambda hits: len(hits) == 8,
            sql_factory.index_lag,
        )
    }
    bounded = settled(
        lambda: engine_of(storage, candidate_limit=1000, terms_budget=3 * per_memory).search(
            user_id=owner, query="kettle meadow", limit=50
        ),
        lambda hits: bool(hits) and scored_as(hits, unbounded),
        sql_factory.index_lag,
    )

    assert len(unbounded) == 8
    # Three memories' terms fit the budget: three are ranked, with the owner's statistics over all eight.
    assert isinstance(bounded, SearchHits)
    assert bounded.candidate_count == 3
    assert len(bounded) == 3
    for hit in bounded:
        assert hit.score == pytest.approx(unbounded[hit.memory_id], rel=1e-12)


def test_past_the_terms_budget_a_long_query_ranks_the_newest_that_fit_with_no_statement_per_token(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory, statements: list[Statement]
) -> None:
    owner = new_user()
    words = [f"word{n}" for n in range(owner_search.EXACT_FREQUENCIES_MAX * 3)]
    saved = [make_memory(owner, long_words(n, *words), snippets=(), tags=()) for n in range(6)]
    for memory_row in saved:
        storage.store.add(user_id=owner, memory=memory_row)
    per_memory = len(words) + owner_search.INLINE_TERMS_MAX + 20
    engine = engine_of(storage, candidate_limit=1000, terms_budget=2 * per_memory)
    newest = sorted((m.id for m in saved), reverse=True)[:2]
    settled(
        lambda: engine.search(user_id=owner, query=" ".join(words), limit=10),
        lambda hits: [hit.memory_id for hit in hits] == newest,
        sql_factory.index_lag,
    )
    statements.clear()

    hits = engine.search(user_id=owner, query=" ".join(words), limit=10)

    # The two newest (ids are time-ordered) fit the budget; the four others are estimated to hold the query's words
    # as the two do.
    assert [hit.memory_id for hit in hits] == sorted((m.id for m in saved), reverse=True)[:2]
    assert all(hit.score > 0 and hit.coverage == pytest.approx(1.0) for hit in hits)
    assert len(statements) <= 3  # the candidates, the two memories' terms (and SQLite's transaction)


def test_a_long_candidate_gone_when_its_terms_are_read_is_left_out(
    storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = new_user()
    kept = make_memory(owner, long_words(1, "kettle"), snippets=(), tags=())
    storage.store.add(user_id=owner, memory=kept)
    engine = engine_of(storage, candidate_limit=1000)
    found = type(engine)._candidates

    def with_a_vanished_row(self: object, *args: object) -> list[object]:
        # A save's look-up reads its candidates in the save's round trip: a long one may be deleted before the
        # look-up reads its terms.
        rows = list(found(self, *args))  # type: ignore[arg-type]
        vanished = rows[0]._asdict() | {"id": "mem_00000000000000000000000000", "search_terms": None}
        return [*rows, namedtuple("Row", rows[0]._fields)(**vanished)]

    monkeypatch.setattr(type(engine), "_candidates", with_a_vanished_row)

    hits = engine.search(user_id=owner, query="kettle", limit=5)

    assert [hit.memory_id for hit in hits] == [kept.id]


def test_reindex_rewrites_stale_rows_and_only_them(storage: SqlStorage) -> None:
    owner = new_user()
    stale, current = make_memory(owner, "juniper harbor"), make_memory(owner, "juniper meadow")
    for saved in (stale, current):
        storage.store.add(user_id=owner, memory=saved)
    with storage.engine.begin() as connection:
        connection.execute(
            memory.update().where(memory.c.id == stale.id).values(search_terms=None, doc_length=0, search_version=0)
        )
    assert [h.memory_id for h in storage.search_engine.search(user_id=owner, query="harbor", limit=5)] == []
    assert storage.count_to_reindex() == 1
    batches: list[int] = []
    assert storage.reindex(batch_size=1, progress=batches.append).rewritten == 1
    assert batches == [1]
    assert storage.count_to_reindex() == 0
    assert [h.memory_id for h in storage.search_engine.search(user_id=owner, query="harbor", limit=5)] == [stale.id]
    assert storage.count_to_reindex(everything=True) == 2
    assert storage.reindex(everything=True, batch_size=1).rewritten == 2
    hits = storage.search_engine.search(user_id=owner, query="juniper", limit=5)
    assert {h.memory_id for h in hits} == {stale.id, current.id}


def test_migrating_from_revision_0001_indexes_the_rows_it_holds(new_database_url: str) -> None:
    storage = storage_at(new_database_url)
    try:
        with storage.engine.begin() as connection:
            command.upgrade(alembic_config(connection), "0001")
            owner = new_user()
            connection.execute(
                sa.table(
                    "memory",
                    *(
                        sa.column(name)
                        for name in ("id", "user_id", "org_id", "content", "source", "created_at", "updated_at")
                    ),
                ).insert(),
                [
                    {
                        "id": "mem_01m8vgptfke8as43r5emqcrs44",
                        "user_id": owner,
                        "org_id": "org_01m8vgptfke8as43r5emqcrs44",
                        "content": "written by version one about the harbor",
                        "source": "chat",
                        "created_at": "2026-07-02 12:00:00.000000",
                        "updated_at": "2026-07-02 12:00:00.000000",
                    }
                ],
            )
        storage.migrate()
        storage.check_ready()
        hits = storage.search_engine.search(user_id=owner, query="harbor", limit=5)
        assert [h.memory_id for h in hits] == ["mem_01m8vgptfke8as43r5emqcrs44"]
        assert storage.count_to_reindex() == 0
    finally:
        storage.close()


def test_check_ready_names_a_missing_owner_scoped_structure_and_migrate_restores_it(new_database_url: str) -> None:
    storage = storage_at(new_database_url)
    try:
        storage.migrate()
        with storage.engine.begin() as connection:
            if storage.dialect_name == "mysql":
                connection.exec_driver_sql("DROP INDEX memory_search_terms_fulltext ON memory")
            else:
                connection.exec_driver_sql("DROP TRIGGER memory_terms_fts_after_insert")
        with pytest.raises(SchemaNotReadyError, match=r"(memory_search_terms_fulltext|memory_terms_fts).* is missing"):
            storage.check_ready()
        storage.migrate()
        storage.check_ready()
        owner = new_user()
        storage.store.add(user_id=owner, memory=make_memory(owner, "restored harbor"))
        assert len(storage.search_engine.search(user_id=owner, query="harbor", limit=5)) == 1
    finally:
        storage.close()


def test_a_search_the_rewrite_fence_keeps_sending_back_answers_and_says_so(
    storage: SqlStorage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A rotation whose batches land between every look: after its last attempt the search answers
    # with what it saw (never an error) and logs that it gave up, without the query.
    owner = new_user()
    saved = make_memory(owner, "a quiet harbour at dusk")
    storage.store.add(user_id=owner, memory=saved)
    ticks = iter(range(10**6))
    monkeypatch.setattr(OwnerIndexer, "rewrite_pending", property(lambda _self: True))
    monkeypatch.setattr(rewrite_fence, "generation", lambda *_args, **_kwargs: next(ticks))

    with caplog.at_level("WARNING", logger="memorybank.storage"):
        hits = storage.search_engine.search(user_id=owner, query="harbour", limit=5)

    assert [hit.memory_id for hit in hits] == [saved.id]
    gave_up = [r.getMessage() for r in caplog.records if "rewrite fence" in r.getMessage()]
    assert gave_up == [f"search gave up on the rewrite fence after {owner_search.FENCED_ATTEMPTS} attempts"]
    assert next(ticks) == 2 * owner_search.FENCED_ATTEMPTS


def test_a_save_and_its_similar_look_up_analyze_the_look_ups_query_once(
    storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 512 Han characters are 10 ms of analysis: a dialect that reads the candidates ahead keeps the tokens for the
    # look-up (ADR 0042); one that cannot leaves the analysis to the look-up, outside the save's write transaction.
    owner = new_user()
    analyzed: list[str] = []
    original = storage.indexer.query_token_groups

    def counted(user_id: str, query: str) -> list[tuple[str, ...]]:
        analyzed.append(query)
        return original(user_id, query)

    monkeypatch.setattr(storage.indexer, "query_token_groups", counted)
    saved = make_memory(owner, "the lighthouse keeper wrote about the storm and the harbor")
    with storage.unit_of_work():  # the request's: the use cases' units open inside it
        with storage.unit_of_work():
            storage.store.add(user_id=owner, memory=saved)
        with storage.unit_of_work():
            hits = storage.search_engine.search_like(
                user_id=owner, memory_id=saved.id, query=saved.similar_query, limit=4
            )
    assert [hit.memory_id for hit in hits] == [saved.id]
    assert analyzed == [saved.similar_query]


#: A bank where every memory shares the look-up's common words, and one resembles the new memory closely.
_TEAM_NOTES = [f"the team meeting notes about the project {word}" for word in ("alpha", "beta", "gamma", "delta")]
_RESEMBLED = "the harbor lighthouse keeper moved to lisbon with the team project"
_NEW = "the harbor lighthouse keeper moved to porto with the team project"


def _like_bank(storage: SqlStorage, resembled: str, index_lag: float) -> tuple[str, str, str]:
    """The bank, once the full-text index shows all of it (InnoDB: moments after the saves, ADR 0046)."""
    owner = new_user()
    contents = [*(_TEAM_NOTES * 3), resembled]
    for index, content in enumerate(contents):
        saved = make_memory(owner, content, created_at=SAVED_AT + timedelta(seconds=index))
        storage.store.add(user_id=owner, memory=saved)
    resembled_id = saved.id  # the last saved
    new = make_memory(owner, _NEW, created_at=SAVED_AT + timedelta(minutes=1))
    storage.store.add(user_id=owner, memory=new)
    settled(
        lambda: engine_of(storage, candidate_limit=1000).search(user_id=owner, query="team project", limit=50),
        lambda hits: len(hits) == len(contents) + 1,
        index_lag,
    )
    return owner, resembled_id, new.id


@pytest.mark.parametrize("resembled", [_RESEMBLED, long_words(1, _RESEMBLED)], ids=["short", "long"])
def test_a_look_up_reads_only_its_best_candidates_and_still_names_the_memory_it_resembles(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory, resembled: str
) -> None:
    # A save's `similar` look-up asks with every word of the new memory, which the whole bank shares here: it reads the
    # few the full-text index ranks highest (ADR 0048); a long one's terms are read after them, by id.
    owner, resembled_id, new_id = _like_bank(storage, resembled, sql_factory.index_lag)
    engine = engine_of(storage, candidate_limit=1000, like_candidates=3)

    hits = engine.search_like(user_id=owner, memory_id=new_id, query=_NEW, limit=4)

    assert [hit.memory_id for hit in hits][:2] == [new_id, resembled_id]
    assert isinstance(hits, SearchHits)
    assert hits.candidate_count == 3


def test_a_bounded_look_up_scores_as_the_exact_one_while_every_match_is_read(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory
) -> None:
    owner, _resembled_id, new_id = _like_bank(storage, _RESEMBLED, sql_factory.index_lag)
    exact = engine_of(storage, candidate_limit=1000).search(user_id=owner, query=_NEW, limit=20)

    like = engine_of(storage, candidate_limit=1000).search_like(user_id=owner, memory_id=new_id, query=_NEW, limit=20)

    assert [hit.memory_id for hit in like] == [hit.memory_id for hit in exact]
    assert scored_as(like, {hit.memory_id: hit.score for hit in exact})


def test_a_look_up_right_after_its_save_ranks_the_new_memory_the_index_does_not_show_yet(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # InnoDB shows a committed memory's words moments later (ADR 0046): the look-up that follows its save may not find
    # the new memory by them, and without the new memory's own score nothing would be named. Here the index lags
    # for certain: its candidates come without the new memory, and count it out of the matches too.
    owner, resembled_id, new_id = _like_bank(storage, _RESEMBLED, sql_factory.index_lag)
    caught_up = engine_of(storage, candidate_limit=1000).search_like(
        user_id=owner, memory_id=new_id, query=_NEW, limit=4
    )
    behind = engine_of(storage, candidate_limit=1000)
    read = behind._like_candidates

    def lagging(*arguments: object) -> list[object]:
        rows = read(*arguments)  # type: ignore[arg-type]
        return [SimpleNamespace(**{**row._asdict(), "matching": row.matching - 1}) for row in rows if row.id != new_id]

    monkeypatch.setattr(behind, "_like_candidates", lagging)

    hits = behind.search_like(user_id=owner, memory_id=new_id, query=_NEW, limit=4)

    assert [hit.memory_id for hit in hits][:2] == [new_id, resembled_id]
    assert [hit.memory_id for hit in hits] == [hit.memory_id for hit in caught_up]
    assert scored_as(hits, {hit.memory_id: hit.score for hit in caught_up})


def test_a_look_up_for_a_memory_deleted_since_its_save_answers_from_the_others(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory
) -> None:
    owner, resembled_id, new_id = _like_bank(storage, _RESEMBLED, sql_factory.index_lag)
    storage.store.delete(user_id=owner, memory_id=new_id)

    hits = engine_of(storage, candidate_limit=1000).search_like(user_id=owner, memory_id=new_id, query=_NEW, limit=4)

    assert new_id not in [hit.memory_id for hit in hits]
    assert [hit.memory_id for hit in hits][:1] == [resembled_id]
