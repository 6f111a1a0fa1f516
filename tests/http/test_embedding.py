"""A den-api-style host: its own app, its own session-cookie auth and its own SQLAlchemy engine,
with the memory routes mounted inside. This is what docs/embedding.md shows."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import sqlalchemy as sa
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from adapters_http import IN_PROCESS_PRINCIPAL_KEY, build_openapi, memory_routes
from adapters_http.panel import PANEL_HEADER, panel_calls_only, panel_routes
from adapters_mysql import SqliteOwnerScopedSearch, SqlStorage
from memorybank_core import READ_SCOPE, WRITE_SCOPE, MemoryBank, Principal
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_search import OwnerIndexer

# --- the host's own world: its tables, its users, its sessions -------------------------------------------

host_metadata = sa.MetaData()
host_sessions = sa.Table(
    "host_session",
    host_metadata,
    sa.Column("token", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(64), nullable=False),
    sa.Column("active_org_id", sa.String(64), nullable=False),
)


@attrs.frozen
class HostMember:
    """The host's own user object; it satisfies memorybank's Principal protocol as it is."""

    user_id: str
    organization_id: str
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})


def build_host(engine: sa.Engine) -> Starlette:
    """The host app: /login issues a session cookie; the memory bank lives under /api."""
    # The owner-scoped engine of the engine's dialect comes with the storage: the host never names it.
    storage = SqlStorage(engine=engine, indexer=OwnerIndexer(), display_url="host database")
    assert isinstance(storage.search_engine.inner, SqliteOwnerScopedSearch)
    storage.initialize()  # a MySQL host runs storage.migrate() from its deploy step instead
    bank = MemoryBank(store=storage.store, search_engine=storage.search_engine)

    def find_session(token: str) -> HostMember | None:
        with engine.connect() as connection:
            row = connection.execute(sa.select(host_sessions).where(host_sessions.c.token == token)).first()
        return None if row is None else HostMember(user_id=row.user_id, organization_id=row.active_org_id)

    async def session_principal(request: Request) -> Principal | None:
        token = request.cookies.get("host_session")
        return None if token is None else await run_in_threadpool(find_session, token)

    # A cookie is sent by the browser whoever wrote the page: only the panel's same-origin calls may use it.
    cookie_principal = panel_calls_only(session_principal)

    async def login(request: Request) -> Response:
        user_id = request.query_params["user"]
        token = secrets.token_hex(16)
        with engine.begin() as connection:
            connection.execute(
                host_sessions.insert().values(token=token, user_id=user_id, active_org_id=new_id(ORGANIZATION_PREFIX))
            )
        response = JSONResponse({"ok": True})
        response.set_cookie("host_session", token, httponly=True)
        return response

    async def host_home(_request: Request) -> Response:
        return JSONResponse({"host": "den-api"})

    document = build_openapi(title="den-api memory", server_url="/api")

    async def openapi(_request: Request) -> Response:
        return JSONResponse(document)

    return Starlette(
        routes=[
            Route("/", host_home),
            Route("/login", login, methods=["POST"]),
            Route("/api/openapi.json", openapi),
            Mount("/api", routes=memory_routes(bank, cookie_principal)),
            # The management panel, behind the host's own sign-in: the page at /memory/, calling /api.
            Mount("/memory", routes=panel_routes(api_base="/api", sign_in_url="/login")),
        ]
    )


# --- the tests -------------------------------------------------------------------------------------------


@pytest.fixture
def host_engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'host.sqlite3'}")
    host_metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def host(host_engine: sa.Engine) -> Starlette:
    return build_host(host_engine)


#: What the panel's script sends with every call (a browser adds the Origin itself).
PANEL_CALL = {PANEL_HEADER: "1", "Origin": "http://testserver"}


def _logged_in(app: Starlette, user_id: str) -> TestClient:
    client = TestClient(app, headers=PANEL_CALL)
    assert client.post("/login", params={"user": user_id}).status_code == 200
    return client


def test_a_host_serves_the_memory_routes_under_its_own_session_auth_and_engine(
    host: Starlette, host_engine: sa.Engine
) -> None:
    alice = _logged_in(host, new_id(USER_PREFIX))
    bob = _logged_in(host, new_id(USER_PREFIX))

    saved = alice.post("/api/v1/memory", json={"content": "The host keeps its own users"})
    memory_id = saved.json()["memory"]["id"]

    assert saved.status_code == 201
    assert [r["id"] for r in alice.get("/api/v1/memory/search", params={"q": "host users"}).json()["results"]] == [
        memory_id
    ]
    assert bob.get("/api/v1/memory").json() == {"memories": [], "next_cursor": None}
    assert bob.delete(f"/api/v1/memory/{memory_id}").status_code == 404
    assert alice.delete(f"/api/v1/memory/{memory_id}").status_code == 204
    # The host's tables and memorybank's share the host's one database.
    assert {"host_session", "memory", "memory_context", "api_token"} <= set(sa.inspect(host_engine).get_table_names())


def test_without_the_hosts_session_the_memory_routes_answer_401(host: Starlette) -> None:
    anonymous = TestClient(host)
    forged = TestClient(host, cookies={"host_session": "not-a-session"})

    assert anonymous.get("/api/v1/memory").status_code == 401
    assert forged.post("/api/v1/memory", json={"content": "x"}).status_code == 401
    assert anonymous.get("/").json() == {"host": "den-api"}


def test_the_hosts_openapi_document_keeps_the_reference_names_under_its_prefix(host: Starlette) -> None:
    document = TestClient(host).get("/api/openapi.json").json()

    assert document["servers"] == [{"url": "/api"}]
    assert sorted(op["operationId"] for methods in document["paths"].values() for op in methods.values()) == [
        "deleteMemoryById",
        "getMemory",
        "getMemoryByMemoryIdRevisions",
        "getMemoryExport",
        "getMemorySearch",
        "getMemoryUsage",
        "patchMemoryById",
        "postMemory",
        "postMemoryDeleteAll",
    ]


def test_an_in_process_caller_in_the_host_passes_its_principal_in_the_scope(host: Starlette) -> None:
    member = HostMember(user_id=new_id(USER_PREFIX), organization_id=new_id(ORGANIZATION_PREFIX))

    async def as_member(scope: Scope, receive: Receive, send: Send) -> None:
        scope[IN_PROCESS_PRINCIPAL_KEY] = member
        await host(scope, receive, send)

    with TestClient(as_member) as in_process:
        assert in_process.post("/api/v1/memory", json={"content": "via the MCP rail"}).status_code == 201
        assert len(in_process.get("/api/v1/memory").json()["memories"]) == 1


def test_the_host_serves_the_panel_under_its_own_sign_in_calling_its_own_api_mount(host: Starlette) -> None:
    alice = _logged_in(host, new_id(USER_PREFIX))
    memory_id = alice.post("/api/v1/memory", json={"content": "seen in the host's panel"}).json()["memory"]["id"]

    page = alice.get("/memory/")
    script = alice.get("/memory/panel/assets/app.js")

    assert page.status_code == 200
    assert '<meta name="memorybank-api" content="/api">' in page.text
    assert '<meta name="memorybank-sign-in" content="host">' in page.text
    assert '<meta name="memorybank-sign-in-url" content="/login">' in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert alice.get("/memory/panel/session").status_code == 404  # no standalone sign-in: the host signs in
    assert [m["id"] for m in alice.get("/api/v1/memory").json()["memories"]] == [memory_id]


def test_the_hosts_session_cookie_alone_or_from_another_origin_opens_nothing(host: Starlette) -> None:
    alice = _logged_in(host, new_id(USER_PREFIX))
    memory_id = alice.post("/api/v1/memory", json={"content": "not for forms"}).json()["memory"]["id"]

    bare = alice.delete(f"/api/v1/memory/{memory_id}", headers={PANEL_HEADER: "", "Origin": ""})
    foreign = alice.delete(f"/api/v1/memory/{memory_id}", headers={"Origin": "http://evil.example"})

    assert bare.status_code == 401
    assert foreign.status_code == 401
    assert [m["id"] for m in alice.get("/api/v1/memory").json()["memories"]] == [memory_id]
