"""OpenID Connect sign-in for a web page (the panel): authorization code flow with PKCE, `state` and `nonce`.

Framework-free: `begin` gives the URL to send the browser to and the secrets to keep until it comes back
(the caller keeps them server-side, bound to the browser); `complete` checks what came back, exchanges the
code and validates the ID token with the same keys and checks as access tokens. The person it returns is
the same `usr_` id their access tokens map to (same issuer, same subject).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from urllib.parse import urlencode

import attrs
import httpx2

from adapters_oidc.fetch import json_object
from adapters_oidc.identity import OAuthPrincipal, principal_from_claims
from adapters_oidc.verifier import IssuerTokenVerifier
from memorybank_core import READ_SCOPE, WRITE_SCOPE, CredentialsRefusedError, UnavailableError

logger = logging.getLogger("memorybank.oauth")

ID_TOKEN_CLAIMS = ("iss", "aud", "exp", "iat", "sub", "nonce")


@attrs.frozen(kw_only=True)
class SignInSettings:
    """The web client registered at the issuer for the panel's sign-in."""

    issuer: str
    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    """None for a public client (PKCE alone); else sent with HTTP Basic (client_secret_basic)."""
    display_name: str | None = None
    """The provider's name on the button ("Sign in with Keycloak"); default: the issuer's host."""


@attrs.frozen(kw_only=True)
class PendingSignIn:
    """What must be kept (server-side) between sending the browser away and its return."""

    state: str
    nonce: str = attrs.field(repr=False)
    code_verifier: str = attrs.field(repr=False)
    redirect_uri: str


def code_challenge(verifier: str) -> str:
    """RFC 7636's S256 challenge: the unpadded base64url SHA-256 of the verifier."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


class OidcSignIn:
    """Sign-in through one configured issuer."""

    def __init__(self, verifier: IssuerTokenVerifier, settings: SignInSettings) -> None:
        self._verifier = verifier
        self._issuer = verifier.trusted_issuer(settings.issuer)
        self.settings = settings

    @property
    def display_name(self) -> str:
        """The provider's name for the sign-in button."""
        if self.settings.display_name:
            return self.settings.display_name
        return httpx2.URL(self.settings.issuer).host

    def begin(self, redirect_uri: str) -> tuple[str, PendingSignIn]:
        """The authorization URL to redirect the browser to, and the secrets to keep for `complete`.

        Raises:
            UnavailableError: the issuer's metadata cannot be fetched or names no authorization endpoint.
        """
        endpoint = self._issuer.metadata().authorization_endpoint
        if endpoint is None:
            raise UnavailableError("the issuer publishes no authorization endpoint")
        pending = PendingSignIn(
            state=secrets.token_urlsafe(32),
            nonce=secrets.token_urlsafe(32),
            code_verifier=secrets.token_urlsafe(64),
            redirect_uri=redirect_uri,
        )
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.settings.client_id,
                "redirect_uri": redirect_uri,
                "scope": "openid",
                "state": pending.state,
                "nonce": pending.nonce,
                "code_challenge": code_challenge(pending.code_verifier),
                "code_challenge_method": "S256",
            }
        )
        separator = "&" if "?" in endpoint else "?"
        return f"{endpoint}{separator}{query}", pending

    def complete(
        self,
        pending: PendingSignIn,
        *,
        state: str | None,
        code: str | None,
        issuer: str | None = None,
        error: str | None = None,
    ) -> OAuthPrincipal:
        """The person who signed in, from the redirect's query parameters.

        The principal holds both scopes: a person signed in interactively acts on their own bank.

        Raises:
            CredentialsRefusedError: the state does not match, the provider reported an error, the code
                is refused, or the ID token is invalid or not for this sign-in (nonce).
            UnavailableError: the issuer cannot be reached.
        """
        if state is None or not hmac.compare_digest(state, pending.state):
            raise CredentialsRefusedError("the sign-in's state does not match")
        if error is not None:
            raise CredentialsRefusedError("the identity provider refused the sign-in")
        if issuer is not None and issuer != self._issuer.issuer:
            # RFC 9207: a response from another issuer is a mix-up attack.
            raise CredentialsRefusedError("the sign-in came back from another issuer")
        if not code:
            raise CredentialsRefusedError("the sign-in came back without a code")
        id_token = self._exchange(code, pending)
        claims = self._verifier.verified_claims(
            id_token, self._issuer, audiences=(self.settings.client_id,), required=ID_TOKEN_CLAIMS
        )
        nonce = claims.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(nonce, pending.nonce):
            raise CredentialsRefusedError("the ID token is not for this sign-in")
        person = principal_from_claims(self._issuer.issuer, claims, self._verifier.settings)
        return attrs.evolve(person, scopes=frozenset({READ_SCOPE, WRITE_SCOPE}))

    def _exchange(self, code: str, pending: PendingSignIn) -> str:
        endpoint = self._issuer.metadata().token_endpoint
        if endpoint is None:
            raise UnavailableError("the issuer publishes no token endpoint")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.code_verifier,
        }
        secret = self.settings.client_secret
        auth: httpx2.Auth | None = httpx2.BasicAuth(self.settings.client_id, secret) if secret else None
        if auth is None:
            form["client_id"] = self.settings.client_id
        try:
            headers = {"Accept": "application/json"}
            response = (
                self._verifier.http.post(endpoint, data=form, auth=auth, headers=headers)
                if auth is not None
                else self._verifier.http.post(endpoint, data=form, headers=headers)
            )
        except httpx2.HTTPError as failure:
            logger.warning("oauth.token_exchange_failed error=%s", type(failure).__name__)
            raise UnavailableError("the issuer's token endpoint could not be reached") from failure
        if response.status_code in (400, 401):
            raise CredentialsRefusedError("the identity provider refused the sign-in code")
        answer = json_object(response, what="token endpoint answer")
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise CredentialsRefusedError("the identity provider returned no ID token")
        return id_token

    def end_session_url(self, post_logout_redirect_uri: str | None = None) -> str | None:
        """The issuer's RP-initiated logout URL, if it publishes one (for a "sign out everywhere" link)."""
        try:
            endpoint = self._issuer.metadata().end_session_endpoint
        except UnavailableError:
            return None
        if endpoint is None:
            return None
        params = {"client_id": self.settings.client_id}
        if post_logout_redirect_uri:
            params["post_logout_redirect_uri"] = post_logout_redirect_uri
        return f"{endpoint}?{urlencode(params)}"
