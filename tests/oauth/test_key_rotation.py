"""Key sets over time: rotation, the refetch rate limit, an unreachable issuer (503, never acceptance)."""

from __future__ import annotations

import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from adapters_oidc.settings import DEFAULT_JWKS_MAX_AGE_SECONDS, DEFAULT_JWKS_REFRESH_INTERVAL_SECONDS
from tests.oauth.app import RESOURCE, Server, serving
from tests.oauth.idp import Idp, running_idp
from tests.oauth.test_resource_server import assert_refused, claims_of


def private_jwk(kid: str) -> dict[str, Any]:
    """A fresh RSA signing key for the provider's configuration."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = jwt.algorithms.RSAAlgorithm.to_jwk(key, as_dict=True)
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


def key_set_fetches(server: Server) -> int:
    return sum(url.endswith("/jwks") for url in server.requests)


def test_after_a_rotation_new_keys_are_fetched_and_the_removed_key_is_refused() -> None:
    with running_idp(keys=[private_jwk("before")]) as before, serving([before.issuer]) as server:
        old_token = before.token(RESOURCE)
        assert server.search(old_token, "anything").status_code == 200
        before.stop()

        with running_idp(port=before.port, keys=[private_jwk("after")]) as after:
            assert after.issuer == before.issuer
            new_token = after.token(RESOURCE)
            server.clock.now += DEFAULT_JWKS_REFRESH_INTERVAL_SECONDS

            assert server.search(new_token, "anything").status_code == 200
            assert_refused(server, old_token, "the token is signed with a key the issuer does not publish")


def test_unknown_key_ids_trigger_at_most_one_refetch_per_interval(idp: Idp) -> None:
    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with serving([idp.issuer]) as server:
        assert server.search(idp.token(RESOURCE), "anything").status_code == 200
        claims = claims_of(idp.token(RESOURCE))

        for attempt in range(5):
            forged = jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": f"made-up-{attempt}"})
            assert server.search(forged, "anything").status_code == 401
        fetched_within_the_interval = key_set_fetches(server)
        server.clock.now += DEFAULT_JWKS_REFRESH_INTERVAL_SECONDS
        for attempt in range(5):
            forged = jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": f"later-{attempt}"})
            assert server.search(forged, "anything").status_code == 401

        assert fetched_within_the_interval == 1
        assert key_set_fetches(server) == 2


def test_an_unreachable_key_set_answers_503_never_acceptance() -> None:
    with running_idp() as provider, serving([provider.issuer]) as server:
        token = provider.token(RESOURCE)
        assert server.search(token, "anything").status_code == 200
        built_in = server.tokens.issue(
            user_id="usr_01h455vb4pex5vsknk084sn02q", org_id="org_01h455vb4pex5vsknk084sn02q"
        )
        provider.stop()
        server.clock.now += DEFAULT_JWKS_MAX_AGE_SECONDS

        rest = server.search(token, "anything")
        rail = server.rail(token)

        assert rest.status_code == 503
        assert rest.headers["Retry-After"]
        assert rail.status_code == 503
        assert server.search(built_in.secret, "anything").status_code == 200


def test_an_issuer_down_from_the_start_answers_503() -> None:
    with running_idp() as provider:
        token = provider.token(RESOURCE)
        provider.stop()
        with serving([provider.issuer]) as server:
            assert server.search(token, "anything").status_code == 503
            assert server.rail(token).status_code == 503


def test_time_claims_are_checked_with_a_small_skew() -> None:
    # The issuer's own key signs these (the test holds it): only the time claims differ from a real token.
    key = private_jwk("held-by-the-test")
    with running_idp(keys=[key]) as provider, serving([provider.issuer]) as server:
        claims = claims_of(provider.token(RESOURCE))
        signing_key = jwt.PyJWK(key).key
        now = int(time.time())

        def signed(**times: int) -> str:
            return jwt.encode({**claims, **times}, signing_key, algorithm="RS256", headers={"kid": key["kid"]})

        assert server.search(signed(exp=now - 10), "x").status_code == 200  # within the 30 s skew
        assert server.search(signed(nbf=now + 10), "x").status_code == 200
        assert_refused(server, signed(exp=now - 60), "the token has expired")
        assert_refused(server, signed(nbf=now + 60), "the token is not valid yet")
