"""`memorybank panel-link`: a one-time sign-in URL for the panel, and `--revoke`."""

from __future__ import annotations

import re

import pytest

from memorybank import bootstrap
from memorybank.settings import Settings
from memorybank_core import PanelSessions, TokenPrincipal
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_core.tokens import KNOWN_SCOPES
from tests.cli.conftest import Run
from tests.sql.backends import storage_at

URL = re.compile(r"^http://127\.0\.0\.1:8000/#link=(mbl_[A-Za-z0-9_-]{43})$")


def _sessions(db_url: str) -> tuple[PanelSessions, object]:
    storage = storage_at(db_url)
    return PanelSessions(store=storage.panel_sessions), storage


def _redeem(db_url: str, code: str) -> TokenPrincipal | None:
    storage = storage_at(db_url)
    try:
        started = PanelSessions(store=storage.panel_sessions).redeem_link(code)
    finally:
        storage.close()
    return None if started is None else started.principal


def test_panel_link_prints_a_one_time_url_that_signs_the_user_in_once(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    run("token", "create", "--db", db_url, "--user", user, "--org", new_id(ORGANIZATION_PREFIX))

    outcome = run("panel-link", "--db", db_url, "--user", user, "--org", org)

    assert outcome.status == 0, outcome.err
    assert f"one-time sign-in link for {user}, valid until" in outcome.out
    match = URL.match(outcome.last_line)
    assert match
    principal = _redeem(db_url, match.group(1))
    assert principal is not None
    assert (principal.user_id, principal.organization_id) == (user, org)
    assert _redeem(db_url, match.group(1)) is None


def test_panel_link_takes_the_org_from_the_users_latest_token_and_the_url_from_url(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    run("token", "create", "--db", db_url, "--user", user, "--org", org)

    outcome = run("panel-link", "--db", db_url, "--user", user, "--url", "https://bank.example/", "--ttl", "2h")

    assert outcome.status == 0, outcome.err
    assert outcome.last_line.startswith("https://bank.example/#link=mbl_")
    principal = _redeem(db_url, outcome.last_line.rpartition("=")[2])
    assert principal is not None
    assert principal.organization_id == org


def test_panel_link_revoke_ends_the_users_sessions_and_unused_links(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    run("token", "create", "--db", db_url, "--user", user, "--org", org)
    unused = run("panel-link", "--db", db_url, "--user", user, "--org", org).last_line.rpartition("=")[2]
    used = run("panel-link", "--db", db_url, "--user", user, "--org", org).last_line.rpartition("=")[2]
    storage = storage_at(db_url)
    sessions = PanelSessions(store=storage.panel_sessions)
    started = sessions.redeem_link(used)
    assert started is not None

    outcome = run("panel-link", "--db", db_url, "--user", user, "--revoke")

    assert outcome.status == 0, outcome.err
    assert outcome.out.strip() == f"ended 2 panel sessions and unused sign-in links of {user}"
    assert sessions.authenticate(started.secret) is None
    assert sessions.redeem_link(unused) is None
    storage.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "alice", "--org", "org_x"], "--user"),
        (["--user", new_id(USER_PREFIX), "--org", "acme"], "--org"),
        (["--user", new_id(USER_PREFIX), "--org", new_id(ORGANIZATION_PREFIX), "--ttl", "ten"], "--ttl"),
        (["--user", new_id(USER_PREFIX), "--org", new_id(ORGANIZATION_PREFIX), "--ttl", "0s"], "--ttl"),
        (["--user", new_id(USER_PREFIX), "--org", new_id(ORGANIZATION_PREFIX), "--ttl", "2d"], "--ttl"),
        (["--user", new_id(USER_PREFIX), "--org", new_id(ORGANIZATION_PREFIX), "--url", "ftp://x"], "--public-url"),
    ],
)
def test_panel_link_refuses_bad_input_in_one_line_and_issues_nothing(
    run: Run, db_url: str, args: list[str], message: str
) -> None:
    outcome = run("panel-link", "--db", db_url, *args)

    assert outcome.status == 2
    assert message in outcome.err
    assert len(outcome.err.strip().splitlines()) == 1
    assert outcome.out == ""


def test_panel_link_names_the_public_url_serve_is_told_and_says_when_it_guesses(
    run: Run, db_url: str, env: dict[str, str]
) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    assert run("token", "create", "--db", db_url, "--user", user, "--org", org).status == 0

    guessed = run("panel-link", "--db", db_url, "--user", user, "--org", org)
    env["MEMORYBANK_PUBLIC_URL"] = "https://bank.example.com/"
    configured = run("panel-link", "--db", db_url, "--user", user, "--org", org)
    given = run("panel-link", "--db", db_url, "--user", user, "--org", org, "--public-url", "http://127.0.0.1:9123")

    assert guessed.last_line.startswith("http://127.0.0.1:8000/#link=")
    assert "--public-url or set MEMORYBANK_PUBLIC_URL" in guessed.err
    assert configured.last_line.startswith("https://bank.example.com/#link=")
    assert configured.err == ""
    assert given.last_line.startswith("http://127.0.0.1:9123/#link=")


def _save_as(db_url: str, user: str, content: str) -> None:
    with bootstrap.build(Settings.for_database(db_url)) as runtime:
        who = TokenPrincipal(user_id=user, organization_id=new_id(ORGANIZATION_PREFIX), scopes=KNOWN_SCOPES)
        runtime.services.bank.save(who, JsonValue({"content": content}))


def test_panel_link_for_a_user_with_memories_but_no_token_needs_org(run: Run, db_url: str) -> None:
    user = new_id(USER_PREFIX)  # e.g. someone who signs in with the identity provider
    _save_as(db_url, user, "saved through an issuer's token")

    without_org = run("panel-link", "--db", db_url, "--user", user)
    with_org = run("panel-link", "--db", db_url, "--user", user, "--org", new_id(ORGANIZATION_PREFIX))

    assert without_org.status == 2
    assert "--org is required" in without_org.err
    assert with_org.status == 0, with_org.err


@pytest.mark.parametrize("history", ["unknown", "purged", "tokens revoked"])
def test_panel_link_refuses_a_user_who_holds_nothing_here_in_one_line(run: Run, db_url: str, history: str) -> None:
    # Issue 19, finding 9: `panel-link` issued a working link for a purged (or mistyped) user.
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    if history != "unknown":
        secret = run("token", "create", "--db", db_url, "--user", user, "--org", org).last_line
        if history == "purged":
            _save_as(db_url, user, "something of theirs")
            done = run("purge", "--db", db_url, "--user", user)
        else:
            done = run("token", "revoke", "--db", db_url, secret)
        assert done.status == 0, done.err

    outcome = run("panel-link", "--db", db_url, "--user", user, "--org", org)

    assert outcome.status == 1
    assert outcome.out == ""
    assert outcome.err == (
        f"memorybank: error: {user} holds nothing here (no live API token, no memories): a mistyped id, or a "
        f"purged user; no link issued. To let them in, create a token first: memorybank token create --user {user} "
        "--org org_…\n"
    )
