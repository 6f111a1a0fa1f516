"""The resource server's token check: an issuer's access token in, the principal it speaks for out.

JWTs are verified locally with PyJWT against the issuer's published keys; opaque tokens go to the
configured issuer's introspection endpoint. Nothing about the token is trusted before its issuer is
known to be one of ours: an unknown `iss` is refused before any network request is made.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx2
import jwt

from adapters_oidc.identity import OAuthPrincipal, principal_from_claims
from adapters_oidc.introspection import introspect
from adapters_oidc.issuer import TrustedIssuer
from adapters_oidc.settings import IntrospectionSettings, ResourceServerSettings
from memorybank_core import CredentialsRefusedError, UnavailableError

logger = logging.getLogger("memorybank.oauth")

ACCEPTED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Public-key signatures only: `none` and the HMAC family (`HS256` signed with a public key) are refused."""

REQUIRED_CLAIMS = ("iss", "aud", "exp", "sub")

_REFUSALS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ExpiredSignatureError, "the token has expired"),
    (jwt.ImmatureSignatureError, "the token is not valid yet"),
    (jwt.InvalidAudienceError, "the token was issued for another resource"),
    (jwt.InvalidIssuerError, "the token's issuer is not trusted"),
    (jwt.InvalidSignatureError, "the token's signature does not verify"),
    (jwt.InvalidAlgorithmError, "the token's signing algorithm is not accepted"),
    (jwt.MissingRequiredClaimError, "the token lacks a required claim"),
)


class IssuerTokenVerifier:
    """Checks access tokens from the configured issuers. Thread-safe; call `authenticate` from a worker thread."""

    def __init__(
        self,
        settings: ResourceServerSettings,
        *,
        http: httpx2.Client | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._http = http or httpx2.Client(timeout=settings.http_timeout_seconds, follow_redirects=False)
        self._issuers = {
            issuer: TrustedIssuer(
                issuer,
                self._http,
                max_age=settings.jwks_max_age_seconds,
                refresh_interval=settings.jwks_refresh_interval_seconds,
                clock=clock,
            )
            for issuer in settings.issuers
        }

    def close(self) -> None:
        """Close the HTTP connections to the issuers."""
        self._http.close()

    def warm_up(self) -> None:
        """Discover every issuer now, logging (not raising) failures: a server may start before its IdP."""
        for issuer in self._issuers.values():
            try:
                issuer.key(None)
            except UnavailableError as error:
                logger.warning("oauth.issuer_unavailable issuer=%s problem=%s", issuer.issuer, error)

    def authenticate(self, token: str) -> OAuthPrincipal:
        """The principal `token` speaks for.

        Raises:
            CredentialsRefusedError: the token is invalid, expired, for another resource, from an untrusted
                issuer, or (opaque, without introspection) cannot be checked at all.
            UnavailableError: the issuer's metadata, keys or introspection endpoint cannot be reached.
        """
        try:
            if token.count(".") == 2:
                return self._verify_jwt(token)
            if self.settings.introspection is not None:
                return self._introspect(token, self.settings.introspection)
            raise CredentialsRefusedError("the token is not a JWT and token introspection is not configured")
        except CredentialsRefusedError as refused:
            logger.info("oauth.token_refused reason=%s", refused.reason)
            raise

    def _verify_jwt(self, token: str) -> OAuthPrincipal:
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as error:
            raise CredentialsRefusedError("the token is not a well-formed JWT") from error
        issuer = self._issuers.get(str(unverified.get("iss")))
        if issuer is None:
            raise CredentialsRefusedError("the token's issuer is not trusted")
        claims = self.verified_claims(token, issuer, audiences=self.settings.accepted_audiences)
        return principal_from_claims(issuer.issuer, claims, self.settings)

    def trusted_issuer(self, issuer: str) -> TrustedIssuer:
        """One of the configured issuers.

        Raises:
            KeyError: `issuer` is not configured.
        """
        return self._issuers[issuer]

    @property
    def http(self) -> httpx2.Client:
        """The HTTP client used to reach the issuers."""
        return self._http

    def verified_claims(
        self, token: str, issuer: TrustedIssuer, *, audiences: Sequence[str], required: Sequence[str] = REQUIRED_CLAIMS
    ) -> Mapping[str, Any]:
        """The claims of a JWT signed by `issuer` for one of `audiences`, checked as described in the module.

        Raises:
            CredentialsRefusedError: the signature, algorithm, key, issuer, audience or times are wrong.
            UnavailableError: the issuer's keys cannot be fetched.
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise CredentialsRefusedError("the token is not a well-formed JWT") from error
        if header.get("alg") not in ACCEPTED_ALGORITHMS:
            raise CredentialsRefusedError("the token's signing algorithm is not accepted")
        kid = header.get("kid")
        key = issuer.key(kid if isinstance(kid, str) else None)
        if key is None:
            raise CredentialsRefusedError("the token is signed with a key the issuer does not publish")
        try:
            claims: Mapping[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(ACCEPTED_ALGORITHMS),
                audience=list(audiences),
                issuer=issuer.issuer,
                leeway=self.settings.leeway_seconds,
                options={"require": list(required)},
            )
        except jwt.PyJWTError as error:
            raise CredentialsRefusedError(_reason(error)) from error
        return claims

    def _introspect(self, token: str, settings: IntrospectionSettings) -> OAuthPrincipal:
        issuer = self._issuers[settings.issuer]
        endpoint = issuer.metadata().introspection_endpoint
        if endpoint is None:
            raise UnavailableError("the issuer publishes no introspection endpoint")
        answer = introspect(self._http, endpoint, token, settings)
        if answer.get("iss", issuer.issuer) != issuer.issuer:
            raise CredentialsRefusedError("the token's issuer is not trusted")
        audience = answer.get("aud")
        audiences = {audience} if isinstance(audience, str) else set(audience) if isinstance(audience, list) else set()
        if not audiences & set(self.settings.accepted_audiences):
            raise CredentialsRefusedError("the token was issued for another resource")
        expires = answer.get("exp")
        if isinstance(expires, int | float) and expires + self.settings.leeway_seconds < time.time():
            raise CredentialsRefusedError("the token has expired")
        claims = dict(answer)
        if "sub" not in claims and isinstance(answer.get("client_id"), str):
            # A client acting for itself (client credentials): RFC 9068 section 2.2 makes its JWT `sub` the
            # client id, so the same client is the same person whichever token format the issuer uses.
            claims["sub"] = answer["client_id"]
        return principal_from_claims(issuer.issuer, claims, self.settings)


def _reason(error: jwt.PyJWTError) -> str:
    for error_class, reason in _REFUSALS:
        if isinstance(error, error_class):
            return reason
    return "the token is invalid"
