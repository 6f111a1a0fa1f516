"""Fixtures for the MCP facade: a REST app over a fresh bank, the rail over it, and callers speaking JSON-RPC."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.testclient import TestClient

from adapters_http import bearer_token_resolver, create_app
from adapters_mcp import CapabilityRail, McpMount, create_host_app, create_mcp_mount, default_catalog
from memorybank.bootstrap import Runtime
from memorybank_core import MemoryBank, Principal, TokenService
from tests.conftest import User
from tests.contract.backends import FACTORIES, BackendFactory
from tests.rail_users import sse_data

#: The rail runs on the embedded backends; MariaDB is exercised by the HTTP and contract tiers.
MCP_BACKENDS = [name for name in FACTORIES if name in {"memory", "sqlite"}]

#: What every streamable HTTP POST must accept (the SDK answers 406 otherwise).
MCP_ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="session", params=MCP_BACKENDS)
def backend_factory(request: pytest.FixtureRequest) -> Iterator[BackendFactory]:
    """Overrides the suite-wide fixture: the rail runs on the embedded backends only."""
    factory = FACTORIES[request.param].make()
    yield factory
    factory.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def nobody(_request: Request) -> Principal | None:
    """A resolver that accepts no network caller: only in-process principals get in."""
    return None


@pytest.fixture
def rest_app(bank: MemoryBank) -> Starlette:
    """The REST app with no network authentication (the rail supplies principals in-process)."""
    return create_app(bank, nobody)


@pytest.fixture
def rail(rest_app: Starlette) -> CapabilityRail:
    return CapabilityRail(default_catalog(), rest_app)


@pytest.fixture
def tokens(runtime: Runtime) -> TokenService:
    return runtime.services.tokens


@pytest.fixture
def mount(bank: MemoryBank, tokens: TokenService) -> McpMount:
    rest = create_app(bank, bearer_token_resolver(tokens))
    return create_mcp_mount(rest, tokens.authenticate, allowed_hosts=["testserver"], catalog=default_catalog())


@pytest.fixture
def host_app(bank: MemoryBank, tokens: TokenService) -> Starlette:
    """`memorybank serve`'s shape: REST and the rail in one app, the same tokens for both."""
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(
        rest,
        tokens.authenticate,
        allowed_hosts=["testserver"],
        catalog=default_catalog(),
        memory_enabled=bank.memory_enabled,
    )
    return create_host_app(rest, mount)


@pytest.fixture
def client(host_app: Starlette) -> Iterator[TestClient]:
    with TestClient(host_app, raise_server_exceptions=False) as test_client:
        yield test_client


@attrs.frozen
class RpcCaller:
    """A token holder talking JSON-RPC to `/mcp/agent`, one stateless POST per call."""

    client: TestClient
    user: User
    secret: str

    def post(self, method: str, params: dict[str, Any] | None = None, *, request_id: int = 1) -> Any:
        """The JSON-RPC response object of one request (asserting a 200)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self.client.post(
            "/mcp/agent",
            json=message,
            headers={"Authorization": f"Bearer {self.secret}", "Accept": MCP_ACCEPT},
        )
        assert response.status_code == 200, response.text
        return sse_data(response.text)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The `CallToolResult` of one tool call, as JSON."""
        answer = self.post("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def execute(self, name: str, **arguments: Any) -> dict[str, Any]:
        """`execute_capability` with `name` and the given path/query/body."""
        return self.call("execute_capability", {"name": name, **arguments})


def text_json(result: dict[str, Any]) -> Any:
    """The JSON in a tool result's (only) text block."""
    assert [block["type"] for block in result["content"]] == ["text"]
    return json.loads(result["content"][0]["text"])


def rpc_caller(client: TestClient, tokens: TokenService, user: User, scopes: frozenset[str] | None = None) -> RpcCaller:
    """A caller with a fresh token for `user`."""
    issued = tokens.issue(user_id=user.user_id, org_id=user.organization_id, scopes=scopes or user.scopes)
    return RpcCaller(client=client, user=user, secret=issued.secret)


@pytest.fixture
def rpc_alice(client: TestClient, tokens: TokenService, alice: User) -> RpcCaller:
    return rpc_caller(client, tokens, alice)


@pytest.fixture
def rpc_bob(client: TestClient, tokens: TokenService, bob: User) -> RpcCaller:
    return rpc_caller(client, tokens, bob)
