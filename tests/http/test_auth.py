"""Who may call: bearer tokens, scopes, revocation and the in-process principal."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from adapters_http import (
    IN_PROCESS_PRINCIPAL_KEY,
    MEMORY_ROUTES,
    BlockingResolver,
    bearer_secret,
    build_openapi,
    create_app,
)
from adapters_http.panel import panel_calls_only
from memorybank_core import READ_SCOPE, WRITE_SCOPE, MemoryBank, Principal, TokenService
from tests.conftest import User
from tests.http.conftest import TWO_AUTHORIZATION_HEADERS_ANSWER, Caller, caller_for

ROUTES: dict[str, Callable[[TestClient, dict[str, str]], httpx2.Response]] = {
    "postMemory": lambda c, h: c.post("/v1/memory", json={"content": "x"}, headers=h),
    "getMemorySearch": lambda c, h: c.get("/v1/memory/search", params={"q": "x"}, headers=h),
    "getMemory": lambda c, h: c.get("/v1/memory", headers=h),
    "deleteMemoryById": lambda c, h: c.delete("/v1/memory/mem_01h455vb4pex5vsknk084sn02q", headers=h),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Bearer    ",
        "bearer mbk_unknown",
        "Bearer mbk_" + "A" * 43,
        "Basic dXNlcjpwYXNz",
        "Bearer mbk_a mbk_b",
        "Token mbk_x",
    ],
)
def test_a_request_without_a_valid_token_gets_401_with_a_bearer_challenge(
    client: TestClient, route: str, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}

    response = ROUTES[route](client, headers)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json() == {"error": "unauthorized", "message": "A valid bearer token is required."}


def test_a_revoked_token_fails_on_the_very_next_request(as_alice: Caller, tokens: TokenService) -> None:
    assert as_alice.list().status_code == 200

    tokens.revoke(as_alice.secret)

    assert as_alice.list().status_code == 401
    assert as_alice.save().status_code == 401


@pytest.mark.parametrize("route", ["postMemory", "deleteMemoryById"])
def test_a_read_only_token_cannot_write(client: TestClient, tokens: TokenService, alice: User, route: str) -> None:
    reader = caller_for(client, tokens, alice, scopes=frozenset({READ_SCOPE}))

    response = ROUTES[route](client, reader.headers)

    assert response.status_code == 403
    assert response.json() == {
        "error": "insufficient_scope",
        "message": "The token lacks the scope mcp:write, which this operation requires.",
        "required_scope": "mcp:write",
    }
    assert response.headers["WWW-Authenticate"] == 'Bearer error="insufficient_scope", scope="mcp:write"'


@pytest.mark.parametrize("route", ["getMemorySearch", "getMemory"])
def test_a_write_only_token_cannot_read(client: TestClient, tokens: TokenService, alice: User, route: str) -> None:
    writer = caller_for(client, tokens, alice, scopes=frozenset({WRITE_SCOPE}))

    response = ROUTES[route](client, writer.headers)

    assert response.status_code == 403
    assert response.json()["required_scope"] == "mcp:read"


def test_a_read_only_token_saves_nothing(client: TestClient, tokens: TokenService, alice: User) -> None:
    reader = caller_for(client, tokens, alice, scopes=frozenset({READ_SCOPE}))
    owner = caller_for(client, tokens, alice)

    reader.save("should not be stored")

    assert owner.list().json()["memories"] == []


def test_openapi_json_needs_no_token(client: TestClient) -> None:
    response = client.get("/openapi.json")

    assert response.status_code == 200
    assert response.json()["openapi"] == "3.1.0"


def test_an_in_process_principal_in_the_scope_is_used_without_the_resolver(bank: MemoryBank, alice: User) -> None:
    consulted: list[Request] = []

    async def refuse_everyone(request: Request) -> Principal | None:
        consulted.append(request)
        return None

    app = create_app(bank, refuse_everyone)

    async def as_alice_in_process(scope: Scope, receive: Receive, send: Send) -> None:
        # What the MCP facade does: call the app in-process with an already authenticated principal.
        scope[IN_PROCESS_PRINCIPAL_KEY] = alice
        await app(scope, receive, send)

    with TestClient(as_alice_in_process) as in_process:
        saved = in_process.post("/v1/memory", json={"content": "saved in-process"})
        listed = in_process.get("/v1/memory")
    with TestClient(app) as external:
        refused = external.get("/v1/memory")

    assert saved.status_code == 201
    assert [m["content"] for m in listed.json()["memories"]] == ["saved in-process"]
    assert refused.status_code == 401
    assert len(consulted) == 1


def test_the_in_process_principal_is_still_subject_to_the_cores_scope_rules(bank: MemoryBank) -> None:
    reader = User(scopes=frozenset({READ_SCOPE}))
    app = create_app(bank, _nobody)

    async def as_reader(scope: Scope, receive: Receive, send: Send) -> None:
        scope[IN_PROCESS_PRINCIPAL_KEY] = reader
        await app(scope, receive, send)

    with TestClient(as_reader) as in_process:
        response = in_process.post("/v1/memory", json={"content": "x"})

    assert response.status_code == 403


async def _nobody(_request: Request) -> Principal | None:
    return None


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER   abc  ", "abc"),
        ("Bearer", None),
        ("Bearer a b", None),
        ("Basic abc", None),
        ("abc", None),
    ],
)
def test_bearer_secret_reads_only_a_single_bearer_token(app: Starlette, header: str, expected: str | None) -> None:
    scope = {"type": "http", "headers": [(b"authorization", header.encode())]}

    assert bearer_secret(Request(scope)) == expected


@pytest.mark.parametrize("route", ROUTES)
def test_the_documented_scope_of_each_route_is_the_one_the_core_enforces(
    client: TestClient, tokens: TokenService, alice: User, route: str
) -> None:
    # The OpenAPI security requirement (which the MCP catalog reads) must name the scope the core checks.
    (spec,) = [spec for spec in MEMORY_ROUTES if spec.operation_id == route]
    other = READ_SCOPE if spec.required_scope == WRITE_SCOPE else WRITE_SCOPE
    without = caller_for(client, tokens, alice, scopes=frozenset({other}))

    response = ROUTES[route](client, without.headers)

    assert response.status_code == 403
    assert response.json()["required_scope"] == spec.required_scope
    documented = build_openapi()["paths"][spec.path][spec.method.lower()]["security"]
    assert documented == [{"bearerAuth": [spec.required_scope]}]


@pytest.mark.parametrize(
    "second", ["Bearer mbk_not-a-real-token", "Basic dXNlcjpwdw==", "same"], ids=["other", "basic", "same"]
)
@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/memory"), ("POST", "/v1/memory"), ("GET", "/v1/memory/search?q=x")]
)
def test_two_authorization_headers_are_400_and_change_nothing(
    client: TestClient, as_alice: Caller, second: str, method: str, path: str
) -> None:
    first = f"Bearer {as_alice.secret}"
    response = client.request(
        method,
        path,
        content=b'{"content": "should not be saved"}' if method == "POST" else None,
        headers=[
            ("Authorization", first),
            ("Authorization", first if second == "same" else second),
            ("Content-Type", "application/json"),
        ],
    )

    assert response.status_code == 400
    assert response.json() == TWO_AUTHORIZATION_HEADERS_ANSWER
    assert as_alice.list().json()["memories"] == []


def test_two_authorization_headers_are_400_under_a_hosts_own_resolver_too(bank: MemoryBank, alice: User) -> None:
    async def cookie_session(_request: Request) -> Principal | None:
        return alice

    with TestClient(create_app(bank, cookie_session)) as client:
        response = client.get("/v1/memory", headers=[("Authorization", "a"), ("Authorization", "b")])

    assert response.status_code == 400
    assert response.json()["details"] == [{"path": "authorization", "message": "must be sent once, not 2 times"}]


def test_a_synchronous_resolver_is_refused_when_the_routes_are_built_naming_the_wrapper(bank: MemoryBank) -> None:
    def session_principal(_request: Request) -> Principal | None:
        return None

    with pytest.raises(TypeError, match=r"BlockingResolver\(session_principal\)"):
        create_app(bank, session_principal)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"panel_calls_only\(BlockingResolver\(session_principal\)\)"):
        panel_calls_only(session_principal)  # type: ignore[arg-type]


def test_a_wrapped_synchronous_resolver_and_an_async_callable_object_serve_requests(bank: MemoryBank) -> None:
    member = User(scopes=frozenset({READ_SCOPE}))

    class AsyncSessions:
        async def __call__(self, _request: Request) -> Principal | None:
            return member

    for resolver in (BlockingResolver(lambda _request: member), AsyncSessions(), partial(AsyncSessions().__call__)):
        with TestClient(create_app(bank, resolver)) as client:
            assert client.get("/v1/memory").json() == {"memories": [], "next_cursor": None}
