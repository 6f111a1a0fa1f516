"""OpenID Connect sign-in (the panel's "Sign in with <IdP>") against the real provider, without a browser UI."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from adapters_oidc import IssuerTokenVerifier, ResourceServerSettings, user_id_for
from adapters_oidc.sign_in import OidcSignIn, SignInSettings
from memorybank_core import CredentialsRefusedError
from tests.oauth.app import RESOURCE
from tests.oauth.browser import sign_in_at_provider
from tests.oauth.idp import Idp, running_idp

CALLBACK = "http://127.0.0.1:8000/oidc/callback"


@pytest.fixture(scope="module")
def panel_idp() -> Iterator[Idp]:
    with running_idp(panel_redirect_uris=[CALLBACK]) as provider:
        yield provider


@pytest.fixture
def sign_in(panel_idp: Idp) -> Iterator[OidcSignIn]:
    verifier = IssuerTokenVerifier(ResourceServerSettings(issuers=(panel_idp.issuer,), resource=RESOURCE))
    yield OidcSignIn(
        verifier,
        SignInSettings(issuer=panel_idp.issuer, client_id="memorybank-panel", client_secret="memorybank-panel-secret"),
    )
    verifier.close()


def test_a_person_signs_in_and_is_the_same_user_as_with_access_tokens(sign_in: OidcSignIn, panel_idp: Idp) -> None:
    url, pending = sign_in.begin(CALLBACK)
    returned = sign_in_at_provider(url, login="carol", redirect_uri=CALLBACK)

    person = sign_in.complete(pending, state=returned["state"], code=returned["code"], issuer=returned.get("iss"))

    assert "code_challenge_method=S256" in url
    assert person.user_id == user_id_for(panel_idp.issuer, "carol")
    assert person.scopes == {"mcp:read", "mcp:write"}


def test_a_returned_state_that_is_not_ours_is_refused(sign_in: OidcSignIn) -> None:
    url, _pending = sign_in.begin(CALLBACK)
    returned = sign_in_at_provider(url, login="carol", redirect_uri=CALLBACK)
    _other_url, other = sign_in.begin(CALLBACK)

    with pytest.raises(CredentialsRefusedError, match="state does not match"):
        sign_in.complete(other, state=returned["state"], code=returned["code"])


def test_a_code_redeemed_with_another_sign_ins_verifier_or_nonce_is_refused(sign_in: OidcSignIn) -> None:
    url, pending = sign_in.begin(CALLBACK)
    returned = sign_in_at_provider(url, login="carol", redirect_uri=CALLBACK)
    _, other = sign_in.begin(CALLBACK)

    with pytest.raises(CredentialsRefusedError, match="refused the sign-in code"):
        sign_in.complete(
            attrs.evolve(pending, code_verifier=other.code_verifier), state=returned["state"], code=returned["code"]
        )


def test_an_id_token_with_another_nonce_is_refused(sign_in: OidcSignIn) -> None:
    url, pending = sign_in.begin(CALLBACK)
    returned = sign_in_at_provider(url, login="carol", redirect_uri=CALLBACK)

    with pytest.raises(CredentialsRefusedError, match="not for this sign-in"):
        sign_in.complete(attrs.evolve(pending, nonce="replayed"), state=returned["state"], code=returned["code"])


def test_a_response_naming_another_issuer_is_refused(sign_in: OidcSignIn) -> None:
    url, pending = sign_in.begin(CALLBACK)
    returned = sign_in_at_provider(url, login="carol", redirect_uri=CALLBACK)

    with pytest.raises(CredentialsRefusedError, match="another issuer"):
        sign_in.complete(pending, state=returned["state"], code=returned["code"], issuer="https://evil.example.com")


def test_a_reused_code_is_refused(sign_in: OidcSignIn) -> None:
    url, pending = sign_in.begin(CALLBACK)
    returned = sign_in_at_provider(url, login="carol", redirect_uri=CALLBACK)
    sign_in.complete(pending, state=returned["state"], code=returned["code"])

    with pytest.raises(CredentialsRefusedError, match="refused the sign-in code"):
        sign_in.complete(pending, state=returned["state"], code=returned["code"])
