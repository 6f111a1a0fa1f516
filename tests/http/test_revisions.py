"""Memories that change, over REST: PATCH with ETag / If-Match, the history route, supersede on save, `similar`,
restore, and every door (REST, panel, MCP) recorded with its credential, never a secret."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2
import pytest
from starlette.testclient import TestClient

from harness.served import REPO_ROOT
from memorybank_core import PanelSessions, TokenService
from memorybank_core.ids import MEMORY_PREFIX, new_id
from tests.conftest import User
from tests.http.conftest import Caller, caller_for, panel_caller_for


def patch(caller: Caller, memory_id: str, body: Any, **headers: str) -> httpx2.Response:
    return caller.client.patch(f"/v1/memory/{memory_id}", json=body, headers={**caller.headers, **headers})


def history(caller: Caller, memory_id: str, **params: Any) -> httpx2.Response:
    return caller.client.get(f"/v1/memory/{memory_id}/revisions", params=params, headers=caller.headers)


def test_patch_changes_the_memory_and_answers_it_with_its_new_etag(as_alice: Caller) -> None:
    saved = as_alice.save("I live in Lisbon", tags=["home"])
    memory = saved.json()["memory"]

    response = patch(as_alice, memory["id"], {"content": " I live in Porto "}, **{"If-Match": saved.headers["ETag"]})

    assert response.status_code == 200, response.text
    assert response.headers["ETag"] == '"2"'
    edited = response.json()["memory"]
    assert (edited["id"], edited["created_at"], edited["content"], edited["tags"], edited["revision"]) == (
        memory["id"],
        memory["created_at"],
        "I live in Porto",
        ["home"],
        2,
    )
    assert edited["updated_at"] > memory["updated_at"]
    assert as_alice.list().json()["memories"] == [edited]


def test_a_stale_if_match_gets_412_with_the_memory_as_it_is_now_and_changes_nothing(as_alice: Caller) -> None:
    memory_id = as_alice.saved_id("version one")
    current = patch(as_alice, memory_id, {"content": "version two"}, **{"If-Match": '"1"'}).json()["memory"]

    for stale in ('"1"', 'W/"2"', '"1", "7"', "garbage"):
        response = patch(as_alice, memory_id, {"content": "lost update"}, **{"If-Match": stale})
        assert response.status_code == 412, stale
        assert response.json()["error"] == "revision_conflict"
        assert response.json()["memory"] == current
        assert response.headers["ETag"] == '"2"'
    body_stale = patch(as_alice, memory_id, {"content": "lost update", "revision": 1})

    assert body_stale.status_code == 412
    assert as_alice.list().json()["memories"] == [current]
    assert patch(as_alice, memory_id, {"content": "any"}, **{"If-Match": "*"}).status_code == 200
    assert patch(as_alice, memory_id, {"content": "listed"}, **{"If-Match": '"1", "3"'}).status_code == 200


def test_patch_and_history_of_an_id_that_is_not_yours_are_the_one_404(as_alice: Caller, as_bob: Caller) -> None:
    bobs = as_bob.saved_id("bob's lighthouse")
    answers = []
    for memory_id in (bobs, new_id(MEMORY_PREFIX), "mem_nonsense", "..%2F..%2Fetc"):
        edited = patch(as_alice, memory_id, {"content": "taken over"}, **{"If-Match": '"1"'})
        read = history(as_alice, memory_id)
        answers += [(edited.status_code, edited.content), (read.status_code, read.content)]

    assert {status for status, _ in answers} == {404}
    assert len({body for _, body in answers}) == 1
    assert as_bob.list().json()["memories"][0]["content"] == "bob's lighthouse"


def test_an_invalid_patch_is_a_400_naming_the_field_and_changes_nothing(as_alice: Caller) -> None:
    memory_id = as_alice.saved_id("bounded")

    empty = patch(as_alice, memory_id, {})
    blank = patch(as_alice, memory_id, {"content": "  ", "tags": "x"})
    retire = patch(as_alice, memory_id, {"retired": True})
    secret = patch(as_alice, memory_id, {"content": "key AKIAIOSFODNN7EXAMPLE here"})

    assert (empty.status_code, empty.json()["details"][0]["path"]) == (400, "body")
    assert {d["path"] for d in blank.json()["details"]} == {"content", "tags"}
    assert retire.json()["details"][0]["path"] == "retired"
    assert (secret.status_code, secret.json()["error"]) == (422, "secret_detected")
    assert as_alice.list().json()["memories"][0]["revision"] == 1


def test_history_pages_every_version_newest_first(as_alice: Caller) -> None:
    memory_id = as_alice.saved_id("version 1")
    for n in range(2, 5):
        assert patch(as_alice, memory_id, {"content": f"version {n}"}).status_code == 200

    first = history(as_alice, memory_id, limit=3)
    second = history(as_alice, memory_id, limit=3, cursor=first.json()["next_cursor"])

    assert first.status_code == 200
    assert first.headers["ETag"] == '"4"'
    assert first.json()["memory"]["content"] == "version 4"
    assert [r["content"] for r in first.json()["revisions"]] == ["version 4", "version 3", "version 2"]
    assert [r["revision"] for r in second.json()["revisions"]] == [1]
    assert second.json()["next_cursor"] is None
    assert {r["door"] for r in first.json()["revisions"]} == {"rest"}
    assert history(as_alice, memory_id, cursor="x").status_code == 400


def test_each_version_records_its_door_and_credential_never_the_secret(
    client: TestClient, tokens: TokenService, panel_sessions: PanelSessions, alice: User
) -> None:
    rest = caller_for(client, tokens, alice)
    panel = panel_caller_for(client, panel_sessions, alice)
    memory_id = rest.saved_id("written through the API")
    assert patch(panel, memory_id, {"content": "edited in the panel"}).status_code == 200

    versions = history(rest, memory_id).json()["revisions"]

    assert [(v["content"], v["door"]) for v in versions] == [
        ("edited in the panel", "panel"),
        ("written through the API", "rest"),
    ]
    assert versions[0]["credential"].startswith("pnl_")
    assert versions[1]["credential"].startswith("tok_")
    assert not any(secret in str(versions) for secret in (rest.secret, panel.secret))


def test_a_save_with_supersedes_retires_the_old_one_and_restore_brings_it_back(as_alice: Caller) -> None:
    old = as_alice.saved_id("My office is in building A")
    saved = as_alice.save("My office moved to building C", supersedes=[old])

    assert saved.status_code == 201
    new = saved.json()["memory"]["id"]
    assert [m["id"] for m in as_alice.list().json()["memories"]] == [new]
    assert [r["id"] for r in as_alice.search("office building").json()["results"]] == [new]
    listed = as_alice.list(include="retired").json()["memories"]
    assert [(m["id"], m["retired_by"]) for m in listed] == [(new, None), (old, new)]
    assert history(as_alice, old).json()["memory"]["retired_by"] == new
    assert as_alice.list(include="everything").status_code == 400

    restored = patch(as_alice, old, {"retired": False})

    assert (restored.status_code, restored.json()["memory"]["retired_by"]) == (200, None)
    assert {r["id"] for r in as_alice.search("office building").json()["results"]} == {old, new}


def test_supersedes_naming_a_memory_that_is_not_yours_is_the_one_404_and_saves_nothing(
    as_alice: Caller, as_bob: Caller
) -> None:
    mine = as_alice.saved_id("kept")
    bobs = as_bob.saved_id("bob's")

    refused = [as_alice.save("replacement", supersedes=[mine, other]) for other in (bobs, new_id(MEMORY_PREFIX), "x")]
    unknown = as_alice.client.delete(f"/v1/memory/{new_id(MEMORY_PREFIX)}", headers=as_alice.headers)

    assert {response.status_code for response in refused} == {404}
    assert len({response.content for response in [*refused, unknown]}) == 1
    assert [m["id"] for m in as_alice.list(include="retired").json()["memories"]] == [mine]
    too_many = as_alice.save("x", supersedes=[new_id(MEMORY_PREFIX) for _ in range(11)])
    assert (too_many.status_code, too_many.json()["details"][0]["path"]) == (400, "supersedes")


def test_a_save_answers_the_similar_memories_you_already_have(as_alice: Caller, as_bob: Caller) -> None:
    near = as_alice.saved_id("my dentist appointment is on tuesday at nine")
    as_alice.saved_id("the lighthouse keeper wrote about the storm")
    as_bob.saved_id("my dentist appointment is on tuesday at ten")

    similar = as_alice.save("my dentist appointment is now on tuesday at ten").json()["similar"]
    unrelated = as_alice.save("quartz crystals grow slowly in caves").json()["similar"]

    assert [(s["id"], s["score"] > 0) for s in similar] == [(near, True)]
    assert unrelated == []


@pytest.mark.parametrize("route", ["patch", "history"])
def test_the_new_routes_need_their_scopes(
    client: TestClient, tokens: TokenService, alice: User, as_alice: Caller, route: str
) -> None:
    memory_id = as_alice.saved_id("scoped")
    reader = caller_for(client, tokens, alice, frozenset({"mcp:read"}))
    writer = caller_for(client, tokens, alice, frozenset({"mcp:write"}))

    if route == "patch":
        refused = patch(reader, memory_id, {"content": ""})
        assert (refused.status_code, refused.json()["required_scope"]) == (403, "mcp:write")
    else:
        refused = history(writer, memory_id)
        assert (refused.status_code, refused.json()["required_scope"]) == (403, "mcp:read")


def _editing_examples() -> list[Any]:
    """The JSON blocks of docs/http.md's "Editing a memory", in order."""
    page = (REPO_ROOT / "docs" / "http.md").read_text(encoding="utf-8")
    section = page.split("## Editing a memory", 1)[1].split("\n## ", 1)[0]
    return [json.loads(block) for block in re.findall(r"^```json\n(.*?)^```", section, re.DOTALL | re.MULTILINE)]


def test_the_editing_examples_of_http_md_are_what_the_server_takes_and_answers(as_alice: Caller) -> None:
    body, answer = _editing_examples()
    memory_id = as_alice.saved_id("The staging database lives somewhere", tags=["infra"])
    patch(as_alice, memory_id, {"content": "The staging database lives in us-east-1"})
    assert patch(as_alice, memory_id, {"content": "The staging database lives in eu-west-1"}).status_code == 200

    edited = patch(as_alice, memory_id, body)
    shown = history(as_alice, memory_id, limit=len(answer["revisions"]))

    assert edited.status_code == 200, edited.text
    assert edited.json()["memory"]["revision"] == answer["memory"]["revision"]
    assert shown.status_code == 200, shown.text
    real = shown.json()
    assert real.keys() == answer.keys()
    assert {key for key in answer["memory"] if key != "..."} <= real["memory"].keys()
    assert real["memory"]["content"] == answer["memory"]["content"]
    compared = ("revision", "content", "tags", "contexts", "retired_by")
    assert [{key: version[key] for key in compared} for version in real["revisions"]] == [
        {key: version[key] for key in compared} for version in answer["revisions"]
    ]
    assert [version.keys() for version in real["revisions"]] == [version.keys() for version in answer["revisions"]]
    assert real["next_cursor"] == answer["next_cursor"]
