"""Merge gate (seed §8): no route, through any door, ever reveals or touches another user's memory.

One gate on `memorybank serve`'s whole app (composition.build_app), parametrized over its three
doors: bearer tokens on the REST routes, the management panel's session cookie on the same
routes, and the MCP rail, which runs those routes in-process. Each check is written once.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, Protocol

import anyio
import attrs
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from starlette.types import Message, Scope

from adapters_http import bearer_token_resolver, create_app
from memorybank import bootstrap
from memorybank.settings import HttpSettings, Settings
from memorybank_core import MemoryBank, PanelSessions, TokenService
from memorybank_core.ids import MEMORY_PREFIX, new_id
from tests.conftest import User
from tests.http.conftest import Caller, caller_for, panel_caller_for
from tests.mcp.conftest import RpcCaller, rpc_caller


class Door(Protocol):
    """One user's way in (REST or the rail), reduced to what the gate checks."""

    @abstractmethod
    def save(self, content: str, **body: Any) -> str:
        """Save; the new memory's id."""

    @abstractmethod
    def listed(self, **query: Any) -> dict[str, Any]:
        """The list route's body."""

    @abstractmethod
    def found(self, q: str) -> set[str]:
        """The ids a search returns."""

    @abstractmethod
    def delete(self, raw_id: str) -> tuple[int, Any]:
        """Delete by a raw id: the status and the whole answer (for byte-identical comparisons)."""


@attrs.frozen
class RestDoor(Door):
    caller: Caller

    def save(self, content: str, **body: Any) -> str:
        return self.caller.saved_id(content, **body)

    def listed(self, **query: Any) -> dict[str, Any]:
        body: dict[str, Any] = self.caller.list(**query).json()
        return body

    def found(self, q: str) -> set[str]:
        return {r["id"] for r in self.caller.search(q, limit=50).json()["results"]}

    def delete(self, raw_id: str) -> tuple[int, Any]:
        response = self.caller.delete(raw_id)
        return response.status_code, (response.content, response.headers.get("content-type"))


@attrs.frozen
class RailDoor(Door):
    caller: RpcCaller

    def save(self, content: str, **body: Any) -> str:
        result = self.caller.execute("postMemory", body={"content": content, **body})
        assert result["isError"] is False, result
        memory_id: str = result["structuredContent"]["body"]["memory"]["id"]
        return memory_id

    def listed(self, **query: Any) -> dict[str, Any]:
        body: dict[str, Any] = self.caller.execute("getMemory", query=query)["structuredContent"]["body"]
        return body

    def found(self, q: str) -> set[str]:
        result = self.caller.execute("getMemorySearch", query={"q": q, "limit": 50})
        return {r["id"] for r in result["structuredContent"]["body"]["results"]}

    def delete(self, raw_id: str) -> tuple[int, Any]:
        result = self.caller.execute("deleteMemoryById", path={"id": raw_id})
        return result["structuredContent"]["status"], result


@pytest.fixture
def clock() -> None:
    """The system clock: the panel's cookie ages by the real time (adapters_http.panel.session_cookie)."""


@pytest.fixture
def panel_sessions(runtime: bootstrap.Runtime) -> PanelSessions:
    return runtime.services.panel_sessions


@pytest.fixture
def serve_client(runtime: bootstrap.Runtime) -> Iterator[TestClient]:
    """`memorybank serve`'s app: REST, the panel and the rail, over the test's ports."""
    settings = Settings.for_database("sqlite://", http=HttpSettings(allowed_hosts=("testserver",)))
    with (
        bootstrap.build(settings, ports=runtime.ports) as served,
        TestClient(served.web_app(), raise_server_exceptions=False) as client,
    ):
        yield client


@pytest.fixture(params=["bearer", "panel", "rail"])
def way(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def _door(way: str, client: TestClient, tokens: TokenService, sessions: PanelSessions, user: User) -> Door:
    if way == "rail":
        return RailDoor(rpc_caller(client, tokens, user))
    return RestDoor(panel_caller_for(client, sessions, user) if way == "panel" else caller_for(client, tokens, user))


@pytest.fixture
def alice_door(
    way: str, serve_client: TestClient, tokens: TokenService, panel_sessions: PanelSessions, alice: User
) -> Door:
    return _door(way, serve_client, tokens, panel_sessions, alice)


@pytest.fixture
def bob_door(
    way: str, serve_client: TestClient, tokens: TokenService, panel_sessions: PanelSessions, bob: User
) -> Door:
    return _door(way, serve_client, tokens, panel_sessions, bob)


def _ids(page: dict[str, Any]) -> set[str]:
    return {m["id"] for m in page["memories"]}


def test_no_route_reveals_or_touches_another_users_memory(alice_door: Door, bob_door: Door) -> None:
    alice_ids = {
        alice_door.save("Alice banks with Zephyrbank", tags=["finance"], contexts=[{"snippet": "zephyr memo"}]),
        alice_door.save("Alice shared deploy notes"),
    }
    bob_ids = {bob_door.save("Bob shared deploy notes")}

    # list: each sees exactly their own
    assert _ids(bob_door.listed(limit=100)) == bob_ids
    assert _ids(alice_door.listed(limit=100)) == alice_ids
    # search: words only Alice used (stems too: "note" would find Bob's "notes") find nothing for Bob;
    # a shared word finds only one's own
    assert bob_door.found("zephyrbank") == set()
    assert bob_door.found("zephyr memo finance") == set()
    assert bob_door.found("shared deploy notes") == bob_ids
    assert alice_door.found("shared deploy notes") <= alice_ids
    # delete: Bob cannot delete Alice's memories, and they survive his attempts
    for memory_id in alice_ids:
        assert bob_door.delete(memory_id)[0] == 404
    assert _ids(alice_door.listed(limit=100)) == alice_ids
    assert alice_door.found("zephyrbank") & alice_ids
    # and the other way round
    for memory_id in bob_ids:
        assert alice_door.delete(memory_id)[0] == 404
    assert _ids(bob_door.listed(limit=100)) == bob_ids


def test_a_list_cursor_from_one_user_never_reveals_the_other_users_memories(alice_door: Door, bob_door: Door) -> None:
    for i in range(3):
        alice_door.save(f"alice memory {i}")
        bob_door.save(f"bob memory {i}")
    alice_cursor = alice_door.listed(limit=1)["next_cursor"]

    page = bob_door.listed(limit=100, cursor=alice_cursor)

    assert all(m["content"].startswith("bob") for m in page["memories"])


def test_someone_elses_id_gets_an_answer_identical_to_a_missing_or_malformed_id(
    alice_door: Door, bob_door: Door
) -> None:
    alices = alice_door.save("Alice's secret plan")
    deleted = bob_door.save("deleted one")
    bob_door.delete(deleted)
    probes = {
        "someone else's": alices,
        "never existed": new_id(MEMORY_PREFIX),
        "already deleted": deleted,
        "malformed": "not-an-id",
        "wrong prefix": new_id("usr"),
        "traversal": "..%2F..%2Fetc%2Fpasswd",
        "encoded traversal with id": f"{alices}%2F..%2F{alices}",
        "very long": "mem_" + "a" * 5000,
        "unicode": "m%C3%A9m_%F0%9F%9A%80",
    }

    answers = {name: bob_door.delete(raw) for name, raw in probes.items()}

    reference = answers["never existed"]
    assert reference[0] == 404
    for name, answer in answers.items():
        assert (name, answer) == (name, reference)
    assert _ids(alice_door.listed()) == {alices}


def _raw_delete(app: Starlette, path: str, secret: str) -> int:
    """DELETE `path` exactly as written: no client in between to normalize `..`, `.` or `//`."""
    statuses: list[int] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "DELETE",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {secret}".encode())],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    anyio.run(app, scope, receive, send)
    return statuses[0]


@pytest.mark.parametrize(
    "template",
    [
        "/v1/memory/../memory/{id}",
        "/v1/memory/./{id}",
        "/v1/memory//{id}",
        "/v1/memory/x/../{id}",
        "/v1/memory/%2e%2e/memory/{id}",
        "/v1/./memory/{id}",
        "//v1/memory/{id}",
    ],
)
def test_unnormalized_paths_never_reach_another_users_memory(
    bank: MemoryBank, tokens: TokenService, alice: User, bob: User, template: str
) -> None:
    app = create_app(bank, bearer_token_resolver(tokens))
    with TestClient(app) as client:
        alices = caller_for(client, tokens, alice).saved_id("Alice's plan, which Bob must not delete")
        bob_secret = caller_for(client, tokens, bob).secret

        status = _raw_delete(app, template.format(id=alices), bob_secret)

        assert status in {404, 405}
        assert [m["id"] for m in caller_for(client, tokens, alice).list().json()["memories"]] == [alices]
