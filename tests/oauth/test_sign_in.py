"""OpenID Connect sign-in (`adapters_oidc.OidcSignIn`) against the real provider, without the panel around it."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from adapters_oidc import IssuerTokenVerifier, OidcSignIn, PendingSignIn, ResourceServerSettings, user_id_for
from adapters_oidc.sign_in import SignInSettings
from memorybank_core import CredentialsRefusedError, SignInRedirect
from tests.oauth.app import RESOURCE
from tests.oauth.browser import sign_in_at_provider
from tests.oauth.idp import Idp, running_idp

CALLBACK = "http://127.0.0.1:8000/panel/oidc/callback"


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


def at_provider(redirect: SignInRedirect, login: str = "carol") -> dict[str, str]:
    return sign_in_at_provider(redirect.url, login=login, redirect_uri=CALLBACK)


def test_a_person_signs_in_and_is_the_same_user_as_with_access_tokens(sign_in: OidcSignIn, panel_idp: Idp) -> None:
    redirect = sign_in.begin(redirect_uri=CALLBACK)
    returned = at_provider(redirect)

    person = sign_in.complete(pending=redirect.pending, redirect_uri=CALLBACK, response=returned)

    assert "code_challenge_method=S256" in redirect.url
    assert returned["iss"] == panel_idp.issuer  # RFC 9207: the provider names itself in its answer
    assert person.user_id == user_id_for(panel_idp.issuer, "carol")
    assert person.scopes == {"mcp:read", "mcp:write"}


def test_a_returned_state_that_is_not_ours_is_refused(sign_in: OidcSignIn) -> None:
    returned = at_provider(sign_in.begin(redirect_uri=CALLBACK))
    other = sign_in.begin(redirect_uri=CALLBACK)

    with pytest.raises(CredentialsRefusedError, match="state does not match"):
        sign_in.complete(pending=other.pending, redirect_uri=CALLBACK, response=returned)


def test_a_code_redeemed_with_another_sign_ins_verifier_is_refused_by_the_provider(sign_in: OidcSignIn) -> None:
    redirect = sign_in.begin(redirect_uri=CALLBACK)
    returned = at_provider(redirect)
    other = PendingSignIn.decode(sign_in.begin(redirect_uri=CALLBACK).pending)
    mine = PendingSignIn.decode(redirect.pending)

    with pytest.raises(CredentialsRefusedError, match="refused the sign-in code"):
        sign_in.complete(
            pending=attrs.evolve(mine, code_verifier=other.code_verifier).encode(),
            redirect_uri=CALLBACK,
            response=returned,
        )


@pytest.mark.parametrize("kept", ["", "a.b", "only-state", "x" * 43 + "." + "y" * 43 + "."])
def test_a_pending_sign_in_without_its_pkce_verifier_or_nonce_is_refused(kept: str) -> None:
    with pytest.raises(CredentialsRefusedError, match="malformed"):
        PendingSignIn.decode(kept)


def test_an_id_token_with_another_nonce_is_refused(sign_in: OidcSignIn) -> None:
    redirect = sign_in.begin(redirect_uri=CALLBACK)
    returned = at_provider(redirect)
    replayed = attrs.evolve(PendingSignIn.decode(redirect.pending), nonce="n" * 43)

    with pytest.raises(CredentialsRefusedError, match="not for this sign-in"):
        sign_in.complete(pending=replayed.encode(), redirect_uri=CALLBACK, response=returned)


def test_a_response_naming_another_issuer_or_none_is_refused(sign_in: OidcSignIn) -> None:
    redirect = sign_in.begin(redirect_uri=CALLBACK)
    returned = at_provider(redirect)

    with pytest.raises(CredentialsRefusedError, match="another issuer"):
        sign_in.complete(
            pending=redirect.pending, redirect_uri=CALLBACK, response={**returned, "iss": "https://evil.example.com"}
        )
    without_issuer = {name: value for name, value in returned.items() if name != "iss"}
    with pytest.raises(CredentialsRefusedError, match="without its issuer"):
        sign_in.complete(pending=redirect.pending, redirect_uri=CALLBACK, response=without_issuer)


def test_a_reused_code_is_refused(sign_in: OidcSignIn) -> None:
    redirect = sign_in.begin(redirect_uri=CALLBACK)
    returned = at_provider(redirect)
    sign_in.complete(pending=redirect.pending, redirect_uri=CALLBACK, response=returned)

    with pytest.raises(CredentialsRefusedError, match="refused the sign-in code"):
        sign_in.complete(pending=redirect.pending, redirect_uri=CALLBACK, response=returned)
