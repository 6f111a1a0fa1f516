"""What the MCP SDK's stateless transport costs per POST, beside the rail's one pass (issue 32).

    python -m benchmarks.rail_overhead --calls 400

In this process, over ASGI (no socket), on an in-memory bank: JSON-RPC `ping` and `tools/list`
POSTs to `/mcp/agent` served (a) by the rail as `memorybank serve` mounts it (`RailEndpoint`: the
bearer check and the gate, then the SDK's single-request kernel) and (b) by the SDK's own stateless
streamable-HTTP app over the same tools, with the caller already in the scope (no bearer check, no
gate). CPU per request (this process's, the in-process client included) and wall time; a 404 through
the same client is the floor of each stack. The gap between (b) and (a), although (a) does more, is
the per-POST session machinery (a transport, memory streams, a dispatcher task, an SSE task) that
ADR 0037 takes off the rail's path.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx2
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters_http import bearer_token_resolver, create_app
from adapters_mcp import CapabilityRail, create_host_app, create_mcp_mount, default_catalog
from adapters_mcp.exchange import MCP_PRINCIPAL_KEY
from adapters_mcp.http_transport import AGENT_PATH, _principal_from_request
from adapters_mcp.server import build_server
from benchmarks.common import run_header
from memorybank import bootstrap
from memorybank_core import InMemoryStore, Principal, ids

ACCEPT = "application/json, text/event-stream"
METHODS = ("ping", "tools/list")


class _AsCaller:
    """The SDK's app with the caller already in the scope, as the rail's endpoint leaves it."""

    def __init__(self, app: ASGIApp, principal: Principal) -> None:
        self._app = app
        self._principal = principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app({**scope, MCP_PRINCIPAL_KEY: self._principal}, receive, send)


async def _time(
    app: ASGIApp, lifespan: Callable[[], AbstractAsyncContextManager[Any]], secret: str, calls: int
) -> dict[str, tuple[float, float]]:
    headers = {"Authorization": f"Bearer {secret}", "Accept": ACCEPT}
    found: dict[str, tuple[float, float]] = {}
    async with (
        lifespan(),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://testserver") as client,
    ):
        for name in (*METHODS, "404"):
            message = {"jsonrpc": "2.0", "id": 1, "method": name}

            async def call(name: str = name, message: dict[str, object] = message) -> None:
                if name == "404":
                    await client.get("/nowhere")
                    return
                answer = await client.post("/mcp/agent", json=message, headers=headers)
                if answer.status_code != 200:
                    raise RuntimeError(f"{name}: {answer.status_code} {answer.text[:200]}")

            for _ in range(50):
                await call()
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(calls):
                await call()
            found[name] = ((time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls)
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Time both ways and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rail_overhead", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400, help="requests of each kind (default: 400)")
    args = parser.parse_args(argv)
    services = bootstrap.build(store=InMemoryStore()).services  # the in-memory ports: no database
    bank, tokens = services.bank, services.tokens
    issued = tokens.issue(user_id=ids.new_id(ids.USER_PREFIX), org_id=ids.new_id(ids.ORGANIZATION_PREFIX))
    principal = tokens.authenticate(issued.secret)
    assert principal is not None  # noqa: S101 - just issued
    rest = create_app(bank, bearer_token_resolver(tokens))
    mount = create_mcp_mount(
        rest,
        tokens.authenticate,
        allowed_hosts=["testserver"],
        catalog=default_catalog(),
        memory_enabled=bank.memory_enabled,
    )
    server = build_server(CapabilityRail(default_catalog(), rest), _principal_from_request)
    sdk_app = server.streamable_http_app(
        streamable_http_path=AGENT_PATH,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    reference = Starlette(routes=[Mount("/mcp", app=_AsCaller(sdk_app, principal))])
    print(run_header("the rail's one pass beside the SDK's stateless transport, in-process"))
    one_pass = asyncio.run(_time(create_host_app(rest, mount), mount.lifespan, issued.secret, args.calls))
    sdk = asyncio.run(_time(reference, server.session_manager.run, issued.secret, args.calls))
    print(f"command: python -m benchmarks.rail_overhead --calls {args.calls}")
    print()
    print("| request | one pass: CPU / wall ms | SDK's stateless transport: CPU / wall ms | SDK / one pass, CPU |")
    print("|---|---|---|---|")
    for name in (*METHODS, "404"):
        (ours_cpu, ours_wall), (theirs_cpu, theirs_wall) = one_pass[name], sdk[name]
        print(
            f"| {name} | {ours_cpu:.3f} / {ours_wall:.3f} | {theirs_cpu:.3f} / {theirs_wall:.3f} "
            f"| {theirs_cpu / ours_cpu:.2f} x |"
        )


if __name__ == "__main__":
    main()
