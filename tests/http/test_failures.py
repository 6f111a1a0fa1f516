"""Storage down gives 503 with Retry-After; a bug gives a generic 500 whose log has the request id, not the data."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.testclient import TestClient

from adapters_http import RETRY_AFTER_SECONDS, bearer_token_resolver, create_app
from memorybank import bootstrap
from memorybank_core import (
    InMemoryStore,
    ListPosition,
    Memory,
    MemoryBank,
    MemoryChange,
    Principal,
    Quota,
    UnavailableError,
)
from tests.conftest import User

SECRET_TEXT = "my-bank-pin-is-4321"


class BrokenStore(InMemoryStore):
    """A store whose every call fails with `error`."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        raise self.error

    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        raise self.error

    def list(
        self, *, user_id: str, limit: int, after: ListPosition | None, include_retired: bool = False
    ) -> Sequence[Memory]:
        raise self.error

    def revise(self, *, user_id: str, change: MemoryChange, quota: Quota | None = None) -> bool:
        raise self.error

    def revisions(self, *, user_id: str, memory_id: str, limit: int, before: int | None) -> Sequence[Memory]:
        raise self.error

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        raise self.error


def _client_over(store: InMemoryStore, alice: User) -> tuple[TestClient, dict[str, str]]:
    services = bootstrap.build(store=store).services
    tokens = services.tokens
    secret = tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    app = create_app(services.bank, bearer_token_resolver(tokens))
    return TestClient(app, raise_server_exceptions=False), {"Authorization": f"Bearer {secret}"}


def _call_every_route(client: TestClient, headers: dict[str, str]) -> list[tuple[str, int, object, str | None]]:
    responses = [
        client.post("/v1/memory", json={"content": SECRET_TEXT}, headers=headers),
        client.get("/v1/memory/search", params={"q": SECRET_TEXT}, headers=headers),
        client.get("/v1/memory", headers=headers),
        client.delete("/v1/memory/mem_01h455vb4pex5vsknk084sn02q", headers=headers),
    ]
    return [(r.request.method, r.status_code, r.json(), r.headers.get("Retry-After")) for r in responses]


def test_storage_unavailable_is_a_503_with_retry_after_on_every_route(alice: User) -> None:
    client, headers = _client_over(BrokenStore(UnavailableError("connection refused")), alice)

    answers = _call_every_route(client, headers)

    expected_body = {"error": "unavailable", "message": "The memory bank is temporarily unavailable; retry shortly."}
    assert answers == [(m, 503, expected_body, str(RETRY_AFTER_SECONDS)) for m in ("POST", "GET", "GET", "DELETE")]


def test_a_resolver_whose_store_is_down_gives_503_not_401(bank: MemoryBank) -> None:
    async def sessions_down(_request: Request) -> Principal | None:
        raise UnavailableError("session store down")

    with TestClient(create_app(bank, sessions_down)) as client:
        response = client.get("/v1/memory")

    assert response.status_code == 503
    assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)


def test_an_unexpected_error_is_a_generic_500_logged_with_its_request_id_and_without_data(
    alice: User, caplog: pytest.LogCaptureFixture
) -> None:
    client, headers = _client_over(BrokenStore(RuntimeError(f"driver said: {SECRET_TEXT}")), alice)

    with caplog.at_level(logging.INFO):
        answers = _call_every_route(client, headers)
        response = client.get("/v1/memory", headers=headers)

    generic = {
        "error": "internal_error",
        "message": "Something went wrong on our side; the request id is in X-Request-Id.",
    }
    assert [a[1:3] for a in answers] == [(500, generic)] * 4
    request_id = response.headers["X-Request-Id"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(request_id in r.getMessage() and "RuntimeError" in r.getMessage() for r in errors)
    server_log = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("memorybank"))
    assert "Traceback" not in response.text
    assert SECRET_TEXT not in server_log
    assert SECRET_TEXT not in response.text


def test_an_error_outside_the_memory_routes_is_a_generic_json_500(bank: MemoryBank, alice: User) -> None:
    async def buggy_resolver(_request: Request) -> Principal | None:
        return alice

    app = create_app(bank, buggy_resolver)

    async def crash(_request: Request) -> Response:
        raise RuntimeError(SECRET_TEXT)

    app.add_route("/crash", crash)
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/crash")

    assert response.status_code == 500
    assert response.json()["error"] == "internal_error"
    assert len(response.headers["X-Request-Id"]) == 32
