"""The panel's sign-in store's contract (`PanelSessionStore`), driven through `PanelSessions`.

One-time links, sessions that expire and can be ended one at a time, all of a user's at once, or all
those made from a revoked API token; forged and swapped secrets open nothing; two browsers racing
with one link get one session. Needs the backend's `panel_sessions` and `token_store`.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from memorybank_core import (
    READ_SCOPE,
    WRITE_SCOPE,
    FixedClock,
    InMemoryTokenStore,
    InvalidInputError,
    PanelSessions,
    PanelSessionStore,
    TokenPrincipal,
    TokenService,
)
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_testing.backends import Backend

START = datetime(2026, 7, 2, 12, 0, 0, 250_000, tzinfo=UTC)

FORGED = ["", "mbs_", "mbs_" + "A" * 43, "mbl_" + "A" * 43, "mbk_" + "A" * 43, "mbs_" + "x" * 5000, "Bearer mbs_x"]


def person(scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})) -> TokenPrincipal:
    """A signed-in person, in an organization of their own."""
    return TokenPrincipal(user_id=new_id(USER_PREFIX), organization_id=new_id(ORGANIZATION_PREFIX), scopes=scopes)


class PanelSessionContract:
    """Links, sessions, expiry, sign-out and revocation, as the panel and `memorybank panel-link` use them."""

    @pytest.fixture
    def panel_store(self, backend: Backend) -> PanelSessionStore:
        return backend.require(backend.panel_sessions, "panel_sessions")

    @pytest.fixture
    def panel_clock(self) -> FixedClock:
        return FixedClock(START)

    @pytest.fixture
    def tokens(self, backend: Backend, panel_clock: FixedClock) -> TokenService:
        return TokenService(store=backend.require(backend.token_store, "token_store"), clock=panel_clock)

    @pytest.fixture
    def sessions(self, panel_store: PanelSessionStore, tokens: TokenService, panel_clock: FixedClock) -> PanelSessions:
        return PanelSessions(store=panel_store, tokens=tokens, clock=panel_clock, session_ttl=timedelta(hours=1))

    def test_a_link_signs_in_once_as_its_user_with_both_scopes(self, sessions: PanelSessions) -> None:
        who = person()
        link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)

        started = sessions.redeem_link(link.code)

        assert started is not None
        assert sessions.authenticate(started.secret) == who
        assert sessions.redeem_link(link.code) is None  # used

    def test_an_expired_link_or_session_opens_nothing(self, sessions: PanelSessions, panel_clock: FixedClock) -> None:
        who = person()
        late_link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id, ttl=timedelta(minutes=10))
        started = sessions.start(who)

        panel_clock.current = START + timedelta(hours=1, seconds=1)

        assert sessions.redeem_link(late_link.code) is None
        assert sessions.authenticate(started.secret) is None

    def test_sign_out_and_revoke_end_sessions_and_unused_links_of_that_user_only(self, sessions: PanelSessions) -> None:
        who, other = person(), person()
        signed_out, revoked, others = sessions.start(who), sessions.start(who), sessions.start(other)
        unused = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)

        assert sessions.end(signed_out.secret) is True
        assert sessions.end(signed_out.secret) is False
        assert sessions.authenticate(signed_out.secret) is None
        assert sessions.revoke_user(who.user_id) == 2  # the other session and the unused link
        assert sessions.revoke_user(who.user_id) == 0
        assert sessions.authenticate(revoked.secret) is None
        assert sessions.redeem_link(unused.code) is None
        assert sessions.authenticate(others.secret) == other

    def test_a_session_keeps_only_the_scopes_its_principal_had(self, sessions: PanelSessions) -> None:
        principal = sessions.authenticate(sessions.start(person(frozenset({READ_SCOPE}))).secret)

        assert principal is not None
        assert principal.scopes == {READ_SCOPE}
        with pytest.raises(InvalidInputError):
            sessions.start(person(frozenset({"x"})))

    def test_only_a_session_made_from_an_api_token_inherits_its_organization_scopes(
        self, sessions: PanelSessions, tokens: TokenService
    ) -> None:
        # The team's bank (ADR 0038) is granted per token: a panel session opened with that token may use it,
        # a session from any other principal (a link, an issuer, a host) holding org scopes keeps none of them.
        team = frozenset({READ_SCOPE, WRITE_SCOPE, "org:read", "org:write"})
        who = person(team)
        issued = tokens.issue(user_id=who.user_id, org_id=who.organization_id, scopes=team)
        from_token = sessions.authenticate(sessions.start(tokens.authenticate(issued.secret) or who).secret)
        from_issuer = sessions.authenticate(sessions.start(who).secret)

        assert from_token is not None
        assert from_token.scopes == team
        assert from_issuer is not None
        assert from_issuer.scopes == {READ_SCOPE, WRITE_SCOPE}
        with pytest.raises(InvalidInputError):
            sessions.start(person(frozenset({"org:read"})))

    def test_forged_secrets_open_nothing(self, sessions: PanelSessions) -> None:
        sessions.start(person())

        for forged in FORGED:
            assert (sessions.authenticate(forged), sessions.redeem_link(forged), sessions.end(forged)) == (
                None,
                None,
                False,
            ), forged[:20]

    def test_a_link_code_is_not_a_session_and_a_session_is_not_a_link(self, sessions: PanelSessions) -> None:
        who = person()
        link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)
        started = sessions.start(who)

        assert sessions.authenticate(link.code) is None
        assert sessions.authenticate("mbs_" + link.code.removeprefix("mbl_")) is None
        assert sessions.redeem_link("mbl_" + started.secret.removeprefix("mbs_")) is None
        assert sessions.redeem_link(link.code) is not None

    def test_a_bad_link_request_is_refused_naming_the_field(self, sessions: PanelSessions) -> None:
        user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
        for user_id, org_id, ttl, field in [
            ("alice", org, timedelta(minutes=10), "user"),
            (user, "acme", timedelta(minutes=10), "org"),
            (user, org, timedelta(0), "ttl"),
            (user, org, timedelta(days=2), "ttl"),
        ]:
            with pytest.raises(InvalidInputError) as raised:
                sessions.issue_link(user_id=user_id, org_id=org_id, ttl=ttl)
            assert [p.path for p in raised.value.problems] == [field]

    def test_two_browsers_racing_with_one_link_get_one_session(self, sessions: PanelSessions) -> None:
        who = person()
        link = sessions.issue_link(user_id=who.user_id, org_id=who.organization_id)
        results: list[object] = []
        barrier = threading.Barrier(4)

        def redeem() -> None:
            barrier.wait(timeout=30)
            results.append(sessions.redeem_link(link.code))

        threads = [threading.Thread(target=redeem) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        assert len(results) == 4
        assert sum(r is not None for r in results) == 1

    def test_a_session_made_from_a_token_lives_only_while_the_token_does(
        self, sessions: PanelSessions, tokens: TokenService
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

    def test_without_a_token_service_a_session_made_from_a_token_is_refused(
        self, panel_store: PanelSessionStore
    ) -> None:
        tokens = TokenService(store=InMemoryTokenStore())
        who = person()
        principal = tokens.authenticate(tokens.issue(user_id=who.user_id, org_id=who.organization_id).secret)
        assert principal is not None
        started = PanelSessions(store=panel_store, tokens=tokens).start(principal)

        assert PanelSessions(store=panel_store).authenticate(started.secret) is None
