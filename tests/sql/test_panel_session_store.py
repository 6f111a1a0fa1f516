"""PanelSessions over every PanelSessionStore: one-time links, expiring revocable sessions, hashes only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from memorybank_core import (
    READ_SCOPE,
    WRITE_SCOPE,
    FixedClock,
    InMemoryPanelSessionStore,
    InvalidInputError,
    PanelSessions,
    PanelSessionStore,
    TokenPrincipal,
)
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.sql.backends import MysqlFactory, SqliteFactory

START = datetime(2026, 7, 2, 12, 0, 0, 250_000, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def store(request: pytest.FixtureRequest) -> Iterator[PanelSessionStore]:
    """An empty panel session store of each kind; the in-memory one is the reference."""
    if request.param == "memory":
        yield InMemoryPanelSessionStore()
        return
    factory: SqliteFactory | MysqlFactory = request.getfixturevalue(f"{request.param}_factory")
    factory.fresh()
    yield factory.storage.panel_sessions


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def sessions(store: PanelSessionStore, clock: FixedClock) -> PanelSessions:
    return PanelSessions(store=store, clock=clock, session_ttl=timedelta(hours=1))


def person() -> TokenPrincipal:
    return TokenPrincipal(
        user_id=new_id(USER_PREFIX),
        organization_id=new_id(ORGANIZATION_PREFIX),
        scopes=frozenset({READ_SCOPE, WRITE_SCOPE}),
    )


def test_a_link_signs_in_once_as_its_user_with_both_scopes(sessions: PanelSessions) -> None:
    who = person()
    link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)

    started = sessions.redeem_link(link.code)

    assert started is not None
    assert sessions.authenticate(started.secret) == who
    assert sessions.redeem_link(link.code) is None  # used


def test_an_expired_link_or_session_opens_nothing(sessions: PanelSessions, clock: FixedClock) -> None:
    who = person()
    late_link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id, ttl=timedelta(minutes=10))
    started = sessions.start(who)

    clock.current = START + timedelta(hours=1, seconds=1)

    assert sessions.redeem_link(late_link.code) is None
    assert sessions.authenticate(started.secret) is None


def test_sign_out_and_revoke_end_sessions_and_unused_links(sessions: PanelSessions) -> None:
    who, other = person(), person()
    signed_out, revoked, others = sessions.start(who), sessions.start(who), sessions.start(other)
    unused = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)

    assert sessions.end(signed_out.secret) is True
    assert sessions.end(signed_out.secret) is False
    assert sessions.authenticate(signed_out.secret) is None
    assert sessions.revoke_user(who.user_id) == 2  # the other session and the unused link
    assert sessions.authenticate(revoked.secret) is None
    assert sessions.redeem_link(unused.code) is None
    assert sessions.authenticate(others.secret) == other


def test_a_session_keeps_only_the_scopes_its_principal_had(sessions: PanelSessions) -> None:
    reader = TokenPrincipal(
        user_id=new_id(USER_PREFIX), organization_id=new_id(ORGANIZATION_PREFIX), scopes=frozenset({READ_SCOPE})
    )
    nobody = TokenPrincipal(
        user_id=new_id(USER_PREFIX), organization_id=new_id(ORGANIZATION_PREFIX), scopes=frozenset({"x"})
    )

    principal = sessions.authenticate(sessions.start(reader).secret)

    assert principal is not None
    assert principal.scopes == {READ_SCOPE}
    with pytest.raises(InvalidInputError):
        sessions.start(nobody)


@pytest.mark.parametrize(
    "forged",
    ["", "mbs_", "mbs_" + "A" * 43, "mbl_" + "A" * 43, "mbk_" + "A" * 43, "mbs_" + "x" * 5000, "Bearer mbs_x"],
)
def test_forged_secrets_open_nothing(sessions: PanelSessions, forged: str) -> None:
    sessions.start(person())

    assert sessions.authenticate(forged) is None
    assert sessions.redeem_link(forged) is None
    assert sessions.end(forged) is False


def test_a_link_code_is_not_a_session_and_a_session_is_not_a_link(sessions: PanelSessions) -> None:
    who = person()
    link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)
    started = sessions.start(who)
    swapped_link = "mbs_" + link.code.removeprefix("mbl_")

    assert sessions.authenticate(link.code) is None
    assert sessions.authenticate(swapped_link) is None
    assert sessions.redeem_link("mbl_" + started.secret.removeprefix("mbs_")) is None
    assert sessions.redeem_link(link.code) is not None


# Fixed ids, not new_id(): parameter ids must be the same in every collection (pytest-xdist workers).
@pytest.mark.parametrize(
    ("user_id", "org_id", "ttl", "field"),
    [
        ("alice", "org_01m8x6adcre6rrj9b4p4ykymky", timedelta(minutes=10), "user"),
        ("usr_01m8x6adcre6rrj9b4paysnzyy", "acme", timedelta(minutes=10), "org"),
        ("usr_01m8x6adcre6rrj9b4pe3xzk4a", "org_01m8x6adcre6rrj9b4pj521tp0", timedelta(0), "ttl"),
        ("usr_01m8x6adcre6rrj9b4pnjs9e7s", "org_01m8x6adcre6rrj9b4pj521tp0", timedelta(days=2), "ttl"),
    ],
)
def test_a_bad_link_request_is_refused_naming_the_field(
    sessions: PanelSessions, user_id: str, org_id: str, ttl: timedelta, field: str
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        sessions.issue_link(user_id=user_id, org_id=org_id, ttl=ttl)

    assert [p.path for p in raised.value.problems] == [field]


def test_only_hashes_of_secrets_are_stored(request: pytest.FixtureRequest) -> None:
    factory: SqliteFactory = request.getfixturevalue("sqlite_factory")
    factory.fresh()
    sessions = PanelSessions(store=factory.storage.panel_sessions)
    who = person()
    link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)
    started = sessions.start(who)

    with factory.storage.engine.connect() as connection:
        stored = " ".join(str(v) for row in connection.execute(sa.text("SELECT * FROM panel_credential")) for v in row)

    assert link.code not in stored
    assert started.secret not in stored
    assert link.code.removeprefix("mbl_") not in stored


def test_two_browsers_racing_with_one_link_get_one_session(sessions: PanelSessions) -> None:
    who = person()
    link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)
    results: list[object] = []
    barrier = threading.Barrier(4)

    def redeem() -> None:
        barrier.wait()
        results.append(sessions.redeem_link(link.code))

    threads = [threading.Thread(target=redeem) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(r is not None for r in results) == 1
