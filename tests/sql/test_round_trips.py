"""A request's round trips to MariaDB: how few, and that the fewer still see every revocation and gate change.

Counted on the driver, as `benchmarks.counted_serve` counts them: each query, commit, rollback and
ping a mysqlclient connection sends. A request here is what a memory route runs in its one unit of
work: the bearer check, then the use case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from adapters_mysql import MysqlOwnerScopedSearch, SqlStorage
from memorybank import bootstrap
from memorybank.settings import Settings
from memorybank_core import (
    Embedder,
    JsonValue,
    MemoryBank,
    MemoryControls,
    MemoryDisabledError,
    QuotaExceededError,
    SearchResult,
    SubjectKind,
    TokenService,
)
from tests.conftest import User
from tests.contract.embedders import HashedTermsEmbedder
from tests.sql.backends import MysqlFactory
from tests.sql.memories import make_memory, new_user

pytestmark = pytest.mark.mysql


class _RoundTrips:
    """Counts what the driver sends to the server."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # Imported here: a develop install without the mysql extra still collects this module (it deselects it).
        import MySQLdb.connections

        self.count = 0
        connection = MySQLdb.connections.Connection
        for name in ("query", "commit", "rollback", "ping"):
            monkeypatch.setattr(connection, name, self._counted(getattr(connection, name)))

    def _counted(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(connection: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(connection, *args, **kwargs)

        return counted


class _Worker:
    """One server process's view of the database: its own engine, pool, token and controls caches."""

    def __init__(self, url: str, embedder: Embedder | None = None) -> None:
        runtime = bootstrap.build(Settings.for_database(url), embedder=embedder)
        self.storage: SqlStorage = runtime.storage
        services = runtime.services
        self.tokens: TokenService = services.tokens
        self.bank: MemoryBank = services.bank
        assert services.controls is not None
        self.controls: MemoryControls = services.controls

    def request(self, secret: str, use_case: Callable[[Any], object]) -> object:
        """The bearer check and the use case in one unit of work, as a memory route runs them."""
        with self.bank.unit_of_work():
            principal = self.tokens.authenticate(secret)
            assert principal is not None
            return use_case(principal)


@pytest.fixture
def workers(mysql_factory: MysqlFactory) -> Iterator[tuple[_Worker, _Worker]]:
    mysql_factory.fresh()
    first, second = _Worker(mysql_factory.url), _Worker(mysql_factory.url)
    yield first, second
    first.storage.close()
    second.storage.close()


def _saved_with_similar(bank: MemoryBank, principal: Any, body: dict[str, Any]) -> list[SearchResult]:
    """A save as `POST /v1/memory` runs it: the save, then its `similar` look-up, in the request's unit."""
    return bank.similar(principal, bank.save(principal, JsonValue(body)))


@pytest.mark.parametrize("search", ["lexical", "hybrid"])
def test_list_search_and_save_with_its_similar_look_up_make_two_three_and_four_round_trips(
    mysql_factory: MysqlFactory, search: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mysql_factory.fresh()
    worker = _Worker(mysql_factory.url, HashedTermsEmbedder() if search == "hybrid" else None)
    alice = User()
    secret = worker.tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    body = {"content": "The lighthouse keeper's notes", "contexts": [{"snippet": "first"}, {"snippet": "second"}]}
    # Unrelated to everything saved before, the warm-up's too.
    unrelated = iter([{"content": "Quartz crystals grow slowly in caves"}, {"content": "Tuesday's ferry was late"}])
    calls: dict[str, Callable[[Any], object]] = {
        "list": lambda principal: worker.bank.list(principal, limit=20),
        "search": lambda principal: worker.bank.search(principal, query="lighthouse", limit=20),
        "save, one similar": lambda principal: _saved_with_similar(worker.bank, principal, body),
        "save, none similar": lambda principal: _saved_with_similar(worker.bank, principal, next(unrelated)),
    }
    try:
        for call in calls.values():
            worker.request(secret, call)  # warm: the pool's connection, the token and controls caches
        counted: dict[str, int] = {}
        trips = _RoundTrips(monkeypatch)
        found: dict[str, object] = {}
        for name, call in calls.items():
            before = trips.count
            found[name] = worker.request(secret, call)
            counted[name] = trips.count - before
    finally:
        worker.storage.close()

    # The look-up's candidates (and, hybrid, the owner's vectors) ride the save's commit; the one it finds is
    # loaded in one more read (ADR 0042). A hybrid search reads the vectors with its candidates.
    assert counted == {"list": 2, "search": 3, "save, one similar": 4, "save, none similar": 3}
    assert len(cast(list[SearchResult], found["save, one similar"])) >= 1
    assert found["save, none similar"] == []


def test_a_revocation_in_one_worker_refuses_the_very_next_request_in_another(
    workers: tuple[_Worker, _Worker],
) -> None:
    first, second = workers
    alice = User()
    issued = first.tokens.issue(user_id=alice.user_id, org_id=alice.organization_id)
    second.request(issued.secret, lambda principal: second.bank.list(principal))  # cached as verified there

    first.tokens.revoke(issued.token.id)

    with second.bank.unit_of_work():
        assert second.tokens.authenticate(issued.secret) is None


def test_the_kill_switch_in_one_worker_refuses_the_very_next_request_in_another_and_lifts_as_fast(
    workers: tuple[_Worker, _Worker],
) -> None:
    first, second = workers
    alice = User()
    secret = second.tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    second.request(secret, lambda principal: second.bank.list(principal))  # the controls cached there

    first.controls.set_gate(SubjectKind.ALL, "*", enabled=False)
    with pytest.raises(MemoryDisabledError):
        second.request(secret, lambda principal: second.bank.list(principal))

    first.controls.set_gate(SubjectKind.ALL, "*", enabled=True)
    assert second.request(secret, lambda principal: second.bank.list(principal)) is not None


def test_a_quota_set_in_one_worker_applies_to_the_next_save_in_another(workers: tuple[_Worker, _Worker]) -> None:
    first, second = workers
    alice = User()
    secret = second.tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    second.request(secret, lambda principal: second.bank.save(principal, JsonValue({"content": "one"})))

    first.controls.set_quota(SubjectKind.USER, alice.user_id, max_memories=1)

    with pytest.raises(QuotaExceededError):
        second.request(secret, lambda principal: second.bank.save(principal, JsonValue({"content": "two"})))


def test_a_saves_similar_look_up_analyzes_its_query_once_and_keeps_nothing_for_the_next_request(
    mysql_factory: MysqlFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memorybank_search import OwnerIndexer

    mysql_factory.fresh()
    worker = _Worker(mysql_factory.url)
    alice, bob = User(), User()
    secrets = {
        user.user_id: worker.tokens.issue(user_id=user.user_id, org_id=user.organization_id).secret
        for user in (alice, bob)
    }
    analyzed: list[tuple[str, str]] = []
    original = OwnerIndexer.query_token_groups

    def counted(indexer: OwnerIndexer, user_id: str, query: str) -> list[tuple[str, ...]]:
        analyzed.append((user_id, query))
        return original(indexer, user_id, query)

    monkeypatch.setattr(OwnerIndexer, "query_token_groups", counted)
    text = "The lighthouse keeper's notes on the northern storms"
    try:
        worker.request(secrets[alice.user_id], lambda p: _saved_with_similar(worker.bank, p, {"content": text}))
        first = list(analyzed)
        found = worker.request(secrets[alice.user_id], lambda p: _saved_with_similar(worker.bank, p, {"content": text}))
        # Another user's search for the same words analyzes them again: what one request analyzed is its own.
        worker.request(secrets[bob.user_id], lambda p: worker.bank.search(p, query=text, limit=5))
    finally:
        worker.storage.close()

    # The candidates are read ahead with the save (ADR 0042) and ranked after it: one analysis serves both.
    assert first == [(alice.user_id, text)]
    assert len(cast(list[SearchResult], found)) == 1
    assert analyzed == [(alice.user_id, text), (alice.user_id, text), (bob.user_id, text)]


def test_past_a_bound_a_short_querys_frequencies_take_one_round_trip_and_a_long_querys_none(
    mysql_factory: MysqlFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mysql_factory.fresh()
    worker = _Worker(mysql_factory.url)
    owner = new_user()
    words = [f"word{n}" for n in range(40)]
    try:
        for n in range(3):
            memory = make_memory(owner, " ".join(words) + f" kettle{n}", snippets=(), tags=())
            worker.storage.store.add(user_id=owner, memory=memory)
        # Two of the three candidates fit: the search keeps them and counts each token's rows over all three.
        engine = MysqlOwnerScopedSearch(worker.storage.engine, worker.storage.indexer, candidate_limit=2)
        engine.search(user_id=owner, query="word0", limit=5)  # warm the pool's connection
        trips = _RoundTrips(monkeypatch)
        counted: dict[int, int] = {}
        for asked in (1, len(words)):
            before = trips.count
            with worker.bank.unit_of_work():  # as a request's search runs
                hits = engine.search(user_id=owner, query=" ".join(words[:asked]), limit=5)
            counted[asked] = trips.count - before
            assert len(hits) == 2
    finally:
        worker.storage.close()

    # The candidates, the best of them, then every token's frequency over all the owner's rows in one more (a round
    # trip each before); a long query's are estimated from the candidates read (InnoDB takes ~1 ms a token).
    assert counted == {1: 3, len(words): 2}
