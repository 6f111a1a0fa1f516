"""The four routes: status codes, bodies and the wire shape of a memory."""

from __future__ import annotations

import re

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from adapters_http import bearer_token_resolver, memory_routes
from memorybank_core import MemoryBank, TokenService
from tests.conftest import User
from tests.http.conftest import Caller, caller_for

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def test_save_answers_201_with_the_stored_memory_trimmed_and_scoped_to_the_user(as_alice: Caller) -> None:
    response = as_alice.save(
        "  Acme renewal is due in March  ",
        tags=[" deals ", "acme", "deals"],
        contexts=[
            {"snippet": " from the call ", "conversation_id": "conv-1", "origin": "active_conversation"},
            {"snippet": "a note", "message_id": "msg-9"},
            {"snippet": "no ids"},
        ],
        scope="org",
        source="modal",
        unknown_field=True,
    )

    assert response.status_code == 201
    memory = response.json()["memory"]
    assert set(memory) == {
        *("id", "content", "tags", "source", "scope", "created_at", "updated_at", "contexts", "revision"),
        "retired_by",
    }
    assert (memory["revision"], memory["retired_by"], response.headers["ETag"]) == (1, None, '"1"')
    assert response.json()["similar"] == []
    assert memory["id"].startswith("mem_")
    assert memory["content"] == "Acme renewal is due in March"
    assert memory["tags"] == ["deals", "acme"]
    assert (memory["scope"], memory["source"]) == ("user", "chat")
    assert TIMESTAMP.match(memory["created_at"])
    assert memory["updated_at"] == memory["created_at"]
    first, second, third = memory["contexts"]
    assert set(first) == {"id", "snippet", "citation", "origin", "created_at"}
    assert first["id"].startswith("mctx_")
    assert first["snippet"] == "from the call"
    assert first["citation"] == {"conversation_id": "conv-1"}
    assert first["origin"] == "active_conversation"
    assert first["created_at"] == memory["created_at"]
    assert second["citation"] == {"message_id": "msg-9"}
    assert second["origin"] is None
    assert third["citation"] is None


def test_search_returns_matching_memories_with_contexts_and_a_positive_score(as_alice: Caller) -> None:
    deal = as_alice.saved_id("Acme renewal is due in March", contexts=[{"snippet": "call notes"}])
    as_alice.saved_id("The office plant needs water on Fridays")

    response = as_alice.search("acme renewal")

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["id"] for r in results] == [deal]
    assert results[0]["score"] > 0
    assert results[0]["match"] == "words"  # why it was found: lexical search finds by words only
    assert results[0]["contexts"][0]["snippet"] == "call notes"


def test_search_with_no_match_answers_200_with_an_empty_list(as_alice: Caller) -> None:
    as_alice.saved_id("Acme renewal is due in March")

    response = as_alice.search("kubernetes")

    assert response.status_code == 200
    assert response.json() == {"results": []}


def test_search_results_are_ordered_by_score_and_capped_by_limit(as_alice: Caller) -> None:
    for text in ("deploy deploy deploy target", "deploy once", "deploy deploy twice"):
        as_alice.saved_id(text)

    results = as_alice.search("deploy", limit=2).json()["results"]

    assert len(results) == 2
    assert results[0]["score"] >= results[1]["score"]


def test_list_pages_newest_first_with_a_cursor_until_null(as_alice: Caller) -> None:
    saved = [as_alice.saved_id(f"memory number {i}") for i in range(5)]

    first = as_alice.list(limit=2).json()
    second = as_alice.list(limit=2, cursor=first["next_cursor"]).json()
    third = as_alice.list(limit=2, cursor=second["next_cursor"]).json()

    listed = [m["id"] for page in (first, second, third) for m in page["memories"]]
    assert listed == list(reversed(saved))
    assert third["next_cursor"] is None


def test_list_of_an_empty_bank_is_an_empty_page(as_alice: Caller) -> None:
    assert as_alice.list().json() == {"memories": [], "next_cursor": None}


def test_delete_answers_204_with_an_empty_body_and_the_memory_is_gone(as_alice: Caller) -> None:
    memory_id = as_alice.saved_id("Forget me")

    response = as_alice.delete(memory_id)

    assert response.status_code == 204
    assert response.content == b""
    assert as_alice.list().json()["memories"] == []
    assert as_alice.search("forget").json()["results"] == []


def test_deleting_twice_reports_not_found_the_second_time(as_alice: Caller) -> None:
    memory_id = as_alice.saved_id("Forget me")
    as_alice.delete(memory_id)

    response = as_alice.delete(memory_id)

    assert response.status_code == 404
    assert response.json()["error"] == "memory_not_found"


def test_every_response_carries_a_request_id(client: TestClient, as_alice: Caller) -> None:
    responses = [
        as_alice.save(),
        as_alice.list(),
        as_alice.list(limit=0),
        client.get("/v1/memory"),
        client.get("/no/such/route"),
        client.get("/openapi.json"),
    ]

    ids = [r.headers["X-Request-Id"] for r in responses]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_head_on_a_list_answers_like_get_without_a_body(client: TestClient, as_alice: Caller) -> None:
    response = client.head("/v1/memory", headers=as_alice.headers)

    assert response.status_code == 200
    assert response.content == b""


def test_a_read_only_token_gets_403_for_a_save_even_when_the_body_is_invalid(
    client: TestClient, tokens: TokenService, alice: User
) -> None:
    reader = caller_for(client, tokens, alice, scopes=frozenset({"mcp:read"}))
    response = reader.save("")
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_every_json_answer_says_nosniff_success_error_and_router_alike(client: TestClient, as_alice: Caller) -> None:
    # Issue 19, finding 9: JSON answers (which may quote what a caller sent) carried no `nosniff`.
    memory_id = as_alice.saved_id("kept")
    answers = [
        as_alice.save("<script>alert(1)</script>"),  # 201
        as_alice.search("kept"),  # 200
        as_alice.list(limit=0),  # 400
        as_alice.delete(memory_id),  # 204
        as_alice.delete(memory_id),  # 404
        client.get("/v1/memory"),  # 401
        client.put("/v1/memory", headers=as_alice.headers),  # 405
        client.get("/no/such/route"),  # the router's 404
        client.get("/openapi.json"),
        client.get("/panel/session"),  # the panel's JSON 401
    ]

    assert [a.headers.get("x-content-type-options") for a in answers] == ["nosniff"] * len(answers)
    assert [a.status_code for a in answers][:7] == [201, 200, 400, 204, 404, 401, 405]


def test_a_host_mounting_the_routes_alone_gets_nosniff_too(bank: MemoryBank, tokens: TokenService, alice: User) -> None:
    host = Starlette(routes=[Mount("/memory-api", routes=memory_routes(bank, bearer_token_resolver(tokens)))])
    secret = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    with TestClient(host) as client:
        answer = client.get("/memory-api/v1/memory", headers={"Authorization": f"Bearer {secret}"})

    assert answer.status_code == 200
    assert answer.headers["x-content-type-options"] == "nosniff"
