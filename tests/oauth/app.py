"""The standalone app trusting real providers, in process (TestClient), with the knobs tests turn."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs
import httpx2
from starlette.testclient import TestClient

from adapters_oidc import IssuerTokenVerifier, ResourceServerSettings, SignInSettings
from memorybank import bootstrap
from memorybank_core import (
    InMemoryStore,
    PanelSessions,
    TokenService,
)

BASE_URL = "http://127.0.0.1:8000"
RESOURCE = BASE_URL + "/mcp/agent"
METADATA_URL = BASE_URL + "/.well-known/oauth-protected-resource/mcp/agent"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class ManualClock:
    """A monotonic clock the test moves by hand (for key-cache ages)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@attrs.frozen
class Server:
    """The app under test and what it was built from."""

    client: TestClient
    verifier: IssuerTokenVerifier
    tokens: TokenService
    clock: ManualClock
    requests: list[str]
    """Every URL the resource server fetched from an issuer, in order."""
    sessions: PanelSessions

    def save(self, token: str, content: str) -> httpx2.Response:
        return self.client.post("/v1/memory", json={"content": content}, headers=bearer(token))

    def search(self, token: str, query: str) -> httpx2.Response:
        return self.client.get("/v1/memory/search", params={"q": query}, headers=bearer(token))

    def rail(self, token: str | None) -> httpx2.Response:
        headers = {**MCP_HEADERS, **(bearer(token) if token is not None else {})}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        return self.client.post("/mcp/agent", json=body, headers=headers)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextmanager
def serving(
    issuers: Sequence[str],
    *,
    panel_sign_in: SignInSettings | None = None,
    transport: httpx2.BaseTransport | None = None,
    **settings: Any,
) -> Iterator[Server]:
    """The standalone app (in-memory storage) trusting `issuers`, with `settings` overriding the defaults.

    `panel_sign_in` offers the panel's "Sign in with <provider>"; `transport` carries the server's requests
    to the issuers (to tamper with the provider's answers on the way).
    """
    requests: list[str] = []

    def record(request: httpx2.Request) -> None:
        requests.append(str(request.url))

    hooks: dict[str, list[Callable[..., Any]]] = {"request": [record]}
    http = httpx2.Client(timeout=5, event_hooks=hooks, transport=transport)
    clock = ManualClock()
    verifier = IssuerTokenVerifier(
        ResourceServerSettings(issuers=tuple(issuers), resource=RESOURCE, **settings), http=http, clock=clock
    )
    runtime = bootstrap.build(store=InMemoryStore(), issuers=verifier, panel_sign_in=panel_sign_in)
    services = runtime.services
    try:
        with TestClient(runtime.web_app(), base_url=BASE_URL) as client:
            yield Server(
                client=client,
                verifier=verifier,
                tokens=services.tokens,
                clock=clock,
                requests=requests,
                sessions=services.panel_sessions,
            )
    finally:
        runtime.close()
        verifier.close()


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The `key="value"` pairs of the response's `WWW-Authenticate: Bearer ...` header."""
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', header))
