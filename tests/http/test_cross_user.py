"""Merge gate (seed §8): no route ever reveals or touches another user's memory, through either door.

Every test here runs twice: with bearer tokens, and with the management panel's session
cookie (the panel reaches the same routes and use cases with the session's principal).
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from memorybank_core import PanelSessions, TokenService
from memorybank_core.ids import MEMORY_PREFIX, new_id
from tests.conftest import User
from tests.http.conftest import Caller, caller_for, panel_caller_for


@pytest.fixture(params=["bearer", "panel"])
def door(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _caller(client: TestClient, tokens: TokenService, sessions: PanelSessions, user: User, door: str) -> Caller:
    return panel_caller_for(client, sessions, user) if door == "panel" else caller_for(client, tokens, user)


@pytest.fixture
def as_alice(client: TestClient, tokens: TokenService, panel_sessions: PanelSessions, alice: User, door: str) -> Caller:
    return _caller(client, tokens, panel_sessions, alice, door)


@pytest.fixture
def as_bob(client: TestClient, tokens: TokenService, panel_sessions: PanelSessions, bob: User, door: str) -> Caller:
    return _caller(client, tokens, panel_sessions, bob, door)


def test_no_route_reveals_or_touches_another_users_memory(as_alice: Caller, as_bob: Caller) -> None:
    alice_ids = {
        as_alice.saved_id("Alice banks with Zephyrbank", tags=["finance"], contexts=[{"snippet": "zephyr memo"}]),
        as_alice.saved_id("Alice shared deploy notes"),
    }
    bob_ids = {as_bob.saved_id("Bob shared deploy notes")}

    # list: each sees exactly their own
    assert {m["id"] for m in as_bob.list(limit=100).json()["memories"]} == bob_ids
    assert {m["id"] for m in as_alice.list(limit=100).json()["memories"]} == alice_ids
    # search: words only Alice used (stems too: "note" would find Bob's "notes") find nothing for Bob;
    # a shared word finds only one's own
    assert as_bob.search("zephyrbank").json() == {"results": []}
    assert as_bob.search("zephyr memo finance").json() == {"results": []}
    assert {r["id"] for r in as_bob.search("shared deploy notes").json()["results"]} == bob_ids
    assert {r["id"] for r in as_alice.search("shared deploy notes").json()["results"]} <= alice_ids
    # delete: Bob cannot delete Alice's memories, and they survive his attempts
    for memory_id in alice_ids:
        assert as_bob.delete(memory_id).status_code == 404
    assert {m["id"] for m in as_alice.list(limit=100).json()["memories"]} == alice_ids
    assert as_alice.search("zephyrbank").json()["results"][0]["id"] in alice_ids
    # and the other way round
    for memory_id in bob_ids:
        assert as_alice.delete(memory_id).status_code == 404
    assert {m["id"] for m in as_bob.list(limit=100).json()["memories"]} == bob_ids


def test_a_list_cursor_from_one_user_never_reveals_the_other_users_memories(as_alice: Caller, as_bob: Caller) -> None:
    for i in range(3):
        as_alice.saved_id(f"alice memory {i}")
        as_bob.saved_id(f"bob memory {i}")
    alice_cursor = as_alice.list(limit=1).json()["next_cursor"]

    page = as_bob.list(limit=100, cursor=alice_cursor).json()

    assert all(m["content"].startswith("bob") for m in page["memories"])


def test_someone_elses_id_gets_a_404_byte_identical_to_a_missing_or_malformed_id(
    client: TestClient, as_alice: Caller, as_bob: Caller
) -> None:
    alices = as_alice.saved_id("Alice's secret plan")
    deleted = as_bob.saved_id("deleted one")
    as_bob.delete(deleted)
    probes = {
        "someone else's": alices,
        "never existed": new_id(MEMORY_PREFIX),
        "already deleted": deleted,
        "malformed": "not-an-id",
        "wrong prefix": new_id("usr"),
        "traversal": "..%2F..%2Fetc%2Fpasswd",
        "encoded traversal with id": f"{alices}%2F..%2F{alices}",
        "very long": "mem_" + "a" * 5000,
        "unicode": "m%C3%A9m_%F0%9F%9A%80",
    }

    responses = {
        name: as_bob.client.delete(f"/v1/memory/{raw}", headers=as_bob.headers) for name, raw in probes.items()
    }

    reference = responses["never existed"]
    assert reference.status_code == 404
    assert reference.content == b'{"error":"memory_not_found","message":"No memory with this id."}'
    for name, response in responses.items():
        assert (name, response.status_code) == (name, 404)
        assert (name, response.content) == (name, reference.content)
        assert (name, response.headers["content-type"]) == (name, reference.headers["content-type"])
    assert as_alice.list().json()["memories"][0]["id"] == alices


@pytest.mark.parametrize("path", ["/v1/memory/../memory", "/v1/memory/./x", "/v1/memory//x"])
def test_unnormalized_paths_never_reach_another_users_memory(client: TestClient, as_bob: Caller, path: str) -> None:
    response = client.delete(path, headers=as_bob.headers)

    assert response.status_code in {404, 405}
    assert response.json()["error"] in {"memory_not_found", "not_found", "method_not_allowed"}
