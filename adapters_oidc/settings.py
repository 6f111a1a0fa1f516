"""What the resource server trusts: issuers, this server's resource URL and audiences, scope and identity mapping."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from memorybank_core import ORG_SCOPES, READ_SCOPE, WRITE_SCOPE

DEFAULT_SCOPE_MAP: Mapping[str, frozenset[str]] = {
    READ_SCOPE: frozenset({READ_SCOPE}),
    WRITE_SCOPE: frozenset({WRITE_SCOPE}),
}
"""Our scope -> the issuer scopes that grant it. By default an issuer grants `mcp:read` with `mcp:read`."""

DEFAULT_ORG_SCOPE_MAP: Mapping[str, frozenset[str]] = {scope: frozenset({scope}) for scope in ORG_SCOPES}
"""The org scopes' default grants (`org:read` with `org:read`), read only at an issuer that opens team banks."""

DEFAULT_LEEWAY_SECONDS = 30
"""Clock skew allowed on `exp`, `nbf` and `iat`: small, since a token lives minutes."""

DEFAULT_JWKS_MAX_AGE_SECONDS = 300.0
"""A fetched key set is used this long; then it is fetched again, so a removed (revoked) key stops working."""

DEFAULT_JWKS_REFRESH_INTERVAL_SECONDS = 30.0
"""At most one early refetch of a key set per this interval, when a token names a key we do not know.

Without the limit, anyone could make the server hammer the issuer by sending tokens with made-up key ids.
"""

DEFAULT_HTTP_TIMEOUT_SECONDS = 5.0


@attrs.frozen(kw_only=True)
class IntrospectionSettings:
    """RFC 7662 token introspection for opaque (non-JWT) access tokens: one issuer, our client credentials there."""

    issuer: str
    client_id: str
    client_secret: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class ResourceServerSettings:
    """The OAuth 2.1 resource server's configuration (see docs/auth.md)."""

    issuers: tuple[str, ...]
    """Trusted issuers, exactly as their tokens' `iss` and their metadata's `issuer` spell them."""
    resource: str
    """This server's resource identifier (RFC 8707 / RFC 9728): the rail's URL, `https://host/mcp/agent`."""
    audiences: tuple[str, ...] = ()
    """Accepted `aud` values; empty means just `resource`. Add e.g. Entra ID's `api://<app id>` here."""
    scope_map: Mapping[str, frozenset[str]] = attrs.field(factory=lambda: dict(DEFAULT_SCOPE_MAP))
    user_claims: Mapping[str, str] = attrs.field(factory=dict)
    """Issuer -> the claim naming the person there instead of `sub` (e.g. Entra ID's `oid`).

    The user id is still derived from (issuer, the claim's value), whatever the value looks like.
    """
    user_id_claims: Mapping[str, str] = attrs.field(factory=dict)
    """Issuer -> the claim holding this server's own `usr_` id, taken as is.

    The one exception to deriving ids: it trusts that issuer with every user id on this server.
    """
    org_claim: str | None = None
    """The claim naming the person's organization at every issuer not in `org_bank_claims`; None: `default_org`.

    It names the organization for the gate, quotas and the record of saves, never a team bank.
    """
    org_bank_claims: Mapping[str, str] = attrs.field(factory=dict)
    """Issuer -> the claim naming the person's organization there, whose team bank the token may then open.

    Only a token carrying the claim (a non-empty string) keeps its org scopes; the organization is always derived
    from (issuer, value), so an issuer opens only the banks of organizations it names (ADR 0038).
    """
    default_org: str | None = None
    """The `org_` id for people whose token names no organization; None: one derived from the issuer."""
    leeway_seconds: int = DEFAULT_LEEWAY_SECONDS
    jwks_max_age_seconds: float = DEFAULT_JWKS_MAX_AGE_SECONDS
    jwks_refresh_interval_seconds: float = DEFAULT_JWKS_REFRESH_INTERVAL_SECONDS
    http_timeout_seconds: float = DEFAULT_HTTP_TIMEOUT_SECONDS
    introspection: IntrospectionSettings | None = None

    def __attrs_post_init__(self) -> None:
        named = (
            ("user_claims", self.user_claims),
            ("user_id_claims", self.user_id_claims),
            ("org_bank_claims", self.org_bank_claims),
        )
        for name, mapping in named:
            unknown = set(mapping) - set(self.issuers)
            if unknown:
                raise ValueError(f"{name} names issuers that are not trusted: {sorted(unknown)}")
        twice = set(self.user_claims) & set(self.user_id_claims)
        if twice:
            raise ValueError(f"user_claims and user_id_claims both name the person at {sorted(twice)}")

    def person_claim(self, issuer: str) -> tuple[str, bool]:
        """The claim naming the person at `issuer`, and whether its value is our user id as is."""
        if issuer in self.user_id_claims:
            return self.user_id_claims[issuer], True
        return self.user_claims.get(issuer, "sub"), False

    def org_scope_map(self) -> Mapping[str, frozenset[str]]:
        """Our scopes -> the issuer scopes granting them at an issuer that opens team banks."""
        return {**DEFAULT_ORG_SCOPE_MAP, **self.scope_map}

    @property
    def accepted_audiences(self) -> tuple[str, ...]:
        """The `aud` values a token must name one of."""
        return self.audiences or (self.resource,)

    @property
    def scopes_supported(self) -> tuple[str, ...]:
        """The issuer scopes a client should ask for, for the protected-resource metadata."""
        mapping = self.org_scope_map() if self.org_bank_claims else self.scope_map
        return tuple(sorted({scope for granting in mapping.values() for scope in granting}))
