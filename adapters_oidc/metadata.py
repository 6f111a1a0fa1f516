"""Discovering an issuer: OpenID Connect Discovery, else RFC 8414 authorization-server metadata."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import attrs
import httpx2

from adapters_oidc.fetch import get_json
from memorybank_core import UnavailableError


@attrs.frozen(kw_only=True)
class IssuerMetadata:
    """The parts of an issuer's metadata the resource server uses."""

    issuer: str
    jwks_uri: str
    introspection_endpoint: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    issuer_in_authorization_responses: bool = False
    """RFC 9207's `authorization_response_iss_parameter_supported`: every authorization response names the issuer."""


def metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where an issuer's metadata may be: OIDC's `{issuer}/.well-known/openid-configuration`, then RFC 8414's
    `/.well-known/oauth-authorization-server{path}` (the well-known segment goes before the issuer's path)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return (
        issuer.rstrip("/") + "/.well-known/openid-configuration",
        urlunsplit(parts._replace(path="/.well-known/oauth-authorization-server" + path, query="", fragment="")),
    )


def discover(http: httpx2.Client, issuer: str) -> IssuerMetadata:
    """Fetch and check `issuer`'s metadata.

    The document must name exactly `issuer` (RFC 8414 section 3.3): a document that names another one is
    refused, so a misconfigured or malicious host cannot pass its keys off as a trusted issuer's.

    Raises:
        UnavailableError: no metadata could be fetched, or none that names `issuer` and a `jwks_uri`.
    """
    failure = UnavailableError("the issuer metadata could not be fetched")
    for url in metadata_urls(issuer):
        try:
            document = get_json(http, url, what="issuer metadata")
        except UnavailableError as error:
            failure = error
            continue
        if document.get("issuer") != issuer:
            raise UnavailableError("the issuer metadata names another issuer")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise UnavailableError("the issuer metadata has no jwks_uri")
        return IssuerMetadata(
            issuer=issuer,
            jwks_uri=jwks_uri,
            introspection_endpoint=_url(document.get("introspection_endpoint")),
            authorization_endpoint=_url(document.get("authorization_endpoint")),
            token_endpoint=_url(document.get("token_endpoint")),
            issuer_in_authorization_responses=document.get("authorization_response_iss_parameter_supported") is True,
        )
    raise failure


def _url(value: object) -> str | None:
    return value if isinstance(value, str) and value.startswith(("https://", "http://")) else None
