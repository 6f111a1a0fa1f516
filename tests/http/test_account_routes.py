"""The person's own routes: use against the quota, export, delete all. Each only ever touches the caller's memories."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from starlette.testclient import TestClient

from memorybank_core import (
    ORG_ADMIN_SCOPE,
    ORG_READ_SCOPE,
    ORG_WRITE_SCOPE,
    READ_SCOPE,
    WRITE_SCOPE,
    MemoryBank,
    MemoryControls,
    PanelSessions,
    SubjectKind,
    TokenService,
    limits,
)
from memorybank_core.ids import USER_PREFIX, new_id
from memorybank_core.wire import export_line
from tests.conftest import User
from tests.http.conftest import Caller, caller_for, panel_caller_for

CONFIRM = {"confirm": "delete all"}


def _usage(caller: Caller) -> dict[str, object]:
    response = caller.client.get("/v1/memory/usage", headers=caller.headers)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def _export(caller: Caller) -> list[dict[str, object]]:
    response = caller.client.get("/v1/memory/export", headers=caller.headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/jsonl")
    assert "attachment" in response.headers["content-disposition"]
    return [json.loads(line) for line in response.text.splitlines()]


def _delete_all(caller: Caller, **body: object) -> dict[str, int]:
    response = caller.client.post("/v1/memory/delete-all", json={**CONFIRM, **body}, headers=caller.headers)
    assert response.status_code == 200, response.text
    answer: dict[str, int] = response.json()
    return answer


def test_usage_counts_my_memories_and_characters_against_my_quota_and_never_bobs(
    as_alice: Caller, as_bob: Caller, bank: MemoryBank
) -> None:
    as_alice.saved_id("abc", tags=["de"])
    as_alice.saved_id("fghij")
    as_bob.saved_id("Bob's own memory, which is long enough to show up in any count")

    assert _usage(as_alice) == {
        "memories": 2,
        "characters": 10,
        "quota": {"max_memories": bank.default_quota.max_memories, "max_characters": bank.default_quota.max_characters},
    }
    assert _usage(as_bob)["memories"] == 1


def test_usage_of_an_empty_bank_is_zero(as_alice: Caller) -> None:
    assert _usage(as_alice)["memories"] == 0
    assert _usage(as_alice)["characters"] == 0


def test_usage_shows_the_quota_an_operator_set_for_me(
    as_alice: Caller, as_bob: Caller, controls: MemoryControls, bank: MemoryBank
) -> None:
    controls.set_quota(SubjectKind.USER, as_alice.user.user_id, max_memories=3, max_characters=100)

    assert _usage(as_alice)["quota"] == {"max_memories": 3, "max_characters": 100}
    assert _usage(as_bob)["quota"] == {
        "max_memories": bank.default_quota.max_memories,
        "max_characters": bank.default_quota.max_characters,
    }


def test_export_streams_my_memories_with_contexts_in_the_cli_format_and_none_of_bobs(
    as_alice: Caller, as_bob: Caller, bank: MemoryBank
) -> None:
    as_bob.saved_id("Bob's secret")
    first = as_alice.saved_id("Alice's first", contexts=[{"snippet": "said in chat", "conversation_id": "c1"}])
    second = as_alice.saved_id("Alice's second", tags=["t"])

    lines = _export(as_alice)

    assert [line["id"] for line in lines] == [second, first]  # newest first, like the list
    assert lines[1]["contexts"][0]["snippet"] == "said in chat"  # type: ignore[index]
    assert all(line["user_id"] == as_alice.user.user_id for line in lines)
    stored = {m.id: m for m in bank.list(as_alice.user, limit=10).memories}
    assert [json.loads(export_line(stored[i])) for i in (second, first)] == lines  # exactly the CLI's lines


def test_export_of_more_than_a_page_has_every_memory_once(as_alice: Caller) -> None:
    saved = {as_alice.saved_id(f"memory {n}") for n in range(limits.EXPORT_PAGE + 5)}

    exported = [line["id"] for line in _export(as_alice)]

    assert len(exported) == len(saved)
    assert set(exported) == saved


def test_delete_all_goes_in_bounded_batches_until_none_are_left_and_bob_keeps_his(
    as_alice: Caller, as_bob: Caller
) -> None:
    for n in range(5):
        as_alice.saved_id(f"alice {n}")
    bobs = as_bob.saved_id("Bob keeps this")

    assert _delete_all(as_alice, limit=2) == {"deleted": 2, "remaining": 3}
    assert _delete_all(as_alice, limit=2) == {"deleted": 2, "remaining": 1}
    assert _delete_all(as_alice, limit=2) == {"deleted": 1, "remaining": 0}
    assert _delete_all(as_alice) == {"deleted": 0, "remaining": 0}  # once more: nothing left, nothing wrong

    assert as_alice.list().json()["memories"] == []
    assert [m["id"] for m in as_bob.list().json()["memories"]] == [bobs]
    assert _usage(as_bob)["memories"] == 1


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "confirm"),
        ({"confirm": "DELETE ALL"}, "confirm"),
        ({"confirm": "delete all", "limit": 0}, "limit"),
        ({"confirm": "delete all", "limit": limits.DELETE_ALL_BATCH.max + 1}, "limit"),
        ({"confirm": "delete all", "limit": "10"}, "limit"),
        # Only an integer literal: a proxy reading 2.0 as a float must not judge another request (issue 27).
        ({"confirm": "delete all", "limit": 2.0}, "limit"),
        ({"confirm": "delete all", "limit": True}, "limit"),
        ({"confirm": "delete all", "limit": None}, "limit"),
        ({"confirm": "delete all", "limit": 2.5}, "limit"),
    ],
)
def test_delete_all_without_the_confirmation_or_with_a_bad_limit_is_a_400_and_deletes_nothing(
    as_alice: Caller, body: dict[str, object], path: str
) -> None:
    kept = as_alice.saved_id("Still here")

    response = as_alice.client.post("/v1/memory/delete-all", json=body, headers=as_alice.headers)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert [d["path"] for d in response.json()["details"]] == [path]
    assert [m["id"] for m in as_alice.list().json()["memories"]] == [kept]


@pytest.mark.parametrize("raw", [b"[]", b'"delete all"', b"{", b"null"])
def test_delete_all_with_a_body_that_is_not_an_object_is_a_400(as_alice: Caller, raw: bytes) -> None:
    as_alice.saved_id("Still here")
    headers = {**as_alice.headers, "Content-Type": "application/json"}

    response = as_alice.client.post("/v1/memory/delete-all", content=raw, headers=headers)

    assert response.status_code == 400
    assert len(as_alice.list().json()["memories"]) == 1


def test_a_read_only_token_reads_use_and_exports_but_cannot_delete_all(
    client: TestClient, tokens: TokenService, alice: User
) -> None:
    writer = caller_for(client, tokens, alice)
    writer.saved_id("Kept")
    reader = caller_for(client, tokens, alice, scopes=frozenset({"mcp:read"}))

    assert _usage(reader)["memories"] == 1
    assert len(_export(reader)) == 1
    response = client.post("/v1/memory/delete-all", json=CONFIRM, headers=reader.headers)
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    assert _usage(reader)["memories"] == 1


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/memory/usage"), ("GET", "/v1/memory/export"), ("POST", "/v1/memory/delete-all")]
)
def test_the_account_routes_need_a_credential(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, path, json=CONFIRM if method == "POST" else None)
    assert response.status_code == 401


def test_the_panel_session_reaches_the_account_routes_only_with_the_panels_header(
    client: TestClient, panel_sessions: PanelSessions, alice: User
) -> None:
    caller = panel_caller_for(client, panel_sessions, alice)
    caller.saved_id("Mine")
    assert _usage(caller)["memories"] == 1
    assert len(_export(caller)) == 1

    # A cookie alone (a link or a form on another page) opens nothing: no download, no delete.
    cookie_only = {"Cookie": caller.headers["Cookie"]}
    assert client.get("/v1/memory/export", headers=cookie_only).status_code == 401
    cross_site = {**caller.headers, "Origin": "http://evil.example"}
    assert client.post("/v1/memory/delete-all", json=CONFIRM, headers=cross_site).status_code == 401
    assert _usage(caller)["memories"] == 1

    assert _delete_all(caller) == {"deleted": 1, "remaining": 0}


# ---- the team bank's use (issue 30): `bankScope=org` ----------------------------------------------------------------

TEAM_SCOPES = frozenset({READ_SCOPE, WRITE_SCOPE, ORG_READ_SCOPE, ORG_WRITE_SCOPE})


def _team_usage(caller: Caller, bank_scope: str = "org") -> tuple[int, dict[str, Any]]:
    response = caller.client.get("/v1/memory/usage", params={"bankScope": bank_scope}, headers=caller.headers)
    body: dict[str, Any] = response.json()
    return response.status_code, body


def test_usage_of_the_team_bank_counts_the_teams_memories_against_the_organizations_quota(
    client: TestClient, tokens: TokenService, controls: MemoryControls, bank: MemoryBank
) -> None:
    ann = User(scopes=TEAM_SCOPES)
    amy = caller_for(client, tokens, attrs.evolve(ann, user_id=new_id(USER_PREFIX)))
    as_ann = caller_for(client, tokens, ann)
    as_ann.saved_id("abc", tags=["de"], bankScope="org")
    amy.saved_id("fghij", bankScope="org")
    as_ann.saved_id("Ann's own memory, which only her own usage counts")
    controls.set_quota(SubjectKind.ORG, ann.organization_id, max_memories=7, max_characters=700)

    team = {"memories": 2, "characters": 10, "quota": {"max_memories": 7, "max_characters": 700}}
    assert _team_usage(as_ann) == _team_usage(amy) == (200, team)
    assert _usage(as_ann)["memories"] == 1  # her own bank, the default
    assert _team_usage(as_ann, "user") == (200, _usage(as_ann))


def test_usage_of_another_organizations_team_bank_is_never_shown(
    client: TestClient, tokens: TokenService, bank: MemoryBank
) -> None:
    ann = caller_for(client, tokens, User(scopes=TEAM_SCOPES))
    ann.saved_id("The staging database lives in eu-west-1", bankScope="org")
    stranger = caller_for(client, tokens, User(scopes=TEAM_SCOPES))

    # A member of another organization reads their own organization's bank, never Ann's: it is empty.
    status, body = _team_usage(stranger)
    assert (status, body["memories"], body["characters"]) == (200, 0, 0)


def test_usage_of_the_team_bank_needs_org_read(client: TestClient, tokens: TokenService, alice: User) -> None:
    member = caller_for(client, tokens, alice)  # mcp:read and mcp:write, no org scope

    status, body = _team_usage(member)
    assert (status, body["required_scope"]) == (403, ORG_READ_SCOPE)
    assert _team_usage(member, "user")[0] == 200
    reader = caller_for(client, tokens, alice, frozenset({READ_SCOPE, ORG_READ_SCOPE}))
    assert _team_usage(reader)[0] == 200
    admin = caller_for(client, tokens, alice, frozenset({READ_SCOPE, ORG_ADMIN_SCOPE}))
    assert _team_usage(admin)[0] == 200
    without_memory_read = caller_for(client, tokens, alice, frozenset({WRITE_SCOPE, ORG_READ_SCOPE}))
    assert _team_usage(without_memory_read)[0] == 403


@pytest.mark.parametrize("value", ["all", "team", "ORG", "", "org,user"])
def test_usage_with_a_bank_scope_it_does_not_know_is_a_400_naming_the_parameter(
    client: TestClient, tokens: TokenService, value: str
) -> None:
    member = caller_for(client, tokens, User(scopes=TEAM_SCOPES))

    status, body = _team_usage(member, value)
    assert (status, body["error"], body["details"][0]["path"]) == (400, "invalid_request", "bankScope")
