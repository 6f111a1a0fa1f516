"""The panel's origin is the server's public URL's, whatever `Host` a request names (issue 27, finding 5).

A host name an attacker rebinds to the server (`Host: evil.example`) made its own page look same-origin to the
panel's check, which compared `Origin` with the request's own `Host`. With `--public-url` only that URL's origin
counts; without it, only the host names the server serves (loopback names and `--allowed-host` on a loopback
bind, as the MCP rail).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from adapters_http.panel import PANEL_HEADER, SESSION_COOKIE
from memorybank.composition import Services, Web, build_app
from memorybank.settings import HttpSettings
from memorybank_core import MemoryBank, PanelSessions, TokenService
from tests.conftest import User

PUBLIC = "https://bank.example.com"


@pytest.fixture
def services(bank: MemoryBank, tokens: TokenService, panel_sessions: PanelSessions) -> Services:
    return Services(bank=bank, tokens=tokens, panel_sessions=panel_sessions)


def _client(services: Services, web: Web) -> Iterator[TestClient]:
    with TestClient(build_app(services, web), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def public(services: Services) -> Iterator[TestClient]:
    yield from _client(services, Web(public_url=PUBLIC))


@pytest.fixture
def loopback(services: Services) -> Iterator[TestClient]:
    yield from _client(services, Web(http=HttpSettings(host="127.0.0.1")))


def _panel_call(client: TestClient, session: str, *, host: str, origin: str) -> int:
    headers = {"Cookie": f"{SESSION_COOKIE}={session}", PANEL_HEADER: "1", "Origin": origin, "Host": host}
    return client.post("/v1/memory", json={"content": "from the panel"}, headers=headers).status_code


def test_with_a_public_url_a_rebound_host_and_its_own_origin_are_refused(
    public: TestClient, panel_sessions: PanelSessions, alice: User
) -> None:
    session = panel_sessions.start(alice).secret

    assert _panel_call(public, session, host="evil.example:18101", origin="http://evil.example:18101") == 401
    assert _panel_call(public, session, host="bank.example.com", origin="http://bank.example.com") == 401
    assert _panel_call(public, session, host="evil.example", origin=PUBLIC) == 201  # the public page, via any Host


def test_without_a_public_url_a_loopback_server_answers_loopback_pages_only(
    loopback: TestClient, panel_sessions: PanelSessions, alice: User
) -> None:
    session = panel_sessions.start(alice).secret

    assert _panel_call(loopback, session, host="evil.example:8080", origin="http://evil.example:8080") == 401
    assert _panel_call(loopback, session, host="localhost:8080", origin="http://localhost:8080") == 201
    assert _panel_call(loopback, session, host="127.0.0.1:8080", origin="http://127.0.0.1:8080") == 201
    assert _panel_call(loopback, session, host="127.0.0.1:8080", origin="http://localhost:8080") == 401


def test_an_allowed_host_is_served_as_the_rail_serves_it(
    services: Services, panel_sessions: PanelSessions, alice: User
) -> None:
    session = panel_sessions.start(alice).secret
    for client in _client(services, Web(http=HttpSettings(host="127.0.0.1", allowed_hosts=("bank.internal:*",)))):
        assert _panel_call(client, session, host="bank.internal:8080", origin="http://bank.internal:8080") == 201
        assert _panel_call(client, session, host="evil.example", origin="http://evil.example") == 401
