"""`memorybank token create | list | revoke`."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from memorybank import bootstrap
from memorybank.settings import Settings
from memorybank_core import READ_SCOPE, TokenService
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.cli.conftest import Run, panel_session_from_token
from tests.sql.backends import storage_at

SECRET = re.compile(r"^mbk_[A-Za-z0-9_-]{43}$")


def _authenticate(db_url: str, secret: str) -> tuple[str, str, frozenset[str]] | None:
    storage = storage_at(db_url)
    try:
        principal = TokenService(store=storage.token_store).authenticate(secret)
    finally:
        storage.close()
    return None if principal is None else (principal.user_id, principal.organization_id, principal.scopes)


def test_token_create_prints_the_ids_then_the_secret_alone_on_the_last_line(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)

    outcome = run("token", "create", "--db", db_url, "--user", user, "--org", org)

    assert outcome.status == 0, outcome.err
    assert SECRET.match(outcome.last_line)
    body = outcome.out.rstrip("\n").split("\n")[:-1]
    assert f"user: {user}" in body
    assert f"org: {org}" in body
    assert "NEW" not in outcome.out + outcome.err
    assert _authenticate(db_url, outcome.last_line) == (user, org, frozenset({"mcp:read", "mcp:write"}))


def test_token_create_without_ids_says_it_made_a_new_user_and_how_to_get_a_second_token(run: Run, db_url: str) -> None:
    outcome = run("token", "create", "--db", db_url)

    assert outcome.status == 0, outcome.err
    user = re.search(r"^user: (usr_\w+)$", outcome.out, re.MULTILINE)
    org = re.search(r"^org: (org_\w+)$", outcome.out, re.MULTILINE)
    assert user
    assert org
    found = _authenticate(db_url, outcome.last_line)
    assert found is not None
    assert found[:2] == (user.group(1), org.group(1))
    # On stderr, so `TOKEN=$(memorybank token create | tail -n 1)` still shows it.
    assert f"created a NEW user {user.group(1)}" in outcome.err
    second = re.search(
        r"another token for this same person: memorybank (token create --user \S+ --org \S+)$", outcome.err
    )
    assert second

    again = run(*second.group(1).split(), "--db", db_url)

    assert again.status == 0, again.err
    assert again.err == ""
    assert _authenticate(db_url, again.last_line) == found


def test_token_create_with_a_new_user_but_no_org_says_the_organization_is_new(run: Run, db_url: str) -> None:
    user = new_id(USER_PREFIX)

    outcome = run("token", "create", "--db", db_url, "--user", user)

    org = re.search(r"^org: (org_\w+)$", outcome.out, re.MULTILINE)
    assert org
    assert outcome.err == (
        f"memorybank: no --org given and {user} has no token yet: created a new organization id {org.group(1)}\n"
    )


def test_token_create_with_a_known_user_but_no_org_keeps_their_organization(run: Run, db_url: str) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    run("token", "create", "--db", db_url, "--user", user, "--org", org)

    again = run("token", "create", "--db", db_url, "--user", user)

    assert (again.status, again.err) == (0, "")
    assert f"org: {org}" in again.out
    assert _authenticate(db_url, again.last_line) == (user, org, frozenset({"mcp:read", "mcp:write"}))


def test_token_create_names_the_database_it_wrote_to_without_its_password(run: Run, db_url: str) -> None:
    outcome = run("token", "create", "--db", db_url)

    assert f"database: {db_url}" in outcome.out.splitlines()


def test_token_create_grants_only_the_scopes_asked_for(run: Run, db_url: str) -> None:
    outcome = run("token", "create", "--db", db_url, "--scope", READ_SCOPE)

    found = _authenticate(db_url, outcome.last_line)
    assert found is not None
    assert found[2] == frozenset({READ_SCOPE})


def test_token_create_grants_the_org_scopes_only_when_named_for_the_organization_it_was_made_for(
    run: Run, db_url: str
) -> None:
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    scopes = ("mcp:read", "mcp:write", "org:read", "org:write")
    member = run("token", "create", "--db", db_url, "--user", user, "--org", org, *(f"--scope={s}" for s in scopes))
    plain = run("token", "create", "--db", db_url, "--user", user, "--org", org)

    assert member.status == 0, member.err
    assert _authenticate(db_url, member.last_line) == (user, org, frozenset(scopes))
    assert _authenticate(db_url, plain.last_line) == (user, org, frozenset({"mcp:read", "mcp:write"}))
    admin = run("token", "create", "--db", db_url, "--org", org, "--scope", "org:admin", "--scope", "mcp:write")
    found = _authenticate(db_url, admin.last_line)
    assert found is not None
    assert (found[1], found[2]) == (org, frozenset({"org:admin", "mcp:write"}))


def test_token_create_refuses_an_unknown_scope_in_one_line(run: Run, db_url: str) -> None:
    outcome = run("token", "create", "--db", db_url, "--scope", "admin")

    assert outcome.status == 2
    assert outcome.out == ""
    assert outcome.err.count("\n") == 1
    assert "--scope" in outcome.err
    assert "admin" in outcome.err


# Fixed ids, not new_id(): parameter ids must be the same in every collection (pytest-xdist workers).
@pytest.mark.parametrize(
    ("option", "value"),
    [("--user", "bob"), ("--user", "org_01m8x6adcre6rrj9b4p4ykymky"), ("--org", "org_123"), ("--org", "")],
)
def test_token_create_refuses_a_malformed_id_in_one_line(run: Run, db_url: str, option: str, value: str) -> None:
    outcome = run("token", "create", "--db", db_url, option, value)

    assert outcome.status == 2
    assert outcome.err.startswith(f"memorybank: error: {option} must be a TypeID")
    assert outcome.err.count("\n") == 1


def test_token_list_shows_ids_owners_and_scopes_but_never_a_secret(run: Run, db_url: str) -> None:
    user = new_id(USER_PREFIX)
    secrets = [run("token", "create", "--db", db_url, "--user", user).last_line for _ in range(2)]
    other = run("token", "create", "--db", db_url).last_line

    everyone = run("token", "list", "--db", db_url)
    mine = run("token", "list", "--db", db_url, "--user", user)

    assert everyone.status == 0
    assert len(everyone.out.strip().split("\n")) == 4  # header + 3 tokens
    assert len(mine.out.strip().split("\n")) == 3
    assert all(line.split()[1] == user for line in mine.out.strip().split("\n")[1:])
    assert "mcp:read mcp:write" in mine.out
    for secret in [*secrets, other]:
        assert secret not in everyone.out
    assert "mbk_" not in everyone.out


def test_token_list_of_an_empty_database_says_so(run: Run, db_url: str) -> None:
    assert run("token", "list", "--db", db_url).out == "no tokens\n"


@pytest.mark.parametrize("by", ["id", "secret"])
def test_token_revoke_by_id_or_secret_stops_the_token(run: Run, db_url: str, by: str) -> None:
    secret = run("token", "create", "--db", db_url).last_line
    token_id = run("token", "list", "--db", db_url).out.strip().split("\n")[1].split()[0]

    outcome = run("token", "revoke", "--db", db_url, token_id if by == "id" else secret)

    assert outcome.status == 0, outcome.err
    assert token_id in outcome.out
    assert _authenticate(db_url, secret) is None
    assert run("token", "list", "--db", db_url).out.strip().split("\n")[1].split()[-1] != "-"


def test_token_revoke_ends_the_panel_sessions_made_from_the_token_and_says_how_many(run: Run, db_url: str) -> None:
    # Issue 19, finding 2: a session made by pasting a token outlived `token revoke` by up to 12 hours.
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    secret = run("token", "create", "--db", db_url, "--user", user, "--org", org).last_line
    kept = run("token", "create", "--db", db_url, "--user", user, "--org", org).last_line
    runtime = bootstrap.build(Settings.for_database(db_url), serving=True)
    with TestClient(runtime.app, base_url="http://127.0.0.1:8000") as client:  # its shutdown closes the runtime
        sessions = [panel_session_from_token(client, secret) for _ in range(2)]
        other = panel_session_from_token(client, kept)
        assert client.get("/v1/memory", headers=sessions[0]).status_code == 200

        outcome = run("token", "revoke", "--db", db_url, secret)

        assert outcome.status == 0, outcome.err
        assert outcome.out.strip().endswith("; ended 2 panel sessions made from it")
        for headers in sessions:
            assert client.get("/v1/memory", headers=headers).status_code == 401
            assert client.post("/v1/memory", json={"content": "after"}, headers=headers).status_code == 401
        assert client.get("/v1/memory", headers=other).status_code == 200


@pytest.mark.parametrize("target", ["tok_01h455vb4pex5vsknk084sn02q", "mbk_not-a-token", "garbage"])
def test_token_revoke_of_an_unknown_token_fails_in_one_line(run: Run, db_url: str, target: str) -> None:
    outcome = run("token", "revoke", "--db", db_url, target)

    assert outcome.status == 1
    assert outcome.err == "memorybank: error: no live token matches that id or secret\n"


def test_revoking_twice_fails_the_second_time(run: Run, db_url: str) -> None:
    secret = run("token", "create", "--db", db_url).last_line
    assert run("token", "revoke", "--db", db_url, secret).status == 0

    assert run("token", "revoke", "--db", db_url, secret).status == 1
