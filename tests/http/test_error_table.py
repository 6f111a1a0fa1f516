"""One error table answers for every facade: the REST routes, the MCP rail's gate and the panel's sign-in."""

from __future__ import annotations

from starlette.requests import Request
from starlette.testclient import TestClient

from adapters_http import ERROR_TABLE, create_app
from adapters_http.errors import spec_for
from adapters_http.refusals import HttpFacadeError
from adapters_mcp import create_host_app, create_mcp_mount, default_catalog
from memorybank_core import CredentialsRefusedError, MemoryBank, Principal, SignInDeclinedError, UnavailableError
from memorybank_core.errors import MemoryBankError
from memorybank_core.rate_limits import RateLimitedError


def _subclasses(root: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for sub in root.__subclasses__():
        found |= {sub, *_subclasses(sub)}
    return found


def test_every_error_a_facade_raises_has_a_row() -> None:
    rows = {error_class for error_class, _ in ERROR_TABLE}
    unanswered = [
        cls.__name__
        for cls in _subclasses(HttpFacadeError)
        if cls.__module__.startswith("adapters_http") and not any(issubclass(cls, row) for row in rows)
    ]
    # Their bases (HttpFacadeError, RailRefusedError, PanelSignInError) are never raised themselves.
    assert sorted(unanswered) == ["PanelSignInError", "RailRefusedError"]


def test_every_core_error_a_request_can_meet_has_a_row() -> None:
    request_errors = {cls for cls in _subclasses(MemoryBankError) if cls.__module__.startswith("memorybank_core")}
    assert RateLimitedError in request_errors
    assert [cls.__name__ for cls in request_errors if spec_for(_bare(cls)) is None] == []


def _bare(cls: type[BaseException]) -> BaseException:
    return cls.__new__(cls)


def test_an_error_takes_the_row_of_its_nearest_class() -> None:
    declined = SignInDeclinedError("access_denied")
    assert spec_for(declined) is spec_for(CredentialsRefusedError("expired"))
    assert spec_for(ValueError("not ours")) is None


def test_the_rail_and_the_rest_routes_answer_an_outage_with_the_same_bytes(bank: MemoryBank) -> None:
    async def sessions_down(_request: Request) -> Principal | None:
        raise UnavailableError("session store down")

    def tokens_down(_secret: str) -> Principal | None:
        raise UnavailableError("token store down")

    rest = create_app(bank, sessions_down)
    app = create_host_app(
        rest, create_mcp_mount(rest, tokens_down, allowed_hosts=["testserver"], catalog=default_catalog())
    )
    with TestClient(app) as client:
        by_rest = client.get("/v1/memory")
        by_rail = client.post(
            "/mcp/agent",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": "Bearer x", "Accept": "application/json, text/event-stream"},
        )

    assert (by_rail.status_code, by_rail.content) == (by_rest.status_code, by_rest.content) == (503, by_rest.content)
    assert by_rail.headers["retry-after"] == by_rest.headers["retry-after"] == "1"
