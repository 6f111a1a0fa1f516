"""Fixtures for the HTTP facade: an app over a fresh bank, and token-holding callers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from adapters_http.panel import PANEL_HEADER, SESSION_COOKIE
from memorybank.bootstrap import Runtime
from memorybank.composition import build_rest_app
from memorybank_core import PanelSessions, TokenService
from tests.conftest import User
from tests.contract.backends import FACTORIES, BackendFactory

#: The copy-prompt text the test app's panel serves.
TEST_PROMPT = "## Memory Bank\n\nSearch first, then execute.\n"

#: Route tests run on these backends; MariaDB is exercised end to end through a real server instead.
HTTP_BACKENDS = [name for name in FACTORIES if name in {"memory", "sqlite"}]


@pytest.fixture(scope="session", params=HTTP_BACKENDS)
def backend_factory(request: pytest.FixtureRequest) -> Iterator[BackendFactory]:
    """Overrides the suite-wide fixture: the HTTP tier runs on the embedded backends only."""
    factory = FACTORIES[request.param].make()
    yield factory
    factory.close()


@pytest.fixture
def clock() -> None:
    """The system clock: the panel's cookie ages by the real time (adapters_http.panel.session_cookie)."""


@pytest.fixture
def tokens(runtime: Runtime) -> TokenService:
    return runtime.services.tokens


@pytest.fixture
def panel_sessions(runtime: Runtime) -> PanelSessions:
    return runtime.services.panel_sessions


@pytest.fixture
def app(runtime: Runtime) -> Starlette:
    """The standalone server's REST app: bearer tokens, or the panel's session cookie on panel calls."""
    services = runtime.services
    return build_rest_app(services, authenticate=services.tokens.authenticate, prompt=TEST_PROMPT)


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


#: The answer to a request with two `Authorization` headers, on REST and on the rail alike.
TWO_AUTHORIZATION_HEADERS_ANSWER = {
    "error": "invalid_request",
    "message": "The request is invalid; see details.",
    "details": [{"path": "authorization", "message": "must be sent once, not 2 times"}],
}


@attrs.frozen
class Caller:
    """A user talking to the app through one door: a bearer token, or the panel's session cookie."""

    client: TestClient
    user: User
    secret: str
    door: str = "bearer"

    @property
    def headers(self) -> dict[str, str]:
        if self.door == "panel":
            # What the panel's own script sends: the cookie, its header, and the page's origin.
            return {"Cookie": f"{SESSION_COOKIE}={self.secret}", PANEL_HEADER: "1", "Origin": "http://testserver"}
        return {"Authorization": f"Bearer {self.secret}"}

    def save(self, content: str = "The deploy target is a Daytona sandbox", **body: Any) -> httpx2.Response:
        return self.client.post("/v1/memory", json={"content": content, **body}, headers=self.headers)

    def saved_id(self, content: str = "The deploy target is a Daytona sandbox", **body: Any) -> str:
        response = self.save(content, **body)
        assert response.status_code == 201, response.text
        memory_id: str = response.json()["memory"]["id"]
        return memory_id

    def search(self, q: str, **params: Any) -> httpx2.Response:
        return self.client.get("/v1/memory/search", params={"q": q, **params}, headers=self.headers)

    def list(self, **params: Any) -> httpx2.Response:
        return self.client.get("/v1/memory", params=params, headers=self.headers)

    def delete(self, memory_id: str) -> httpx2.Response:
        return self.client.delete(f"/v1/memory/{memory_id}", headers=self.headers)


def caller_for(client: TestClient, tokens: TokenService, user: User, scopes: frozenset[str] | None = None) -> Caller:
    """A caller with a fresh token for `user` (all of the user's scopes unless `scopes` is given)."""
    issued = tokens.issue(user_id=user.user_id, org_id=user.organization_id, scopes=scopes or user.scopes)
    return Caller(client=client, user=user, secret=issued.secret)


def panel_caller_for(client: TestClient, sessions: PanelSessions, user: User) -> Caller:
    """A caller signed in to the panel as `user` (a session cookie, as after opening a sign-in link)."""
    link = sessions.issue_link(user_id=user.user_id, org_id=user.organization_id)
    started = sessions.redeem_link(link.code)
    assert started is not None
    return Caller(client=client, user=user, secret=started.secret, door="panel")


@pytest.fixture
def as_alice(client: TestClient, tokens: TokenService, alice: User) -> Caller:
    return caller_for(client, tokens, alice)


@pytest.fixture
def as_bob(client: TestClient, tokens: TokenService, bob: User) -> Caller:
    return caller_for(client, tokens, bob)
