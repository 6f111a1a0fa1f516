"""adapters_oidc: memorybank as an OAuth 2.1 resource server for the issuers a deployment trusts.

`IssuerTokenVerifier(settings).authenticate(token)` checks an access token from a configured issuer
(discovery, cached keys, `iss`/`aud`/`exp`/`nbf`, scope mapping, or RFC 7662 introspection for opaque
tokens) and returns the principal it speaks for. It knows no web framework and no storage; the
composition root puts it beside the built-in bearer tokens (see docs/auth.md). `OidcSignIn` signs a person in
to the panel through one of those issuers (OpenID Connect, authorization code + PKCE), mapped to the same user.
"""

from adapters_oidc.identity import OAuthPrincipal, granted_scopes, token_scopes, user_id_for
from adapters_oidc.metadata import IssuerMetadata, discover
from adapters_oidc.settings import DEFAULT_SCOPE_MAP, IntrospectionSettings, ResourceServerSettings
from adapters_oidc.sign_in import OidcSignIn, PendingSignIn, SignInSettings
from adapters_oidc.verifier import ACCEPTED_ALGORITHMS, IssuerTokenVerifier

__all__ = [
    "ACCEPTED_ALGORITHMS",
    "DEFAULT_SCOPE_MAP",
    "IntrospectionSettings",
    "IssuerMetadata",
    "IssuerTokenVerifier",
    "OAuthPrincipal",
    "OidcSignIn",
    "PendingSignIn",
    "ResourceServerSettings",
    "SignInSettings",
    "discover",
    "granted_scopes",
    "token_scopes",
    "user_id_for",
]
