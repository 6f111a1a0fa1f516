"""Rate limits on `memorybank serve`'s app: one check for REST, the panel and the MCP rail, with its headers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from starlette.testclient import TestClient

from adapters_http.openapi import build_openapi
from adapters_ratelimit import LimitsRateLimiter
from harness.served import free_port
from memorybank import bootstrap
from memorybank.settings import HttpSettings, Settings
from memorybank_core import PanelSessions, RateLimitPolicy, RateLimits, TokenService
from tests.conftest import User
from tests.http.conftest import Caller, caller_for, panel_caller_for
from tests.mcp.conftest import rpc_caller

LIMIT = 3
RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy")


#: The served app's settings here: the test client's host name is one a proxy would forward.
SETTINGS = Settings.for_database("sqlite://", http=HttpSettings(allowed_hosts=("testserver",)))


def _client(runtime: bootstrap.Runtime, limits: RateLimits) -> Iterator[TestClient]:
    """`memorybank serve`'s app (REST, panel, rail) over the test's ports, with `limits`."""
    with (
        bootstrap.build(SETTINGS, ports=runtime.ports, rate_limits=limits) as limited,
        TestClient(limited.web_app(), raise_server_exceptions=False) as client,
    ):
        yield client


@pytest.fixture
def rules() -> list[str]:
    return [f"*={LIMIT}/minute"]


@pytest.fixture
def serve_client(runtime: bootstrap.Runtime, rules: list[str]) -> Iterator[TestClient]:
    """`memorybank serve`'s app (REST, panel, rail) with small limits counted in memory."""
    limits = RateLimits(limiter=LimitsRateLimiter(), policy=RateLimitPolicy.from_rules(rules))
    yield from _client(runtime, limits)


def _error_schema() -> dict[str, Any]:
    schema: dict[str, Any] = build_openapi()["components"]["schemas"]["Error"]
    return schema


def test_every_answer_of_a_limited_route_carries_the_ratelimit_headers(
    serve_client: TestClient, tokens: TokenService, alice: User
) -> None:
    alice_calls = caller_for(serve_client, tokens, alice)

    answers = [alice_calls.search("deploy") for _ in range(LIMIT)]

    assert [a.status_code for a in answers] == [200] * LIMIT
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["2", "1", "0"]
    for answer in answers:
        assert answer.headers["RateLimit-Limit"] == str(LIMIT)
        assert answer.headers["RateLimit-Policy"] == f"{LIMIT};w=60"
        assert 0 < int(answer.headers["RateLimit-Reset"]) <= 60


def test_over_the_limit_is_a_429_rate_limited_with_retry_after_in_the_error_shape(
    serve_client: TestClient, tokens: TokenService, alice: User
) -> None:
    alice_calls = caller_for(serve_client, tokens, alice)
    for _ in range(LIMIT):
        alice_calls.save("Within the limit")

    refused = alice_calls.save("Over the limit")

    assert refused.status_code == 429
    body = refused.json()
    jsonschema.validate(body, _error_schema())
    assert body["error"] == "rate_limited"
    assert "save" in body["message"]
    assert f"{LIMIT} per 60 seconds" in body["message"]
    assert body["retry_after"] == int(refused.headers["Retry-After"])
    assert 1 <= body["retry_after"] <= 60
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert refused.headers["RateLimit-Limit"] == str(LIMIT)
    assert refused.headers["X-Request-Id"]
    # Nothing was written by the refused save.
    listed = alice_calls.list(limit=100).json()["memories"]
    assert [m["content"] for m in listed].count("Over the limit") == 0


def test_a_flooding_user_does_not_touch_another_users_budget(
    serve_client: TestClient, tokens: TokenService, alice: User, bob: User
) -> None:
    alice_calls, bob_calls = caller_for(serve_client, tokens, alice), caller_for(serve_client, tokens, bob)
    for _ in range(LIMIT + 5):
        alice_calls.search("flood")

    answer = bob_calls.search("quiet")

    assert answer.status_code == 200
    assert answer.headers["RateLimit-Remaining"] == str(LIMIT - 1)


def test_requests_without_valid_credentials_never_spend_a_users_budget(
    serve_client: TestClient, tokens: TokenService, alice: User
) -> None:
    alice_calls = caller_for(serve_client, tokens, alice)
    bad = Caller(client=serve_client, user=alice, secret="mbk_not-a-real-token")
    revoked = caller_for(serve_client, tokens, alice)
    tokens.revoke(revoked.secret)

    refused = [bad.search("x").status_code for _ in range(LIMIT * 3)] + [
        revoked.search("x").status_code for _ in range(LIMIT * 3)
    ]
    answer = alice_calls.search("deploy")

    assert set(refused) == {401}
    assert answer.status_code == 200
    assert answer.headers["RateLimit-Remaining"] == str(LIMIT - 1)


def test_the_panel_and_the_rail_count_against_the_same_user_budget_as_rest(
    serve_client: TestClient, tokens: TokenService, panel_sessions: PanelSessions, alice: User
) -> None:
    rest = caller_for(serve_client, tokens, alice)
    panel = panel_caller_for(serve_client, panel_sessions, alice)
    rail = rpc_caller(serve_client, tokens, alice)
    assert rest.list().status_code == 200
    assert panel.list().headers["RateLimit-Remaining"] == "1"
    assert rail.execute("getMemory")["isError"] is False

    over_rest, over_panel = rest.list(), panel.list()
    over_rail = rail.execute("getMemory")

    assert (over_rest.status_code, over_panel.status_code) == (429, 429)
    assert over_rail["isError"] is True
    assert over_rail["structuredContent"]["status"] == 429
    # The text the agent reads and can relay to the person: the REST error body itself.
    relayed = json.loads(over_rail["content"][0]["text"])
    assert relayed["error"] == "rate_limited"
    assert relayed["retry_after"] >= 1
    assert "Retry in" in relayed["message"]


@pytest.mark.parametrize("rules", [["*=100/minute", "token.search=2/minute"]])
def test_a_token_limit_stops_one_token_while_the_users_other_token_goes_on(
    serve_client: TestClient, tokens: TokenService, alice: User
) -> None:
    laptop, phone = caller_for(serve_client, tokens, alice), caller_for(serve_client, tokens, alice)
    statuses = [laptop.search("x").status_code for _ in range(3)]

    answer = phone.search("x")

    assert statuses == [200, 200, 429]
    assert answer.status_code == 200
    assert answer.headers["RateLimit-Remaining"] == "1"


def test_with_the_limiter_store_down_requests_are_served_without_ratelimit_headers(
    runtime: bootstrap.Runtime, tokens: TokenService, alice: User
) -> None:
    down = RateLimits(
        limiter=LimitsRateLimiter(f"redis://127.0.0.1:{free_port()}/0"),
        policy=RateLimitPolicy.from_rules(["*=1/minute"]),
    )
    for client in _client(runtime, down):
        alice_calls = caller_for(client, tokens, alice)

        answers = [alice_calls.save(f"Saved during the outage {n}") for n in range(3)]

        assert [a.status_code for a in answers] == [201, 201, 201]
        assert not any(name in a.headers for a in answers for name in RATE_HEADERS)
