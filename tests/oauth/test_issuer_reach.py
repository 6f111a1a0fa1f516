"""An issuer reaches only the people it signed in: a subject spelled like one of our ids names nobody else.

Issue 19, finding 1. Issuer B is a real provider whose signing key the test holds, so it can sign any `sub` it
likes, as a hostile or compromised issuer would; issuer A is an honest provider.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters_oidc import user_id_for
from tests.oauth.app import RESOURCE, Server, bearer, serving
from tests.oauth.idp import Idp
from tests.oauth.signing import SigningIssuer, signing_issuer
from tests.oauth.test_resource_server import claims_of

BUILT_IN_USER = "usr_01h455vb4pex5vsknk084sn02q"
BUILT_IN_ORG = "org_01h455vb4pex5vsknk084sn02q"


@pytest.fixture(scope="module")
def issuer_b() -> Iterator[SigningIssuer]:
    with signing_issuer("issuer-b") as issuer:
        yield issuer


def listed(server: Server, token: str) -> list[str]:
    response = server.client.get("/v1/memory", headers=bearer(token))
    assert response.status_code == 200, response.text
    return [memory["id"] for memory in response.json()["memories"]]


def test_a_sub_spelled_as_a_built_in_token_users_id_does_not_reach_their_memories(
    idp: Idp, issuer_b: SigningIssuer
) -> None:
    with serving([idp.issuer, issuer_b.issuer]) as server:
        built_in = server.tokens.issue(user_id=BUILT_IN_USER, org_id=BUILT_IN_ORG).secret
        theirs = server.save(built_in, "The vault code is in the blue binder").json()["memory"]["id"]
        impostor = issuer_b.token_for(BUILT_IN_USER)

        seen = listed(server, impostor)
        found = server.search(impostor, "vault code")
        deleted = server.client.delete(f"/v1/memory/{theirs}", headers=bearer(impostor))

        assert seen == []
        assert deleted.status_code == 404
        assert found.json()["results"] == []
        assert listed(server, built_in) == [theirs]


def test_a_sub_spelled_as_the_id_another_issuer_gives_alice_cannot_list_or_delete_her_memories(
    idp: Idp, issuer_b: SigningIssuer
) -> None:
    with serving([idp.issuer, issuer_b.issuer]) as server:
        alice = idp.token(RESOURCE)
        alice_id = user_id_for(idp.issuer, claims_of(alice)["sub"])
        hers = server.save(alice, "Alice's flight lands at 7").json()["memory"]["id"]
        impostor = issuer_b.token_for(alice_id)

        seen = listed(server, impostor)
        deleted = server.client.delete(f"/v1/memory/{hers}", headers=bearer(impostor))

        assert seen == []
        assert deleted.status_code == 404
        assert listed(server, alice) == [hers]


def test_an_issuer_trusted_with_user_ids_reaches_the_user_its_claim_names_and_no_other_issuer_does(
    idp: Idp, issuer_b: SigningIssuer
) -> None:
    # The one opt-out (--oauth-user-id-claim ISSUER=CLAIM): the operator trusts B with every user id.
    with serving([idp.issuer, issuer_b.issuer], user_id_claims={issuer_b.issuer: "memorybank_user"}) as server:
        built_in = server.tokens.issue(user_id=BUILT_IN_USER, org_id=BUILT_IN_ORG).secret
        theirs = server.save(built_in, "Saved with a built-in token").json()["memory"]["id"]
        trusted = issuer_b.token_for("someone-at-b", memorybank_user=BUILT_IN_USER)
        not_an_id = issuer_b.token_for("someone-at-b", memorybank_user="alice")

        assert listed(server, trusted) == [theirs]
        assert server.search(not_an_id, "anything").status_code == 401
        assert listed(server, idp.token(RESOURCE)) == []
