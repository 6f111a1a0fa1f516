"""OpenID Connect sign-in for a web page (the panel): authorization code flow with PKCE, `state` and `nonce`.

Framework-free, behind the core's `IdentityProviderSignIn` port: `begin` gives the URL to send the browser to
and the secrets (state, nonce, PKCE verifier) for the browser to keep until it comes back; `complete` checks
what came back, exchanges the code and validates the ID token with the same keys and checks as access tokens.
The person it returns is the same `usr_` id their access tokens map to (same issuer, same subject).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Mapping
from urllib.parse import urlencode

import attrs
import httpx2

from adapters_oidc.fetch import json_object
from adapters_oidc.identity import OAuthPrincipal, principal_from_claims
from adapters_oidc.verifier import IssuerTokenVerifier
from memorybank_core import (
    READ_SCOPE,
    WRITE_SCOPE,
    CredentialsRefusedError,
    IdentityProviderSignIn,
    SignInDeclinedError,
    SignInRedirect,
    UnavailableError,
)

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
    scopes: tuple[str, ...] = ("openid",)
    """What the sign-in asks for; add `profile` when people are mapped by claims some providers (Entra ID's
    `oid`, `tid`) put in ID tokens only with it."""


@attrs.frozen(kw_only=True)
class PendingSignIn:
    """What the browser keeps (in a short-lived cookie) between being sent to the provider and its return."""

    state: str
    nonce: str = attrs.field(repr=False)
    code_verifier: str = attrs.field(repr=False)

    def encode(self) -> str:
        """The three secrets as one cookie-safe string (base64url parts joined by dots)."""
        return f"{self.state}.{self.nonce}.{self.code_verifier}"

    @classmethod
    def decode(cls, text: str) -> PendingSignIn:
        """What `encode` wrote.

        Raises:
            CredentialsRefusedError: `text` is not three well-formed secrets (e.g. the PKCE verifier is missing).
        """
        parts = text.split(".")
        if len(parts) != 3 or not all(_PENDING_PART.fullmatch(part) for part in parts):
            raise CredentialsRefusedError("the pending sign-in kept by the browser is malformed")
        state, nonce, code_verifier = parts
        return cls(state=state, nonce=nonce, code_verifier=code_verifier)


_PENDING_PART = re.compile(r"[A-Za-z0-9_-]{43,128}")
"""A pending secret: 256 bits or more, base64url; also RFC 7636's bounds for a code verifier (43 to 128)."""
_ERROR_CODE = re.compile(r"[a-z_]{1,64}")
"""The provider error codes kept (RFC 6749 section 4.1.2.1 names them in lowercase with underscores)."""


def code_challenge(verifier: str) -> str:
    """RFC 7636's S256 challenge: the unpadded base64url SHA-256 of the verifier."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


class OidcSignIn(IdentityProviderSignIn):
    """Sign-in through one configured issuer, with the resource server's keys, checks and identity mapping."""

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

    def begin(self, *, redirect_uri: str) -> SignInRedirect:
        """The authorization URL to redirect the browser to, and the secrets it keeps for `complete`.

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
        )
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.settings.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.settings.scopes),
                "state": pending.state,
                "nonce": pending.nonce,
                "code_challenge": code_challenge(pending.code_verifier),
                "code_challenge_method": "S256",
            }
        )
        separator = "&" if "?" in endpoint else "?"
        return SignInRedirect(url=f"{endpoint}{separator}{query}", pending=pending.encode())

    def complete(self, *, pending: str, redirect_uri: str, response: Mapping[str, str]) -> OAuthPrincipal:
        """The person who signed in, from the query parameters the provider sent the browser back with.

        The principal holds both scopes: a person signed in interactively acts on their own bank.

        Raises:
            SignInDeclinedError: the provider answered with an error (`access_denied`: the person declined).
            CredentialsRefusedError: the state does not match, the answer names another issuer, the code is
                refused, or the ID token is invalid or not for this sign-in (audience, nonce, times, signature).
            UnavailableError: the issuer cannot be reached.
        """
        kept = PendingSignIn.decode(pending)
        state = response.get("state")
        if state is None or not hmac.compare_digest(state.encode(), kept.state.encode()):
            raise CredentialsRefusedError("the sign-in's state does not match")
        issuer = response.get("iss")
        if issuer is None and self._issuer.metadata().issuer_in_authorization_responses:
            raise CredentialsRefusedError("the sign-in came back without its issuer")
        if issuer is not None and issuer != self._issuer.issuer:
            # RFC 9207: an answer from another issuer is a mix-up attack.
            raise CredentialsRefusedError("the sign-in came back from another issuer")
        error = response.get("error")
        if error is not None:
            raise SignInDeclinedError(error if _ERROR_CODE.fullmatch(error) else "error")
        code = response.get("code")
        if not code:
            raise CredentialsRefusedError("the sign-in came back without a code")
        id_token = self._exchange(code, kept, redirect_uri)
        claims = self._verifier.verified_claims(
            id_token, self._issuer, audiences=(self.settings.client_id,), required=ID_TOKEN_CLAIMS
        )
        nonce = claims.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(nonce.encode(), kept.nonce.encode()):
            raise CredentialsRefusedError("the ID token is not for this sign-in")
        person = principal_from_claims(self._issuer.issuer, claims, self._verifier.settings)
        return attrs.evolve(person, scopes=frozenset({READ_SCOPE, WRITE_SCOPE}))

    def _exchange(self, code: str, pending: PendingSignIn, redirect_uri: str) -> str:
        endpoint = self._issuer.metadata().token_endpoint
        if endpoint is None:
            raise UnavailableError("the issuer publishes no token endpoint")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
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
