"""Streamable HTTP at /mcp/agent: bearer auth answers, metadata, stateless one-shot calls and full sessions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.testclient import TestClient

from adapters_http import bearer_token_resolver, create_app
from adapters_mcp import MEMORY_BANK_PROMPT, create_host_app, create_mcp_mount, default_catalog, transport_security
from memorybank_core import InMemoryTokenStore, MemoryBank, TokenService, UnavailableError
from tests.conftest import User
from tests.mcp.conftest import MCP_ACCEPT, RpcCaller, rpc_caller, text_json
from tests.rail_users import sse_data

METADATA_URL = "http://testserver/.well-known/oauth-protected-resource/mcp/agent"
INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


def challenge(header: str) -> dict[str, str]:
    """The `key="value"` pairs of a `WWW-Authenticate: Bearer ...` header."""
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def post_rpc(client: TestClient, headers: dict[str, str], method: str = "tools/list") -> Any:
    return client.post(
        "/mcp/agent",
        json={"jsonrpc": "2.0", "id": 1, "method": method},
        headers={"Accept": MCP_ACCEPT, **headers},
    )


# --- authentication -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Basic dXNlcjpwdw=="}, {"Authorization": "Bearer"}, {"Authorization": "Bearer  "}],
)
def test_no_bearer_token_is_401_missing_mcp_token_with_a_challenge(client: TestClient, headers: dict[str, str]) -> None:
    response = post_rpc(client, headers)

    assert response.status_code == 401
    assert response.json()["error"] == "missing_mcp_token"
    assert challenge(response.headers["www-authenticate"]) == {
        "error": "missing_mcp_token",
        "resource_metadata": METADATA_URL,
        "scope": "mcp:read mcp:write",
    }


def test_an_unknown_or_revoked_token_is_401_invalid_mcp_token(
    client: TestClient, tokens: TokenService, alice: User
) -> None:
    issued = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id)
    assert post_rpc(client, {"Authorization": f"Bearer {issued.secret}"}).status_code == 200
    tokens.revoke(issued.token.id)

    for secret in (issued.secret, "mbk_unknown", "not-even-our-format"):
        response = post_rpc(client, {"Authorization": f"Bearer {secret}"})
        assert response.status_code == 401
        assert response.json()["error"] == "invalid_mcp_token"
        assert challenge(response.headers["www-authenticate"])["error"] == "invalid_mcp_token"


def test_a_token_with_neither_rail_scope_is_403(bank: MemoryBank) -> None:
    def authenticate(_secret: str) -> User:
        return User(scopes=frozenset({"profile:read"}))

    rest = create_app(bank, bearer_token_resolver(TokenService(store=InMemoryTokenStore())))
    app = create_host_app(
        rest, create_mcp_mount(rest, authenticate, allowed_hosts=["testserver"], catalog=default_catalog())
    )
    with TestClient(app) as client:
        response = post_rpc(client, {"Authorization": "Bearer anything"})

    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_mcp_scope"
    assert challenge(response.headers["www-authenticate"]) == {
        "error": "insufficient_scope",
        "resource_metadata": METADATA_URL,
        "scope": "mcp:read mcp:write",
    }


def test_a_read_only_token_may_enter_and_is_refused_writes_per_capability(
    client: TestClient, tokens: TokenService, alice: User
) -> None:
    reader = rpc_caller(client, tokens, alice, frozenset({"mcp:read"}))

    listed = reader.execute("getMemory")
    saved = reader.execute("postMemory", body={"content": "x"})

    assert listed["isError"] is False
    assert saved["isError"] is True
    assert text_json(saved) == {
        "error": "insufficient_mcp_scope",
        "message": "postMemory needs the mcp:write scope, which this token does not have.",
        "requiredScope": "mcp:write",
    }


def test_a_token_store_outage_is_503_with_retry_after(bank: MemoryBank) -> None:
    def authenticate(_secret: str) -> User:
        raise UnavailableError("token store down")

    rest = create_app(bank, bearer_token_resolver(TokenService(store=InMemoryTokenStore())))
    app = create_host_app(
        rest, create_mcp_mount(rest, authenticate, allowed_hosts=["testserver"], catalog=default_catalog())
    )
    with TestClient(app) as client:
        response = post_rpc(client, {"Authorization": "Bearer anything"})

    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"


def test_the_public_url_names_the_server_behind_a_proxy(bank: MemoryBank, tokens: TokenService) -> None:
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(
        rest,
        tokens.authenticate,
        public_url="https://bank.example.com/",
        allowed_hosts=["testserver"],
        catalog=default_catalog(),
    )
    with TestClient(create_host_app(rest, mount)) as client:
        refused = post_rpc(client, {})
        metadata = client.get("/.well-known/oauth-protected-resource/mcp/agent").json()

    expected = "https://bank.example.com/.well-known/oauth-protected-resource/mcp/agent"
    assert challenge(refused.headers["www-authenticate"])["resource_metadata"] == expected
    assert metadata["resource"] == "https://bank.example.com/mcp/agent"


def test_a_malformed_host_is_never_echoed_into_the_challenge(client: TestClient) -> None:
    response = post_rpc(client, {"Host": 'evil", x="y'})

    assert response.status_code == 401
    assert "evil" not in response.headers["www-authenticate"]


# --- metadata -------------------------------------------------------------------------------------------


def test_the_protected_resource_metadata_is_public_and_has_the_reference_fields(client: TestClient) -> None:
    response = client.get("/.well-known/oauth-protected-resource/mcp/agent")

    assert response.status_code == 200
    assert response.json() == {
        "resource": "http://testserver/mcp/agent",
        "authorization_servers": [],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "bearer_methods_supported": ["header"],
    }


def test_authorization_servers_can_be_named(bank: MemoryBank, tokens: TokenService) -> None:
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(
        rest, tokens.authenticate, authorization_servers=["https://auth.example.com"], catalog=default_catalog()
    )
    with TestClient(create_host_app(rest, mount)) as client:
        metadata = client.get("/.well-known/oauth-protected-resource/mcp/agent").json()

    assert metadata["authorization_servers"] == ["https://auth.example.com"]


# --- the protocol -------------------------------------------------------------------------------------


def test_a_one_shot_tools_call_without_initialize_works(rpc_alice: RpcCaller) -> None:
    answer = rpc_alice.post("tools/call", {"name": "search_capabilities", "arguments": {"query": "save a memory"}})

    assert answer["id"] == 1
    assert answer["result"]["structuredContent"]["matches"][0]["name"] == "postMemory"
    assert text_json(answer["result"]) == answer["result"]["structuredContent"]


def test_the_rail_can_answer_plain_json_instead_of_sse(bank: MemoryBank, tokens: TokenService, alice: User) -> None:
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(
        rest, tokens.authenticate, allowed_hosts=["testserver"], json_response=True, catalog=default_catalog()
    )
    secret = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    call = {"name": "search_capabilities", "arguments": {"query": "save a memory"}}
    with TestClient(create_host_app(rest, mount)) as client:
        response = client.post(
            "/mcp/agent",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
            headers={"Authorization": f"Bearer {secret}", "Accept": MCP_ACCEPT},
        )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["structuredContent"]["matches"][0]["name"] == "postMemory"


def test_a_handshake_then_calls_work_without_a_session(client: TestClient, rpc_alice: RpcCaller) -> None:
    headers = {"Authorization": f"Bearer {rpc_alice.secret}", "Accept": MCP_ACCEPT}
    initialized = client.post(
        "/mcp/agent", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}, headers=headers
    )
    notified = client.post(
        "/mcp/agent", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    tools = rpc_alice.post("tools/list", request_id=2)

    assert initialized.status_code == 200
    assert "mcp-session-id" not in initialized.headers  # stateless: nothing is kept between requests
    result = sse_data(initialized.text)["result"]
    assert result["instructions"] == MEMORY_BANK_PROMPT
    assert result["capabilities"]["tools"] is not None
    assert result["capabilities"]["prompts"] is not None
    assert notified.status_code == 202
    assert [tool["name"] for tool in tools["result"]["tools"]] == ["search_capabilities", "execute_capability"]
    annotations = {t["name"]: t["annotations"] for t in tools["result"]["tools"]}
    assert annotations["search_capabilities"]["readOnlyHint"] is True
    assert annotations["execute_capability"]["destructiveHint"] is True


def test_the_prompt_is_listed_and_served(rpc_alice: RpcCaller) -> None:
    listed = rpc_alice.post("prompts/list")
    got = rpc_alice.post("prompts/get", {"name": "memory_bank"})
    unknown = rpc_alice.post("prompts/get", {"name": "memory_save"})

    assert [p["name"] for p in listed["result"]["prompts"]] == ["memory_bank"]
    assert got["result"]["messages"][0]["content"]["text"] == MEMORY_BANK_PROMPT
    assert unknown["error"]["code"] == -32602


def test_an_unknown_tool_is_a_json_rpc_error(rpc_alice: RpcCaller) -> None:
    answer = rpc_alice.post("tools/call", {"name": "memory_save", "arguments": {}})

    assert "result" not in answer
    assert answer["error"]["code"] == -32602
    assert "memory_save" in answer["error"]["message"]


def test_a_post_that_does_not_accept_json_is_refused(client: TestClient, rpc_alice: RpcCaller) -> None:
    response = client.post(
        "/mcp/agent",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {rpc_alice.secret}", "Accept": "text/html"},
    )

    assert response.status_code == 406


def test_rest_and_the_rail_share_tokens_and_data(client: TestClient, rpc_alice: RpcCaller) -> None:
    saved = rpc_alice.execute("postMemory", body={"content": "Our staging database is in Frankfurt"})
    memory_id = saved["structuredContent"]["body"]["memory"]["id"]

    rest = client.get("/v1/memory", headers={"Authorization": f"Bearer {rpc_alice.secret}"})

    assert rest.status_code == 200
    assert [m["id"] for m in rest.json()["memories"]] == [memory_id]
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/no/such/route").json()["error"] == "not_found"


# --- DNS rebinding protection -------------------------------------------------------------------------


@pytest.fixture
def loopback_client(bank: MemoryBank, tokens: TokenService) -> Iterator[TestClient]:
    rest = create_app(bank, bearer_token_resolver(tokens))
    app = create_host_app(
        rest, create_mcp_mount(rest, tokens.authenticate, bind_host="127.0.0.1", catalog=default_catalog())
    )
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        yield client


def test_a_loopback_bind_serves_loopback_names_and_refuses_others(
    loopback_client: TestClient, tokens: TokenService, alice: User
) -> None:
    caller = rpc_caller(loopback_client, tokens, alice)
    auth = {"Authorization": f"Bearer {caller.secret}"}

    assert post_rpc(loopback_client, auth).status_code == 200
    assert post_rpc(loopback_client, {**auth, "Host": "localhost:8000"}).status_code == 200
    assert post_rpc(loopback_client, {**auth, "Host": "evil.example:8000"}).status_code == 421
    assert post_rpc(loopback_client, {**auth, "Origin": "http://evil.example"}).status_code == 403


def test_transport_security_follows_the_bind_and_the_allowed_hosts() -> None:
    assert transport_security("127.0.0.1").enable_dns_rebinding_protection
    assert not transport_security("0.0.0.0").enable_dns_rebinding_protection  # noqa: S104 - a bind address under test
    named = transport_security("0.0.0.0", ["bank.example.com"])  # noqa: S104
    assert named.enable_dns_rebinding_protection
    assert named.allowed_hosts == ["bank.example.com"]
    assert named.allowed_origins == ["http://bank.example.com", "https://bank.example.com"]


# --- the SDK's own client, in-process ----------------------------------------------------------------


@pytest.mark.anyio
async def test_the_sdk_client_saves_in_one_session_and_recalls_in_a_fresh_one(
    bank: MemoryBank, tokens: TokenService, alice: User
) -> None:
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(rest, tokens.authenticate, catalog=default_catalog())
    app: Starlette = create_host_app(rest, mount)
    secret = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    url = "http://127.0.0.1:8000/mcp/agent"

    def http() -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), headers={"Authorization": f"Bearer {secret}"}
        )

    async with mount.lifespan():
        async with (
            http() as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            assert init.instructions == MEMORY_BANK_PROMPT
            found = await session.call_tool("search_capabilities", {"query": "save a memory"})
            name = (found.structured_content or {})["matches"][0]["name"]
            saved = await session.call_tool(
                "execute_capability", {"name": name, "body": {"content": "The office wifi is called Larkspur"}}
            )
            assert not saved.is_error
        async with (
            http() as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            recalled = await session.call_tool(
                "execute_capability", {"name": "getMemorySearch", "query": {"q": "what is the wifi called"}}
            )

    assert not recalled.is_error
    results = (recalled.structured_content or {})["body"]["results"]
    assert [r["content"] for r in results] == ["The office wifi is called Larkspur"]


def test_every_answer_of_the_rail_and_the_api_behind_it_says_nosniff(client: TestClient, rpc_alice: RpcCaller) -> None:
    # Issue 19, finding 9: JSON answers carried no `X-Content-Type-Options: nosniff`.
    answers = [
        post_rpc(client, {}),  # 401 from the rail's door
        client.post(
            "/mcp/agent",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": MCP_ACCEPT, "Authorization": f"Bearer {rpc_alice.secret}"},
        ),
        client.get("/.well-known/oauth-protected-resource/mcp/agent"),
        client.get("/v1/memory", headers={"Authorization": f"Bearer {rpc_alice.secret}"}),
    ]

    assert [answer.headers.get("x-content-type-options") for answer in answers] == ["nosniff"] * len(answers)
    assert answers[1].status_code == 200
