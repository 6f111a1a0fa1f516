"""Opaque access tokens, checked with the issuer's RFC 7662 introspection endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters_oidc import IntrospectionSettings, user_id_for
from tests.oauth.app import RESOURCE, Server, serving
from tests.oauth.idp import CLIENT_SECRETS, Idp
from tests.oauth.test_resource_server import assert_refused


@pytest.fixture
def server(idp: Idp) -> Iterator[Server]:
    introspection = IntrospectionSettings(
        issuer=idp.issuer, client_id="memorybank-rs", client_secret=CLIENT_SECRETS["memorybank-rs"]
    )
    with serving([idp.issuer], introspection=introspection) as running:
        yield running


def test_an_active_opaque_token_for_this_resource_is_accepted(server: Server, idp: Idp) -> None:
    opaque = idp.token(RESOURCE, client="opaque-client")
    assert opaque.count(".") != 2

    saved = server.save(opaque, "Opaque tokens work through introspection")
    same_client = server.tokens.issue(
        user_id=user_id_for(idp.issuer, "opaque-client"), org_id="org_01h455vb4pex5vsknk084sn02q"
    )

    assert saved.status_code == 201, saved.text
    assert server.search(same_client.secret, "introspection").json()["results"][0]["id"] == saved.json()["memory"]["id"]


def test_an_opaque_token_for_another_resource_is_refused(server: Server, idp: Idp) -> None:
    opaque = idp.token("https://other-api.example.com/", client="opaque-client")

    assert_refused(server, opaque, "the token was issued for another resource")


def test_an_opaque_token_the_issuer_does_not_know_is_refused(server: Server) -> None:
    assert_refused(server, "made-up-opaque-token", "the issuer says the token is not active")


def test_without_introspection_an_opaque_token_is_refused(idp: Idp) -> None:
    with serving([idp.issuer]) as server:
        assert_refused(
            server,
            idp.token(RESOURCE, client="opaque-client"),
            "the token is not a JWT and token introspection is not configured",
        )
