"""Offboarding purge on SQLite and MariaDB (the same test code): only the purged subject's rows change.

Each test fills the database with three users in two organizations (memories with contexts, API
tokens, panel sessions), purges one user or one organization, and compares a checksum of every
row of every table before and after: every row that is not the subject's is byte-for-byte equal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_mysql import PurgeUnsupportedError, SqlPurgeStore, SqlStorage
from adapters_mysql.retrying import ResilientPurgeStore
from adapters_mysql.revisions import VERSION_TABLE
from adapters_mysql.schema import TABLES
from memorybank import composition
from memorybank_core import InvalidInputError, MemoryBank, SaveRequest, TokenService
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, new_id
from memorybank_core.offboarding import (
    Offboarding,
    PurgeRun,
    PurgeSubject,
    first_digest,
)
from memorybank_core.panel_sessions import PanelSessions
from memorybank_search import OwnerIndexer
from tests.conftest import User, start_clock
from tests.sql.backends import services_on
from tests.sql.conftest import Statement
from tests.sql.owner_statements import (
    SEARCH_MODES,
    check_purge_statements_carry_one_owner,
    searching,
    vector_statement_kinds,
)
from tests.sql.test_retrying import CERTIFICATION_CONFLICT, LOST_DURING_COMMIT, driver_failure

ORG_A = new_id(ORGANIZATION_PREFIX)
ORG_B = new_id(ORGANIZATION_PREFIX)

#: Per table, the rows as the driver returns them (no type processing), keyed by primary key.
Snapshot = dict[str, dict[str, tuple[object, ...]]]


class Population:
    """Three users: alice and bob in organization A, carol in B; alice also saved under B."""

    def __init__(self, storage: SqlStorage) -> None:
        self.storage = storage
        self.alice = User(organization_id=ORG_A)
        self.alice_in_b = User(user_id=self.alice.user_id, organization_id=ORG_B)
        self.bob = User(organization_id=ORG_A)
        self.carol = User(organization_id=ORG_B)
        services = services_on(storage)
        self.bank: MemoryBank = services.bank
        self.tokens: TokenService = services.tokens
        self.sessions: PanelSessions = services.panel_sessions
        self.secrets: dict[str, str] = {}
        contexts = [{"snippet": "from the harbor chat", "conversation_id": "c1"}, {"snippet": "second"}]
        for user, count in ((self.alice, 7), (self.alice_in_b, 3), (self.bob, 5), (self.carol, 4)):
            for n in range(count):
                body = {"content": f"lighthouse note {n}", "contexts": contexts[: n % 3]}
                self.bank.save(user, SaveRequest.parse(body))
        for user in (self.alice, self.bob, self.carol):
            self.secrets[user.user_id] = self.tokens.issue(user_id=user.user_id, org_id=user.organization_id).secret
            self.sessions.start(user)
            self.sessions.issue_link(user_id=user.user_id, org_id=user.organization_id)
        # A token of alice's for organization B: an organization purge of A leaves it alone.
        self.tokens.issue(user_id=self.alice.user_id, org_id=ORG_B)

    def offboarding(self) -> Offboarding:
        return composition.build_offboarding(self.storage.purge_store, clock=start_clock())


@pytest.fixture
def population(storage: SqlStorage) -> Population:
    return Population(storage)


def snapshot(storage: SqlStorage) -> Snapshot:
    """Every row of every table memorybank owns (and the revision table), as raw driver values."""
    taken: Snapshot = {}
    with storage.engine.connect() as connection:
        for name in [table.name for table in TABLES] + [VERSION_TABLE]:
            # Our own table names, not input. exec_driver_sql: the driver's values, no type processing.
            rows = connection.exec_driver_sql(f"SELECT * FROM {name}").all()  # noqa: S608
            taken[name] = {str(row[0]): tuple(row) for row in rows}
    return taken


def checksum(row: tuple[object, ...]) -> str:
    return hashlib.sha256(repr(row).encode()).hexdigest()


def unchanged_except(before: Snapshot, after: Snapshot, *, theirs: Callable[[str, tuple[object, ...]], bool]) -> None:
    """Every row of `before` that is not `theirs` is in `after` with the same checksum."""
    compared = 0
    for table, rows in before.items():
        if table in {"api_token_revocations", "purge_run"}:
            continue  # the revocation counter and the run records move by design: checked by the tests
        for key, row in rows.items():
            if theirs(table, row):
                continue
            assert key in after[table], f"{table} row {key} disappeared"
            assert checksum(after[table][key]) == checksum(row), f"{table} row {key} changed"
            compared += 1
    assert compared > 10


def column(storage: SqlStorage, table: str, name: str) -> int:
    return [c.name for c in next(t for t in TABLES if t.name == table).c].index(name)


def no_orphan_context(storage: SqlStorage) -> None:
    with storage.engine.connect() as connection:
        orphans = connection.exec_driver_sql(
            "SELECT c.id FROM memory_context c LEFT JOIN memory m ON m.user_id = c.user_id AND m.id = c.memory_id "
            "WHERE m.id IS NULL"
        ).all()
    assert orphans == []


def test_purging_one_user_of_three_changes_no_row_of_anyone_else(population: Population) -> None:
    storage, alice = population.storage, population.alice
    before = snapshot(storage)
    generation = population.storage.token_store.revocation_generation()

    receipt = population.offboarding().purge_user(alice.user_id, batch_size=2)

    after = snapshot(storage)
    user_at = {name: column(storage, name, "user_id") for name in ("memory", "memory_context")}
    user_at |= {name: column(storage, name, "user_id") for name in ("api_token", "panel_credential", "memory_usage")}
    unchanged_except(before, after, theirs=lambda table, row: table in user_at and row[user_at[table]] == alice.user_id)
    # The quota ledger keeps no row of the purged user.
    assert alice.user_id in before["memory_usage"]
    assert alice.user_id not in after["memory_usage"]
    counts = receipt.counts
    assert (counts.memories, counts.contexts, counts.tokens, counts.panel_sessions) == (10, 9, 2, 2)
    assert receipt.batches == 5  # 7 + 3 memories, two at a time
    for table in ("memory", "memory_context"):
        assert not [row for row in after[table].values() if row[user_at[table]] == alice.user_id]
    for token in population.tokens.list(user_id=alice.user_id):
        assert token.revoked_at is not None
    assert population.tokens.authenticate(population.secrets[alice.user_id]) is None
    assert population.storage.token_store.revocation_generation() > generation
    assert population.bank.search(alice, query="lighthouse") == []
    assert population.bank.list(alice).memories == ()
    assert population.bank.list(population.alice_in_b).memories == ()
    assert len(population.bank.search(population.bob, query="lighthouse")) == 5
    no_orphan_context(storage)


def test_purging_one_organization_of_two_removes_what_was_saved_under_it_only(population: Population) -> None:
    storage = population.storage
    before = snapshot(storage)
    org_at = {name: column(storage, name, "org_id") for name in ("memory", "api_token", "panel_credential")}
    in_a = {key for key, row in before["memory"].items() if row[org_at["memory"]] == ORG_A}
    memory_of_context = column(storage, "memory_context", "memory_id")

    receipt = population.offboarding().purge_organization(ORG_A, batch_size=3)

    after = snapshot(storage)

    owner_of_memory = column(storage, "memory", "user_id")
    owners_in_a = {row[owner_of_memory] for key, row in before["memory"].items() if key in in_a}

    def theirs(table: str, row: tuple[object, ...]) -> bool:
        if table == "memory_context":
            return row[memory_of_context] in in_a
        if table == "memory_usage":
            return row[0] in owners_in_a  # dropped with their memories, rebuilt on their next save
        return table in org_at and row[org_at[table]] == ORG_A

    unchanged_except(before, after, theirs=theirs)
    counts = receipt.counts
    assert (counts.memories, counts.tokens, counts.panel_sessions) == (12, 2, 4)
    assert counts.contexts == sum(1 for row in before["memory_context"].values() if row[memory_of_context] in in_a)
    assert not in_a & set(after["memory"])
    # alice's memories under B, and her token for B, stay; her quota use counts just those.
    assert len(population.bank.list(population.alice_in_b).memories) == 3
    assert population.storage.store.usage(user_id=population.alice.user_id).memories == 3
    assert population.bank.search(population.bob, query="lighthouse") == []
    assert population.tokens.authenticate(population.secrets[population.bob.user_id]) is None
    assert population.tokens.authenticate(population.secrets[population.carol.user_id]) is not None
    no_orphan_context(storage)


def test_a_dry_run_counts_and_changes_nothing(population: Population) -> None:
    before = snapshot(population.storage)

    receipt = population.offboarding().purge_user(population.alice.user_id, dry_run=True)

    assert snapshot(population.storage) == before
    assert receipt.dry_run
    assert receipt.run_id is None
    assert receipt.digest is None
    counts = receipt.counts
    assert (counts.memories, counts.contexts, counts.tokens, counts.panel_sessions) == (10, 9, 2, 2)
    organization = population.offboarding().purge_organization(ORG_B, dry_run=True).counts
    assert (organization.memories, organization.tokens) == (7, 2)
    assert snapshot(population.storage) == before


BAD_IDS = [
    "",
    " ",
    "%",
    "*",
    "_",
    "usr_",
    "usr_%",
    "usr_*",
    "usr_%%%%%%%%%%%%%%%%%%%%%%%%%%",
    "usr__________________________",
    "usr_*************************",
    "org_01h455vb4pex5vsknk084sn02q",
    "USR_01H455VB4PEX5VSKNK084SN02Q",
    "usr_01h455vb4pex5vsknk084sn02q%",
    " usr_01h455vb4pex5vsknk084sn02q",
    "usr_01h455vb4pex5vsknk084sn02q OR 1=1",
    None,
    7,
    ["usr_01h455vb4pex5vsknk084sn02q"],
]


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_a_bad_or_wildcard_id_is_refused_with_nothing_changed(population: Population, bad: object) -> None:
    before = snapshot(population.storage)
    offboarding = population.offboarding()

    with pytest.raises(InvalidInputError) as user_refusal:
        offboarding.purge_user(bad)
    organization_id = bad.replace("usr_", "org_") if isinstance(bad, str) and bad.startswith("usr_") else bad
    if organization_id != "org_01h455vb4pex5vsknk084sn02q":
        with pytest.raises(InvalidInputError):
            offboarding.purge_organization(organization_id)
    with pytest.raises(InvalidInputError):
        offboarding.purge_organization(population.alice.user_id)  # a user's id is not an organization's

    assert user_refusal.value.problems[0].path == "user"
    assert snapshot(population.storage) == before


def test_a_batch_size_out_of_bounds_is_refused_before_anything(population: Population) -> None:
    before = snapshot(population.storage)
    for size in (0, -1, 10_001, True, "10"):
        with pytest.raises(InvalidInputError):
            population.offboarding().purge_user(population.alice.user_id, batch_size=size)
    assert snapshot(population.storage) == before


def test_a_rerun_after_a_finished_purge_removes_nothing_more(population: Population) -> None:
    first = population.offboarding().purge_user(population.alice.user_id)
    before = snapshot(population.storage)

    again = population.offboarding().purge_user(population.alice.user_id)

    assert again.run_id != first.run_id
    assert not again.resumed
    counts = again.counts
    assert (counts.memories, counts.contexts, counts.tokens, counts.panel_sessions) == (0, 0, 0, 0)
    assert again.digest == first_digest(PurgeSubject.user(population.alice.user_id))
    changed = {t for t in before if before[t] != snapshot(population.storage)[t]}
    assert changed == {"purge_run"}


@pytest.mark.parametrize("search", SEARCH_MODES)
def test_every_purge_statement_binds_one_owner(storage: SqlStorage, statements: list[Statement], search: str) -> None:
    with searching(storage, search) as searched:
        check_purge_statements_carry_one_owner(searched, statements)
    # The purge deleted the vectors under the same check (in either mode: a lexical server may purge vectors).
    assert "DELETE" in vector_statement_kinds(statements)


class FlakyPurgeStore(SqlPurgeStore):
    """A real purge store whose batches fail as scripted: the connection lost after the batch landed, or a conflict."""

    def __init__(self, storage: SqlStorage, script: list[tuple[int, bool]]) -> None:
        super().__init__(storage.engine)
        self.script = script

    def remove_batch(self, *, run: PurgeRun, user_id: str, org_id: str | None, limit: int, at: datetime) -> PurgeRun:
        if not self.script:
            return super().remove_batch(run=run, user_id=user_id, org_id=org_id, limit=limit, at=at)
        code, landed = self.script.pop(0)
        if landed:
            super().remove_batch(run=run, user_id=user_id, org_id=org_id, limit=limit, at=at)
        raise driver_failure(code)


def test_a_batch_lost_in_flight_is_retried_and_counted_once(population: Population) -> None:
    lost_after_commit, conflict = (LOST_DURING_COMMIT, True), (CERTIFICATION_CONFLICT, False)
    flaky = FlakyPurgeStore(population.storage, [lost_after_commit, conflict, lost_after_commit])
    offboarding = Offboarding(store=ResilientPurgeStore(flaky), clock=start_clock())

    receipt = offboarding.purge_user(population.alice.user_id, batch_size=3)

    counts = receipt.counts
    assert (counts.memories, counts.contexts, counts.tokens, counts.panel_sessions) == (10, 9, 2, 2)
    assert flaky.script == []
    assert population.bank.list(population.alice).memories == ()


def test_a_spider_head_refuses_to_purge_with_a_message(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'head.sqlite3'}")
    head = SqlStorage(engine=engine, indexer=OwnerIndexer(), display_url="head", spider_head=True)
    try:
        with pytest.raises(PurgeUnsupportedError, match="each data node"):
            composition.build_offboarding(head.purge_store)
    finally:
        head.close()


def test_a_pause_rests_between_batches_and_a_bad_one_is_refused(population: Population) -> None:
    rests: list[float] = []
    offboarding = Offboarding(store=population.storage.purge_store, clock=start_clock(), sleep=rests.append)
    before = snapshot(population.storage)
    for bad in (-1, 10_001, 0.5, "5"):
        with pytest.raises(InvalidInputError):
            offboarding.purge_user(population.alice.user_id, pause_ms=bad)
    assert snapshot(population.storage) == before

    receipt = offboarding.purge_user(population.alice.user_id, batch_size=4, pause_ms=250)

    assert receipt.batches == 3
    assert rests == [0.25, 0.25, 0.25]


def test_on_sqlite_no_token_of_a_purged_memory_stays_in_the_file(sqlite_storage: SqlStorage) -> None:
    services = services_on(sqlite_storage)
    leaving, staying = User(), User()
    for n in range(50):
        services.bank.save(staying, JsonValue({"content": f"harbor note {n}"}))
    services.bank.save(leaving, JsonValue({"content": "quixotiqzebrawords " * 20}))
    path = Path(str(sqlite_storage.engine.url.database))

    def in_file() -> bool:
        with sqlite_storage.engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        return b"quixotiqzebraword" in path.read_bytes()

    assert in_file()  # the check can see a token where there is one

    composition.build_offboarding(sqlite_storage.purge_store).purge_user(leaving.user_id)

    assert not in_file()
    assert len(services.bank.search(staying, query="harbor")) == 20
