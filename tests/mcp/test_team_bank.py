"""Issue 30's "done when", through REST and the MCP rail: two people of one organization find each other's team
memories, a third person of another organization finds nothing of them, and nobody ever reaches another person's
personal memory through any `bankScope`. Only a memory's author or an `org:admin` changes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from starlette.testclient import TestClient

from memorybank import bootstrap, composition
from memorybank.settings import HttpSettings, Settings
from memorybank_core import ORG_ADMIN_SCOPE, ORG_READ_SCOPE, ORG_WRITE_SCOPE, READ_SCOPE, WRITE_SCOPE, TokenService
from memorybank_core.ids import MEMORY_PREFIX, ORGANIZATION_PREFIX, new_id
from memorybank_testing.backends import Backend
from tests.conftest import User
from tests.http.conftest import caller_for
from tests.mcp.conftest import RpcCaller, rpc_caller

MEMBER = frozenset({READ_SCOPE, WRITE_SCOPE, ORG_READ_SCOPE, ORG_WRITE_SCOPE})


@pytest.fixture
def serve_client(runtime: bootstrap.Runtime) -> Iterator[TestClient]:
    """`memorybank serve`'s app: REST and the rail, over the test's ports."""
    settings = Settings.for_database("sqlite://", http=HttpSettings(allowed_hosts=("testserver",)))
    with (
        bootstrap.build(settings, ports=runtime.ports) as served,
        TestClient(served.web_app(), raise_server_exceptions=False) as client,
    ):
        yield client


@attrs.frozen
class Door:
    """One person's way in: a bearer token on REST, or the same token on the MCP rail."""

    way: str
    client: TestClient
    secret: str
    user_id: str = ""

    def call(
        self,
        name: str,
        *,
        path: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> tuple[int, Any]:
        """The status and JSON answer of one capability, by its operationId."""
        if self.way == "rail":
            arguments: dict[str, Any] = {"name": name}
            for key, value in (("path", path), ("query", query), ("body", body)):
                if value is not None:
                    arguments[key] = value
            caller = rpc_caller_from(self.client, self.secret)
            result = caller.call("execute_capability", arguments)
            if "structuredContent" not in result:
                # The rail words a scope refusal as the reference host does: no route answer, its own error.
                refusal = json.loads(result["content"][0]["text"])
                assert refusal["error"] == "insufficient_mcp_scope", refusal
                return 403, {"error": "insufficient_scope", "required_scope": refusal["requiredScope"]}
            content = result["structuredContent"]
            return content["status"], content.get("body")
        method, url = _ROUTES[name]
        url = url.format(**(path or {}))
        response = self.client.request(
            method, url, params=query, json=body, headers={"Authorization": f"Bearer {self.secret}"}
        )
        return response.status_code, (response.json() if response.content else None)

    def save(self, content: str, **body: Any) -> dict[str, Any]:
        status, answer = self.call("postMemory", body={"content": content, **body})
        assert status == 201, answer
        memory: dict[str, Any] = answer["memory"]
        return memory

    def found(self, q: str, bank: str | None = None) -> set[str]:
        query: dict[str, Any] = {"q": q, "limit": 50} | ({"bankScope": bank} if bank else {})
        status, answer = self.call("getMemorySearch", query=query)
        assert status == 200, answer
        return {result["id"] for result in answer["results"]}


_ROUTES = {
    "postMemory": ("POST", "/v1/memory"),
    "getMemorySearch": ("GET", "/v1/memory/search"),
    "getMemory": ("GET", "/v1/memory"),
    "deleteMemoryById": ("DELETE", "/v1/memory/{id}"),
    "patchMemoryById": ("PATCH", "/v1/memory/{id}"),
}


def rpc_caller_from(client: TestClient, secret: str) -> RpcCaller:
    return RpcCaller(client=client, user=User(), secret=secret)


@pytest.fixture(params=["rest", "rail"])
def way(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def door(way: str, client: TestClient, tokens: TokenService, user: User) -> Door:
    secret = (rpc_caller(client, tokens, user) if way == "rail" else caller_for(client, tokens, user)).secret
    return Door(way=way, client=client, secret=secret, user_id=user.user_id)


def test_teammates_find_each_others_team_memories_and_another_organization_finds_nothing(
    way: str, serve_client: TestClient, tokens: TokenService
) -> None:
    org = new_id(ORGANIZATION_PREFIX)
    ann = door(way, serve_client, tokens, User(organization_id=org, scopes=MEMBER))
    amy = door(way, serve_client, tokens, User(organization_id=org, scopes=MEMBER))
    cat = door(way, serve_client, tokens, User(scopes=MEMBER))

    shared = ann.save("The staging database lives in eu-west-1", bankScope="org")
    own = ann.save("My staging notes are in my drawer")
    amys = amy.save("The staging cluster restarts on Sundays", bankScope="org")

    # A save to the org bank echoes which bank, and who wrote it.
    assert (shared["scope"], shared["author"]) == ("org", ann.user_id)
    assert own["scope"] == "user"
    assert "author" not in own
    assert amy.found("staging", "org") == {shared["id"], amys["id"]} == ann.found("staging", "org")
    assert amy.found("staging") == set()
    assert amy.found("staging", "all") == {shared["id"], amys["id"]}
    assert ann.found("staging", "all") == {shared["id"], amys["id"], own["id"]}
    status, answer = ann.call("getMemorySearch", query={"q": "staging", "bankScope": "all"})
    assert status == 200
    assert {result["id"]: result["scope"] for result in answer["results"]} == {
        shared["id"]: "org",
        amys["id"]: "org",
        own["id"]: "user",
    }
    for bank in (None, "org", "all"):
        assert cat.found("staging", bank) == set()

    # Another organization's id is the one 404, byte for byte, in every bank.
    unknown = cat.call("deleteMemoryById", path={"id": new_id(MEMORY_PREFIX)}, query={"bankScope": "org"})
    for bank in ("org", "user"):
        assert cat.call("deleteMemoryById", path={"id": shared["id"]}, query={"bankScope": bank}) == unknown
    assert unknown[0] == 404
    # Only the author (or an org:admin) changes a team memory.
    status, refused = amy.call("deleteMemoryById", path={"id": shared["id"]}, query={"bankScope": "org"})
    assert (status, refused["error"]) == (403, "not_memory_author")
    status, refused = amy.call(
        "patchMemoryById", path={"id": shared["id"]}, query={"bankScope": "org"}, body={"content": "eu-west-2"}
    )
    assert (status, refused["error"]) == (403, "not_memory_author")
    assert amy.call("deleteMemoryById", path={"id": amys["id"]}, query={"bankScope": "org"})[0] == 204
    assert ann.found("staging", "org") == {shared["id"]}


def test_the_org_bank_needs_the_org_scopes_and_an_admin_may_delete_any_team_memory(
    way: str, serve_client: TestClient, tokens: TokenService
) -> None:
    org = new_id(ORGANIZATION_PREFIX)
    ann = door(way, serve_client, tokens, User(organization_id=org, scopes=MEMBER))
    solo = door(way, serve_client, tokens, User(organization_id=org))
    admin = door(
        way,
        serve_client,
        tokens,
        User(organization_id=org, scopes=frozenset({READ_SCOPE, WRITE_SCOPE, ORG_ADMIN_SCOPE})),
    )
    shared = ann.save("Release freeze starts on the 20th", bankScope="org")

    status, answer = solo.call("postMemory", body={"content": "for everyone", "bankScope": "org"})
    assert (status, answer["required_scope"]) == (403, ORG_WRITE_SCOPE)
    status, answer = solo.call("getMemory", query={"bankScope": "org"})
    assert (status, answer["required_scope"]) == (403, ORG_READ_SCOPE)
    assert solo.found("release freeze", "all") == set()
    status, answer = solo.call("getMemory", query={"bankScope": "team"})
    assert (status, answer["error"], answer["details"][0]["path"]) == (400, "invalid_request", "bankScope")

    assert admin.call("deleteMemoryById", path={"id": shared["id"]}, query={"bankScope": "org"})[0] == 204
    assert ann.found("release freeze", "org") == set()


def test_a_revoked_members_token_loses_the_org_bank_on_the_next_request(
    way: str, serve_client: TestClient, tokens: TokenService
) -> None:
    member = User(scopes=MEMBER)
    issued = tokens.issue(user_id=member.user_id, org_id=member.organization_id, scopes=MEMBER)
    ann = Door(way=way, client=serve_client, secret=issued.secret)
    ann.save("The on-call rota is in the ops wiki", bankScope="org")

    tokens.revoke(issued.token.id)

    if way == "rail":
        response = serve_client.post(
            "/mcp/agent",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "execute_capability",
                    "arguments": {"name": "getMemory", "query": {"bankScope": "org"}},
                },
            },
            headers={"Authorization": f"Bearer {issued.secret}", "Accept": "application/json, text/event-stream"},
        )
        assert response.status_code == 401
    else:
        response = serve_client.get(
            "/v1/memory", params={"bankScope": "org"}, headers={"Authorization": f"Bearer {issued.secret}"}
        )
        assert (response.status_code, response.json()["error"]) == (401, "unauthorized")


def test_a_purged_members_team_memories_stay_and_say_their_author_is_a_former_member(
    way: str, serve_client: TestClient, tokens: TokenService, backend: Backend
) -> None:
    org = new_id(ORGANIZATION_PREFIX)
    ann = door(way, serve_client, tokens, User(organization_id=org, scopes=MEMBER))
    amy = door(way, serve_client, tokens, User(organization_id=org, scopes=MEMBER))
    shared = ann.save("The staging database lives in eu-west-1", bankScope="org")
    amys = amy.save("The staging cluster restarts on Sundays", bankScope="org")
    amy.save("Amy's own note")
    assert (shared["author"], shared["author_former_member"]) == (ann.user_id, False)
    assert backend.purge_store is not None

    composition.build_offboarding(backend.purge_store).purge_user(ann.user_id)

    status, answer = amy.call("getMemory", query={"bankScope": "org"})
    assert status == 200, answer
    assert [(m["id"], m["author"], m["author_former_member"]) for m in answer["memories"]] == [
        (amys["id"], amy.user_id, False),
        (shared["id"], ann.user_id, True),
    ]
    status, answer = amy.call("getMemorySearch", query={"q": "staging database", "bankScope": "org"})
    assert status == 200, answer
    assert {r["id"]: r["author_former_member"] for r in answer["results"]}[shared["id"]] is True
    # A personal memory's JSON is unchanged: no author, no mark.
    (own,) = amy.call("getMemory")[1]["memories"]
    assert (own["content"], "author" in own, "author_former_member" in own) == ("Amy's own note", False, False)
