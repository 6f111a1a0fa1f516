"""Quotas and the gate over HTTP: 403 quota_exceeded with the numbers, 403 memory_disabled on every memory route."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from memorybank_core import MemoryControls, PanelSessions, SubjectKind, TokenService
from tests.conftest import User
from tests.http.conftest import Caller, caller_for, panel_caller_for

DISABLED_BODY = {
    "error": "memory_disabled",
    "message": "Memory is switched off for this account by the operator of this server.",
}


def test_a_save_over_quota_is_403_quota_exceeded_with_limit_and_use(as_alice: Caller, controls: MemoryControls) -> None:
    controls.set_quota(SubjectKind.USER, as_alice.user.user_id, max_memories=1, max_characters=100)
    kept = as_alice.saved_id("the only one")

    refused = as_alice.save("x" * 90, tags=["t"])

    assert refused.status_code == 403
    body = refused.json()
    assert body["error"] == "quota_exceeded"
    assert "delete old memories" in body["message"]
    assert body["details"] == [
        {
            "path": "memories",
            "message": "1 of 1 used; this save needs 1",
            "limit": 1,
            "used": 1,
            "requested": 1,
        },
        {
            "path": "characters",
            "message": "12 of 100 used; this save needs 91",
            "limit": 100,
            "used": 12,
            "requested": 91,
        },
    ]
    assert [m["id"] for m in as_alice.list().json()["memories"]] == [kept]


def test_an_invalid_body_over_quota_still_gets_its_validation_errors_first(
    as_alice: Caller, controls: MemoryControls
) -> None:
    controls.set_quota(SubjectKind.USER, as_alice.user.user_id, max_memories=0)
    assert as_alice.save("").json()["error"] == "invalid_request"


@pytest.mark.parametrize("door", ["bearer", "panel"])
@pytest.mark.parametrize("switch", [SubjectKind.USER, SubjectKind.ORG, SubjectKind.ALL])
def test_every_memory_route_answers_403_memory_disabled_when_switched_off(
    client: TestClient,
    tokens: TokenService,
    panel_sessions: PanelSessions,
    controls: MemoryControls,
    alice: User,
    door: str,
    switch: SubjectKind,
) -> None:
    caller = caller_for(client, tokens, alice) if door == "bearer" else panel_caller_for(client, panel_sessions, alice)
    memory_id = caller.saved_id("saved before the switch") if door == "bearer" else None
    subject = {SubjectKind.USER: alice.user_id, SubjectKind.ORG: alice.organization_id, SubjectKind.ALL: None}
    controls.set_gate(switch, subject[switch], enabled=False)

    answers = [
        caller.save("after the switch"),
        caller.save(""),  # the gate first: a switched-off account learns nothing from validation
        caller.search("switch"),
        caller.list(),
        caller.delete(memory_id or "mem_01h455vb4pex5vsknk084sn02q"),
        client.post("/v1/memory/delete-all", json={"confirm": "delete all"}, headers=caller.headers),
        client.get("/v1/memory/usage", headers=caller.headers),
        client.get("/v1/memory/export", headers=caller.headers),
    ]

    assert [(a.status_code, a.json()) for a in answers] == [(403, DISABLED_BODY)] * len(answers)
    controls.set_gate(switch, subject[switch], enabled=True)
    assert caller.list().status_code == 200


@pytest.mark.parametrize("door", ["bearer", "panel"])
def test_a_switched_off_caller_gets_403_before_any_body_or_parameter_is_judged(
    client: TestClient,
    tokens: TokenService,
    panel_sessions: PanelSessions,
    controls: MemoryControls,
    alice: User,
    door: str,
) -> None:
    # Issue 19, finding 9: the body was decoded before the gate, so `{` got 400 and text/plain 415.
    caller = caller_for(client, tokens, alice) if door == "bearer" else panel_caller_for(client, panel_sessions, alice)
    controls.set_gate(SubjectKind.USER, alice.user_id, enabled=False)
    json_headers = {**caller.headers, "Content-Type": "application/json"}

    answers = [
        client.post("/v1/memory", content=b"{", headers=json_headers),
        client.post("/v1/memory", content=b'["not", "an", "object"]', headers=json_headers),
        client.post("/v1/memory", content=b"plain words", headers={**caller.headers, "Content-Type": "text/plain"}),
        client.post("/v1/memory", content=b"x" * (2 * 1024 * 1024), headers=json_headers),
        caller.search("x" * 5000),
        caller.search("x", limit=0),
        caller.list(limit="many"),
        caller.list(cursor="not-a-cursor"),
        client.post("/v1/memory/delete-all", content=b"{", headers=json_headers),
        client.post("/v1/memory/delete-all", content=b"[1]", headers=json_headers),
        client.post(
            "/v1/memory/delete-all", content=b"DELETE", headers={**caller.headers, "Content-Type": "text/plain"}
        ),
        client.post("/v1/memory/delete-all", content=b"x" * (2 * 1024 * 1024), headers=json_headers),
        client.post("/v1/memory/delete-all", json={"confirm": "no", "limit": 0}, headers=caller.headers),
    ]

    assert [(a.status_code, a.json()) for a in answers] == [(403, DISABLED_BODY)] * len(answers)


def test_a_switched_off_user_does_not_affect_another_user(
    as_alice: Caller, as_bob: Caller, controls: MemoryControls
) -> None:
    controls.set_gate(SubjectKind.USER, as_alice.user.user_id, enabled=False)
    assert as_alice.list().status_code == 403
    assert as_bob.save("still works").status_code == 201


def test_a_caller_without_credentials_still_gets_401_not_the_gates_403(
    client: TestClient, controls: MemoryControls
) -> None:
    controls.set_gate(SubjectKind.ALL, None, enabled=False)
    answer = client.get("/v1/memory")
    assert answer.status_code == 401


def test_the_openapi_document_names_the_new_403_codes(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    described = document["paths"]["/v1/memory"]["post"]["responses"]["403"]["description"]
    assert "memory_disabled" in described
    assert "quota_exceeded" in described
    assert "insufficient_scope" in described
