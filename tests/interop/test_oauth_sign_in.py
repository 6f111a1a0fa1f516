"""A person signs an MCP client in through their OpenID provider and uses the rail: the whole OAuth path.

`memorybank serve --oauth-issuer URL` runs as a real process, the provider is the real `oidc-provider`
(tests/oauth/idp), and the client is the official TypeScript SDK with its own OAuth support
(ts_oauth_client.mjs): 401, metadata discovery, dynamic registration, authorization code + PKCE, the
provider's login and consent forms, the token, then save and search.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters_oidc import user_id_for
from harness.served import served
from tests.interop.conftest import INTEROP_DIR, run_node_client
from tests.oauth.idp import Idp, running_idp

pytestmark = [pytest.mark.interop, pytest.mark.oauth]

OAUTH_CLIENT = INTEROP_DIR / "ts_oauth_client.mjs"


@pytest.fixture(scope="module")
def provider() -> Iterator[Idp]:
    with running_idp() as idp:
        yield idp


@pytest.fixture(scope="module")
def oauth_server(db_url: str, rail_dir: Path, provider: Idp) -> Iterator[str]:
    """`memorybank serve` trusting the provider (configured through the environment, as a deployment would)."""
    with served(db_url, env={"MEMORYBANK_OAUTH_ISSUERS": provider.issuer}, log=rail_dir / "oauth-serve.log") as url:
        yield url


def sign_in_and_use(node: str, home: Path, config: dict[str, Any]) -> Any:
    answer = run_node_client([node, str(OAUTH_CLIENT), json.dumps(config)], home)
    assert answer.status == 0, answer.stderr
    return answer.json()


def test_an_mcp_client_signs_in_through_the_provider_then_saves_and_finds_a_memory(
    node: str, home: Path, oauth_server: str, provider: Idp
) -> None:
    content = "Alice's team ships the billing service on Wednesdays"
    rail = f"{oauth_server}/mcp/agent"

    report = sign_in_and_use(node, home, {"url": rail, "login": "alice", "content": content, "query": "billing"})

    assert report["refusedFirst"] is True
    assert report["authorizationEndpoint"] == f"{provider.issuer}/auth"
    assert report["authorizationParams"] == {
        "codeChallengeMethod": "S256",
        "hasCodeChallenge": True,
        "hasState": True,
        "resource": rail,
        "scope": "mcp:read mcp:write",
    }
    assert report["registeredClientId"]
    assert report["forms"] == ["login", "consent"]
    assert report["token"] == {"iss": provider.issuer, "sub": "alice", "aud": rail, "scope": "mcp:read mcp:write"}
    assert report["recalled"] == [{"id": report["savedId"], "content": content}]


def test_a_second_person_through_the_same_provider_sees_none_of_it(
    node: str, home: Path, oauth_server: str, provider: Idp
) -> None:
    rail = f"{oauth_server}/mcp/agent"
    alice = sign_in_and_use(
        node, home, {"url": rail, "login": "alice", "content": "Alice keeps the vault key in room 12", "query": "vault"}
    )

    bob = sign_in_and_use(node, home, {"url": rail, "login": "bob", "query": "vault key room"})

    assert alice["recalled"]
    assert bob["recalled"] == []
    assert user_id_for(provider.issuer, "alice") != user_id_for(provider.issuer, "bob")
