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
    InMemoryTokenStore,
    InvalidInputError,
    PanelSessions,
    PanelSessionStore,
    TokenPrincipal,
    TokenService,
    TokenStore,
)
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.sql.backends import MysqlFactory, SqliteFactory

START = datetime(2026, 7, 2, 12, 0, 0, 250_000, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def stores(request: pytest.FixtureRequest) -> Iterator[tuple[PanelSessionStore, TokenStore]]:
    """An empty panel session store of each kind, and the token store beside it; in memory is the reference."""
    if request.param == "memory":
        yield InMemoryPanelSessionStore(), InMemoryTokenStore()
        return
    factory: SqliteFactory | MysqlFactory = request.getfixturevalue(f"{request.param}_factory")
    factory.fresh()
    yield factory.storage.panel_sessions, factory.storage.token_store


@pytest.fixture
def store(stores: tuple[PanelSessionStore, TokenStore]) -> PanelSessionStore:
    return stores[0]


@pytest.fixture
def tokens(stores: tuple[PanelSessionStore, TokenStore], clock: FixedClock) -> TokenService:
    return TokenService(store=stores[1], clock=clock)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def sessions(store: PanelSessionStore, tokens: TokenService, clock: FixedClock) -> PanelSessions:
    return PanelSessions(store=store, tokens=tokens, clock=clock, session_ttl=timedelta(hours=1))


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


def test_a_session_made_from_a_token_lives_only_while_the_token_does(
    sessions: PanelSessions, tokens: TokenService
) -> None:
    who = person()
    issued = tokens.issue(user_id=who.user_id, org_id=who.organization_id)
    kept = tokens.issue(user_id=who.user_id, org_id=who.organization_id)
    from_token = [sessions.start(tokens.authenticate(issued.secret) or who) for _ in range(2)]
    from_kept = sessions.start(tokens.authenticate(kept.secret) or who)
    from_link = sessions.redeem_link(sessions.issue_link(user_id=who.user_id, org_id=who.organization_id).code)
    assert from_link is not None
    assert sessions.authenticate(from_token[0].secret) == who

    tokens.revoke(issued.token.id)

    # Refused at once, before anything ends them: the check follows the token, not the session row.
    assert [sessions.authenticate(started.secret) for started in from_token] == [None, None]
    assert sessions.end_made_from(issued.token.id) == 2
    assert sessions.end_made_from(issued.token.id) == 0
    assert sessions.authenticate(from_kept.secret) == who
    assert sessions.authenticate(from_link.secret) == who


def test_without_a_token_service_a_session_made_from_a_token_is_refused(store: PanelSessionStore) -> None:
    tokens = TokenService(store=InMemoryTokenStore())
    who = person()
    principal = tokens.authenticate(tokens.issue(user_id=who.user_id, org_id=who.organization_id).secret)
    assert principal is not None
    started = PanelSessions(store=store, tokens=tokens).start(principal)

    assert PanelSessions(store=store).authenticate(started.secret) is None
