"""The OAuth resource server against a real OpenID provider: what it accepts, what it refuses and how it says so."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from adapters_oidc import user_id_for
from memorybank_core.ids import USER_PREFIX, is_id
from tests.oauth.app import METADATA_URL, RESOURCE, Server, challenge, serving
from tests.oauth.idp import Idp


@pytest.fixture
def server(idp: Idp) -> Any:
    with serving([idp.issuer]) as running:
        yield running


def claims_of(token: str) -> dict[str, Any]:
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def assert_refused(server: Server, token: str, reason: str) -> None:
    """401 on REST (RFC 6750 `invalid_token`, the reason, the metadata) and on the rail (`invalid_mcp_token`)."""
    response = server.search(token, "anything")
    assert response.status_code == 401, response.text
    assert response.json()["error"] == "unauthorized"
    assert challenge(response) == {
        "error": "invalid_token",
        "error_description": reason,
        "resource_metadata": METADATA_URL,
    }
    rail = server.rail(token)
    assert rail.status_code == 401
    assert rail.json()["error"] == "invalid_mcp_token"
    assert challenge(rail)["error_description"] == reason
    assert challenge(rail)["resource_metadata"] == METADATA_URL


def test_an_issuer_token_for_this_resource_saves_and_searches_over_rest_and_the_rail(server: Server, idp: Idp) -> None:
    token = idp.token(RESOURCE)

    saved = server.save(token, "The staging database lives in eu-west-1")
    found = server.search(token, "staging database")

    assert saved.status_code == 201, saved.text
    assert [hit["id"] for hit in found.json()["results"]] == [saved.json()["memory"]["id"]]
    assert server.rail(token).status_code == 200


def test_the_protected_resource_metadata_lists_the_issuers_and_scopes(server: Server, idp: Idp) -> None:
    metadata = server.client.get("/.well-known/oauth-protected-resource/mcp/agent").json()

    assert metadata == {
        "resource": RESOURCE,
        "authorization_servers": [idp.issuer],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "bearer_methods_supported": ["header"],
    }


def test_a_request_without_a_token_is_told_where_the_metadata_is(server: Server) -> None:
    rest = server.client.get("/v1/memory")
    rail = server.rail(None)

    assert rest.status_code == 401
    assert challenge(rest) == {"resource_metadata": METADATA_URL}
    assert rail.status_code == 401
    assert challenge(rail)["resource_metadata"] == METADATA_URL


def test_an_expired_token_is_refused(idp: Idp) -> None:
    with serving([idp.issuer], leeway_seconds=0) as server:
        token = idp.token(RESOURCE, client="short-lived")
        assert server.search(token, "anything").status_code == 200
        time.sleep(max(0.0, claims_of(token)["exp"] - time.time()) + 1.1)

        assert_refused(server, token, "the token has expired")


def test_a_token_minted_for_another_resource_is_refused(server: Server, idp: Idp) -> None:
    assert_refused(server, idp.token("https://other-api.example.com/"), "the token was issued for another resource")


def test_a_token_from_an_issuer_not_configured_is_refused_without_asking_it(server: Server, other_idp: Idp) -> None:
    assert_refused(server, other_idp.token(RESOURCE), "the token's issuer is not trusted")
    assert not [url for url in server.requests if url.startswith(other_idp.issuer)]


def test_a_token_signed_with_an_unpublished_key_is_refused(server: Server, idp: Idp) -> None:
    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(claims_of(idp.token(RESOURCE)), attacker, algorithm="RS256", headers={"kid": "attacker"})

    assert_refused(server, forged, "the token is signed with a key the issuer does not publish")


def test_a_token_with_a_tampered_payload_fails_its_signature(server: Server, idp: Idp) -> None:
    header, _payload, signature = idp.token(RESOURCE).split(".")
    claims = {**claims_of(idp.token(RESOURCE)), "sub": "someone-else"}
    tampered = f"{header}.{b64(json.dumps(claims).encode())}.{signature}"

    assert_refused(server, tampered, "the token's signature does not verify")


def test_an_unsigned_alg_none_token_is_refused(server: Server, idp: Idp) -> None:
    real = idp.token(RESOURCE)
    kid = jwt.get_unverified_header(real)["kid"]
    unsigned = f"{b64(json.dumps({'alg': 'none', 'kid': kid}).encode())}.{b64(json.dumps(claims_of(real)).encode())}."

    assert_refused(server, unsigned, "the token's signing algorithm is not accepted")


def test_an_hs256_token_keyed_with_the_issuers_public_key_is_refused(server: Server, idp: Idp) -> None:
    real = idp.token(RESOURCE)
    kid = jwt.get_unverified_header(real)["kid"]
    public_jwk = next(key for key in idp.jwks()["keys"] if key["kid"] == kid)
    # The classic confusion attack: the public key, which anyone can fetch, used as an HMAC secret.
    for secret in (json.dumps(public_jwk).encode(), jwt.PyJWK(public_jwk).key.public_bytes(*_pem())):
        signing_input = (
            f"{b64(json.dumps({'alg': 'HS256', 'kid': kid}).encode())}.{b64(json.dumps(claims_of(real)).encode())}"
        )
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()

        assert_refused(server, f"{signing_input}.{b64(mac)}", "the token's signing algorithm is not accepted")


def _pem() -> tuple[Any, Any]:
    from cryptography.hazmat.primitives import serialization

    return serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo


def test_a_token_without_the_write_scope_may_read_but_not_save(server: Server, idp: Idp) -> None:
    reader = idp.token(RESOURCE, scope="mcp:read")

    refused = server.save(reader, "not allowed")

    assert server.search(reader, "anything").status_code == 200
    assert refused.status_code == 403
    assert challenge(refused) == {
        "error": "insufficient_scope",
        "scope": "mcp:write",
        "resource_metadata": METADATA_URL,
    }


def test_a_token_with_no_memory_scope_is_refused_by_the_rail_with_insufficient_scope(server: Server, idp: Idp) -> None:
    token = idp.token(RESOURCE, scope=None)
    assert "scope" not in claims_of(token) or not set(claims_of(token)["scope"].split()) & {"mcp:read", "mcp:write"}

    rail = server.rail(token)

    assert rail.status_code == 403
    assert rail.json()["error"] == "insufficient_mcp_scope"
    assert challenge(rail)["error"] == "insufficient_scope"
    assert challenge(rail)["scope"] == "mcp:read mcp:write"


def test_the_same_subject_at_two_issuers_is_two_people(idp: Idp, other_idp: Idp) -> None:
    with serving([idp.issuer, other_idp.issuer]) as server:
        first, second = idp.token(RESOURCE), other_idp.token(RESOURCE)
        assert claims_of(first)["sub"] == claims_of(second)["sub"]

        saved = server.save(first, "Only the first issuer's person wrote this")
        seen_by_second = server.search(second, "first issuer person")

        assert saved.status_code == 201
        assert seen_by_second.status_code == 200
        assert seen_by_second.json()["results"] == []
        assert user_id_for(idp.issuer, "rs-tests") != user_id_for(other_idp.issuer, "rs-tests")


def test_the_user_id_is_a_stable_usr_typeid_of_issuer_and_subject() -> None:
    derived = user_id_for("https://login.example.com", "248289761001")

    assert is_id(derived, prefix=USER_PREFIX)
    # Persisted in every memory row: this exact value must never change (docs/auth.md shows it).
    assert derived == user_id_for("https://login.example.com", "248289761001")
    assert derived == "usr_" + derived.removeprefix("usr_")
    assert user_id_for("https://login.example.com", "24828976100") != derived
    assert user_id_for("https://login.example.co", "m248289761001") != derived


def test_built_in_tokens_keep_working_and_never_reach_the_issuer(server: Server, idp: Idp) -> None:
    issued = server.tokens.issue(user_id=user_id_for(idp.issuer, "rs-tests"), org_id="org_01h455vb4pex5vsknk084sn02q")

    assert server.search(issued.secret, "anything").status_code == 200
    assert server.search("mbk_not-a-real-token", "anything").status_code == 401
    assert server.requests == []


def test_an_issuer_persons_memories_belong_to_the_derived_user_id(server: Server, idp: Idp) -> None:
    saved = server.save(idp.token(RESOURCE), "Deploys go through the blue pipeline")
    same_person = server.tokens.issue(
        user_id=user_id_for(idp.issuer, "rs-tests"), org_id="org_01h455vb4pex5vsknk084sn02q"
    )

    found = server.search(same_person.secret, "blue pipeline").json()["results"]

    assert [hit["id"] for hit in found] == [saved.json()["memory"]["id"]]


def test_a_scope_map_decides_which_issuer_scopes_grant_ours(idp: Idp) -> None:
    scope_map = {"mcp:read": frozenset({"mcp:write"}), "mcp:write": frozenset({"memory.write"})}
    with serving([idp.issuer], scope_map=scope_map) as server:
        writer_at_the_issuer = idp.token(RESOURCE, scope="mcp:write")

        # Under this map the issuer's mcp:write grants only our mcp:read.
        assert server.search(writer_at_the_issuer, "anything").status_code == 200
        assert server.save(writer_at_the_issuer, "not allowed").status_code == 403
