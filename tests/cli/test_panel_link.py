"""`memorybank panel-link`: a one-time sign-in URL for the panel, and `--revoke`."""

from __future__ import annotations

import re

import pytest

from adapters_mysql import open_storage
from memorybank_core import PanelSessions, TokenPrincipal
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_search import OwnerIndexer
from tests.cli.conftest import Run

URL = re.compile(r"^http://127\.0\.0\.1:8000/#link=(mbl_[A-Za-z0-9_-]{43})$")


def _sessions(db_url: str) -> tuple[PanelSessions, object]:
    storage = open_storage(db_url, indexer=OwnerIndexer())
    return PanelSessions(store=storage.panel_sessions), storage


def _redeem(db_url: str, code: str) -> TokenPrincipal | None:
    storage = open_storage(db_url, indexer=OwnerIndexer())
    try:
        started = PanelSessions(store=storage.panel_sessions).redeem_link(code)
    finally:
        storage.close()
    return None if started is None else started.principal


def test_panel_link_prints_a_one_time_url_that_signs_the_user_in_once(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)

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
    unused = run("panel-link", "--db", db_url, "--user", user, "--org", org).last_line.rpartition("=")[2]
    used = run("panel-link", "--db", db_url, "--user", user, "--org", org).last_line.rpartition("=")[2]
    storage = open_storage(db_url, indexer=OwnerIndexer())
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
        (["--user", new_id(USER_PREFIX)], "--org is required"),
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

    guessed = run("panel-link", "--db", db_url, "--user", user, "--org", org)
    env["MEMORYBANK_PUBLIC_URL"] = "https://bank.example.com/"
    configured = run("panel-link", "--db", db_url, "--user", user, "--org", org)
    given = run("panel-link", "--db", db_url, "--user", user, "--org", org, "--public-url", "http://127.0.0.1:9123")

    assert guessed.last_line.startswith("http://127.0.0.1:8000/#link=")
    assert "--public-url or set MEMORYBANK_PUBLIC_URL" in guessed.err
    assert configured.last_line.startswith("https://bank.example.com/#link=")
    assert configured.err == ""
    assert given.last_line.startswith("http://127.0.0.1:9123/#link=")
