"""The rail's one-pass endpoint answers every request exactly as the SDK's own stateless transport does.

`adapters_mcp.exchange.RailEndpoint` answers requests itself (the SDK's single-request kernel, and
`execute_capability` without the SDK at all); these tests send the same messages to it and to the
SDK's stateless streamable-HTTP app over the same tools, and compare status, media type and bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters_http import bearer_token_resolver, create_app
from adapters_mcp import CapabilityRail, create_host_app, create_mcp_mount, default_catalog
from adapters_mcp.exchange import MCP_PRINCIPAL_KEY
from adapters_mcp.http_transport import AGENT_PATH, _principal_from_request
from adapters_mcp.server import build_server
from memorybank_core import JsonValue, MemoryBank, TokenPrincipal, TokenService
from memorybank_testing.principals import User

ACCEPT = "application/json, text/event-stream"


class _AsPrincipal:
    """Puts the caller in the scope, as the rail's endpoint does once it authenticated it."""

    def __init__(self, app: ASGIApp, principal: TokenPrincipal) -> None:
        self._app = app
        self._principal = principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app({**scope, MCP_PRINCIPAL_KEY: self._principal}, receive, send)


def _principal(user: User) -> TokenPrincipal:
    return TokenPrincipal(user_id=user.user_id, organization_id=user.organization_id, scopes=frozenset(user.scopes))


@pytest.fixture(params=[False, True], ids=["sse", "json"])
def both(request: pytest.FixtureRequest, bank: MemoryBank, tokens: TokenService, alice: User) -> Iterator[Any]:
    """(ours, the SDK's, bearer secret): two clients over the same bank and tools."""
    json_response: bool = request.param
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(
        rest,
        tokens.authenticate,
        allowed_hosts=["testserver"],
        catalog=default_catalog(),
        json_response=json_response,
        memory_enabled=bank.memory_enabled,
    )
    sdk_server = build_server(CapabilityRail(default_catalog(), rest), _principal_from_request)
    sdk_app = sdk_server.streamable_http_app(
        streamable_http_path=AGENT_PATH,
        stateless_http=True,
        json_response=json_response,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    reference = Starlette(
        routes=[Mount("/mcp", app=_AsPrincipal(sdk_app, _principal(alice)))],
        lifespan=lambda _app: sdk_server.session_manager.run(),
    )
    secret = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    with (
        TestClient(create_host_app(rest, mount), raise_server_exceptions=False) as ours,
        TestClient(reference, raise_server_exceptions=False) as theirs,
    ):
        yield ours, theirs, secret


MESSAGES: list[dict[str, Any]] = [
    {
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    },
    {"method": "ping"},
    {"method": "tools/list"},
    {"method": "prompts/list"},
    {"method": "prompts/get", "params": {"name": "memory_bank"}},
    {"method": "prompts/get", "params": {"name": "nope"}},
    {"method": "resources/list"},
    {"method": "tools/call", "params": {"name": "search_capabilities", "arguments": {"query": "save a memory"}}},
    {"method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
    {"method": "tools/call", "params": {"name": "execute_capability", "arguments": {"name": "getMemory"}}},
    {
        "method": "tools/call",
        "params": {
            "name": "execute_capability",
            "arguments": {"name": "getMemorySearch", "query": {"q": "lighthouse éè 東京", "limit": 5}},
        },
    },
    {
        "method": "tools/call",
        "params": {"name": "execute_capability", "arguments": {"name": "getMemorySearch", "query": {"limit": 500}}},
    },
    {
        "method": "tools/call",
        "params": {"name": "execute_capability", "arguments": {"name": "deleteMemoryById", "path": {"id": "mem_nope"}}},
    },
    {
        "method": "tools/call",
        "params": {"name": "execute_capability", "arguments": {"name": "postMemory", "body": {"content": ""}}},
    },
    {
        "method": "tools/call",
        "params": {
            "name": "execute_capability",
            "arguments": {"name": "postMemory", "body": {"content": "x", "tags": "no"}},
        },
    },
    {"method": "tools/call", "params": {"name": "execute_capability", "arguments": {"name": "noSuchCapability"}}},
    {"method": "tools/call", "params": {"name": "execute_capability", "arguments": {"nam": "typo"}}},
    {
        "method": "tools/call",
        "params": {
            "name": "execute_capability",
            "arguments": {
                "name": "postMemory",
                "body": {"content": "aws AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
            },
        },
    },
]


def _post(client: TestClient, message: dict[str, Any], secret: str, version: str | None) -> Any:
    headers = {"Authorization": f"Bearer {secret}", "Accept": ACCEPT}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    return client.post("/mcp/agent", json={"jsonrpc": "2.0", "id": 7, **message}, headers=headers)


@pytest.mark.parametrize("version", [None, "2024-11-05", "2025-11-25"])
@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: f"{m['method']}:{m.get('params', {}).get('name', '')}")
def test_each_request_is_answered_byte_for_byte_as_the_sdk_answers_it(
    both: Any, bank: MemoryBank, alice: User, message: dict[str, Any], version: str | None
) -> None:
    ours, theirs, secret = both
    for content in ("The lighthouse keeper's notes, éè 東京", "Another lighthouse, with a score"):
        bank.save(alice, JsonValue({"content": content, "tags": ["sea"], "contexts": [{"snippet": "from chat"}]}))

    mine = _post(ours, message, secret, version)
    reference = _post(theirs, message, secret, version)

    assert (mine.status_code, mine.headers["content-type"]) == (
        reference.status_code,
        reference.headers["content-type"],
    )
    assert mine.content == reference.content
    framing = {"content-length", "transfer-encoding", "x-request-id", "x-content-type-options"}
    assert {k: v for k, v in mine.headers.items() if k not in framing} == {
        k: v for k, v in reference.headers.items() if k not in framing
    }


def test_an_execute_of_a_save_answers_as_the_sdk_would(both: Any, bank: MemoryBank, alice: User) -> None:
    # A save differs by its new id and time: compare everything else.
    ours, theirs, secret = both
    save = {
        "method": "tools/call",
        "params": {
            "name": "execute_capability",
            "arguments": {"name": "postMemory", "body": {"content": "kept", "tags": ["a"]}},
        },
    }

    mine = _post(ours, save, secret, None)
    # The first save leaves the bank as it found it, so the second's `similar` (a look at the bank) is the same.
    (first_saved,) = bank.list(alice).memories
    bank.delete(alice, memory_id=first_saved.id)
    reference = _post(theirs, save, secret, None)

    assert (mine.status_code, mine.headers["content-type"]) == (
        reference.status_code,
        reference.headers["content-type"],
    )
    assert len(bank.list(alice).memories) == 1
    # The ids and times are new on each save; everything else is the same bytes.
    first, second = (re.sub(rb"mem_[0-9a-z]{26}|\d{4}-\d\d-\d\dT[0-9:.]+Z", b"*", r.content) for r in (mine, reference))
    assert first == second


class _Counted:
    """Counts the calls of what it wraps."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.wrapped(*args, **kwargs)


@pytest.mark.parametrize(
    "arguments",
    [{"name": "getMemory"}, {"name": "postMemory", "body": {"content": "one pass"}}],
    ids=["list", "save"],
)
def test_an_execute_checks_the_token_once_reads_the_gate_once_and_takes_one_thread_hop(
    bank: MemoryBank, tokens: TokenService, alice: User, monkeypatch: pytest.MonkeyPatch, arguments: dict[str, Any]
) -> None:
    import anyio.to_thread

    authenticate, memory_enabled = _Counted(tokens.authenticate), _Counted(bank.memory_enabled)
    policy = _Counted(bank._policy)
    monkeypatch.setattr(bank, "_policy", policy)
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(
        rest, authenticate, allowed_hosts=["testserver"], catalog=default_catalog(), memory_enabled=memory_enabled
    )
    secret = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    with TestClient(create_host_app(rest, mount), raise_server_exceptions=False) as client:
        hops = _Counted(anyio.to_thread.run_sync)
        monkeypatch.setattr(anyio.to_thread, "run_sync", hops)
        message = {"method": "tools/call", "params": {"name": "execute_capability", "arguments": arguments}}
        answer = _post(client, message, secret, None)
        monkeypatch.undo()

    assert answer.status_code == 200
    assert b'"isError":false' in answer.content
    assert (authenticate.calls, memory_enabled.calls, policy.calls, hops.calls) == (1, 0, 1, 1)


def test_a_revoked_token_is_refused_by_the_rail_on_its_hot_path_before_anything_runs(
    bank: MemoryBank, tokens: TokenService, alice: User
) -> None:
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(rest, tokens.authenticate, allowed_hosts=["testserver"], catalog=default_catalog())
    issued = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id)
    tokens.revoke(issued.token.id)
    save = {
        "method": "tools/call",
        "params": {"name": "execute_capability", "arguments": {"name": "postMemory", "body": {"content": "no"}}},
    }
    with TestClient(create_host_app(rest, mount), raise_server_exceptions=False) as client:
        answer = _post(client, save, issued.secret, None)

    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_mcp_token"
    assert "resource_metadata=" in answer.headers["www-authenticate"]
    assert bank.list(_principal(alice)).memories == ()
