"""An issuer's tokens open a team bank only through the organization claim the operator named for that issuer.

Issue 30. The issuer is a real provider whose signing key the test holds, so it signs tokens naming any
organization, as the provider would with a per-user claim; a second, honest provider is not named for team banks.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx2
import pytest

from tests.oauth.app import RESOURCE, Server, bearer, serving
from tests.oauth.idp import Idp
from tests.oauth.signing import SigningIssuer, signing_issuer
from tests.oauth.test_key_rotation import private_jwk

TEAM = "mcp:read mcp:write org:read org:write"
BUILT_IN_USER = "usr_01h455vb4pex5vsknk084sn02q"
BUILT_IN_ORG = "org_01h455vb4pex5vsknk084sn02q"


@pytest.fixture(scope="module")
def team_issuer() -> Iterator[SigningIssuer]:
    with signing_issuer("team-issuer", scope=TEAM) as issuer:
        yield issuer


def save_to_team(server: Server, token: str, content: str) -> httpx2.Response:
    return server.client.post("/v1/memory", json={"content": content, "bankScope": "org"}, headers=bearer(token))


def team_list(server: Server, token: str) -> httpx2.Response:
    return server.client.get("/v1/memory", params={"bankScope": "org"}, headers=bearer(token))


def team_contents(server: Server, token: str) -> list[str]:
    response = team_list(server, token)
    assert response.status_code == 200, response.text
    return [memory["content"] for memory in response.json()["memories"]]


def test_two_members_named_by_the_claim_share_the_bank_and_another_organization_sees_none(
    team_issuer: SigningIssuer,
) -> None:
    with serving([team_issuer.issuer], org_bank_claims={team_issuer.issuer: "org"}) as server:
        ann = team_issuer.token_for("ann", org="acme")
        amy = team_issuer.token_for("amy", org="acme")
        cat = team_issuer.token_for("cat", org="globex")

        saved = save_to_team(server, ann, "The staging database lives in eu-west-1")
        found = server.client.get(
            "/v1/memory/search", params={"q": "staging database", "bankScope": "org"}, headers=bearer(amy)
        )

        assert saved.status_code == 201, saved.text
        assert saved.json()["memory"]["scope"] == "org"
        assert [hit["content"] for hit in found.json()["results"]] == ["The staging database lives in eu-west-1"]
        assert team_contents(server, cat) == []
        memory_id = saved.json()["memory"]["id"]
        refused = server.client.delete(f"/v1/memory/{memory_id}", params={"bankScope": "org"}, headers=bearer(cat))
        assert refused.status_code == 404
        assert team_contents(server, amy) == ["The staging database lives in eu-west-1"]


def test_a_member_whose_next_token_no_longer_names_the_organization_loses_the_bank_on_that_request(
    team_issuer: SigningIssuer,
) -> None:
    with serving([team_issuer.issuer], org_bank_claims={team_issuer.issuer: "org"}) as server:
        ann = team_issuer.token_for("ann", org="acme")
        assert save_to_team(server, ann, "The deploy key rotates on Mondays").status_code == 201
        assert team_contents(server, team_issuer.token_for("amy", org="acme")) == ["The deploy key rotates on Mondays"]

        left = team_issuer.token_for("amy")  # amy's next token: the provider no longer names her organization
        moved = team_issuer.token_for("amy", org="globex")

        listed = team_list(server, left)
        saved = save_to_team(server, left, "Anything for the team")
        own = server.client.get("/v1/memory", headers=bearer(left))

        assert listed.status_code == 403
        assert listed.json()["error"] == "insufficient_scope"
        assert saved.status_code == 403
        assert own.status_code == 200  # her own bank stays hers
        assert team_contents(server, moved) == []
        assert team_contents(server, ann) == ["The deploy key rotates on Mondays"]


def test_an_issuer_not_named_for_team_banks_opens_none_even_with_org_scopes_and_the_claim(
    idp: Idp, team_issuer: SigningIssuer
) -> None:
    with serving([idp.issuer, team_issuer.issuer], org_claim="org") as server:
        # No --oauth-org-claim ISSUER=CLAIM for either: today's default, no issuer token opens a team bank.
        member = team_issuer.token_for("ann", org="acme")

        assert team_list(server, member).status_code == 403
        assert save_to_team(server, member, "Not for the team").status_code == 403
        assert team_list(server, idp.token(RESOURCE)).status_code == 403


def _segment(document: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()


def test_forged_and_tampered_organization_claims_are_refused(team_issuer: SigningIssuer) -> None:
    with serving([team_issuer.issuer], org_bank_claims={team_issuer.issuer: "org"}) as server:
        ann = team_issuer.token_for("ann", org="acme")
        assert save_to_team(server, ann, "The office wifi password is on the fridge").status_code == 201
        genuine_globex = team_issuer.token_for("mallory", org="globex")
        header, payload, signature = genuine_globex.split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        claims["org"] = "acme"
        tampered_payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        tampered = f"{header}.{tampered_payload}.{signature}"
        forged = team_issuer.token_for("mallory", org="acme", key=private_jwk("team-issuer"))
        unsigned = f"{_segment({'alg': 'none', 'typ': 'JWT'})}.{tampered_payload}."

        for token in (tampered, forged, unsigned):
            response = team_list(server, token)
            assert response.status_code == 401, response.text
        assert team_contents(server, genuine_globex) == []


def test_a_claim_spelled_as_another_organizations_id_reaches_neither_its_bank_nor_another_issuers(
    idp: Idp, team_issuer: SigningIssuer
) -> None:
    with serving([idp.issuer, team_issuer.issuer], org_bank_claims={team_issuer.issuer: "org"}) as server:
        built_in = server.tokens.issue(
            user_id=BUILT_IN_USER, org_id=BUILT_IN_ORG, scopes={"mcp:read", "mcp:write", "org:read", "org:write"}
        ).secret
        assert save_to_team(server, built_in, "The built-in team's runbook is in the wiki").status_code == 201

        impostor = team_issuer.token_for("mallory", org=BUILT_IN_ORG)

        assert team_contents(server, impostor) == []
        assert team_contents(server, built_in) == ["The built-in team's runbook is in the wiki"]
