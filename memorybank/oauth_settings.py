"""The OAuth resource server's settings, built from the resolved `OAuthOptions` (docs/auth.md).

`memorybank.settings` reads the options and their environment variables (client secrets from the
environment only, never argv); this module checks them against each other and builds
`adapters_oidc`'s settings. Pure functions of their arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from ipaddress import ip_address
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memorybank.settings import CLIENT_ID_ENV, CLIENT_SECRET_ENV, OAuthOptions
from memorybank_core import InvalidInputError
from memorybank_core.ids import ORGANIZATION_PREFIX, parse_id
from memorybank_core.tokens import TOKEN_SCOPES

# adapters_oidc (PyJWT, cryptography, an HTTP client) is imported where settings are built, not here:
# `memorybank --help` reads this module's names and must not pay for it.
if TYPE_CHECKING:
    from adapters_oidc import IntrospectionSettings, ResourceServerSettings, SignInSettings

RAIL_PATH = "/mcp/agent"
"""The rail's path; the server's OAuth resource identifier is its URL."""

_LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def public_url(options: OAuthOptions, *, host: str, port: int) -> str | None:
    """The server's public base URL: `--public-url` (or its variable), else `http://host:port` on a loopback bind."""
    if options.public_url is None:
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}" if is_loopback(host) else None
    return options.public_url


def choose_oauth(options: OAuthOptions, *, host: str, port: int) -> ResourceServerSettings | None:
    """The resource server's settings, or None when no issuer is configured (built-in tokens only).

    Raises:
        InvalidInputError: naming the option (without its dashes) for a malformed value or a missing
            `--public-url` on a non-loopback bind.
    """
    issuers = options.issuers
    if not issuers:
        return None
    for issuer in issuers:
        _check_issuer(issuer)
    base = public_url(options, host=host, port=port)
    if base is None:
        raise InvalidInputError("public-url", "is required with --oauth-issuer when serving beyond loopback")
    default_org = options.default_org
    if default_org is not None:
        parse_id(default_org, prefix=ORGANIZATION_PREFIX, field="oauth-default-org")
    user_claims, user_id_claims = person_claims(options.user_claims, options.user_id_claims, issuers)
    org_claim, org_bank_claims = organization_claims(options.org_claims, issuers)
    from adapters_oidc import ResourceServerSettings

    return ResourceServerSettings(
        issuers=issuers,
        resource=base + RAIL_PATH,
        audiences=options.audiences,
        scope_map=scope_map(options.scopes),
        user_claims=user_claims,
        user_id_claims=user_id_claims,
        org_claim=org_claim,
        org_bank_claims=org_bank_claims,
        default_org=default_org,
        introspection=_introspection(options, issuers),
    )


def choose_panel_sign_in(options: OAuthOptions, oauth: ResourceServerSettings | None) -> SignInSettings | None:
    """The panel's "Sign in with <provider>" client, or None when no panel client id is configured.

    The client secret comes from `--oauth-panel-client-secret-file` (or its variable), else from
    `$MEMORYBANK_OAUTH_PANEL_CLIENT_SECRET`; without one the client is public (PKCE alone).

    Raises:
        InvalidInputError: naming the option (without its dashes): a panel client without `--oauth-issuer`,
            an issuer that is not one of them (or none named among several), or an unreadable secret file.
    """
    client_id = options.panel_client_id
    if client_id is None:
        return None
    if oauth is None:
        raise InvalidInputError("oauth-panel-client-id", "needs --oauth-issuer: the provider people sign in with")
    issuer = options.panel_issuer
    if issuer is None:
        if len(oauth.issuers) != 1:
            raise InvalidInputError(
                "oauth-panel-issuer", "must name which --oauth-issuer the panel signs people in with"
            )
        issuer = oauth.issuers[0]
    if issuer not in oauth.issuers:
        raise InvalidInputError("oauth-panel-issuer", "must be one of the --oauth-issuer URLs")
    from adapters_oidc import SignInSettings

    return SignInSettings(
        issuer=issuer,
        client_id=client_id,
        client_secret=_panel_client_secret(options),
        display_name=options.panel_name,
        # A person is mapped from the ID token as from access tokens; with claims other than `sub`, ask for
        # `profile`, without which Entra ID leaves `oid` and `tid` out of ID tokens.
        scopes=("openid", "profile")
        if oauth.person_claim(issuer)[0] != "sub" or oauth.org_claim or oauth.org_bank_claims
        else ("openid",),
    )


def _panel_client_secret(options: OAuthOptions) -> str | None:
    if options.panel_client_secret_file is None:
        return options.panel_client_secret
    try:
        secret = Path(options.panel_client_secret_file).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInputError("oauth-panel-client-secret-file", f"cannot be read: {type(error).__name__}") from error
    if not secret:
        raise InvalidInputError("oauth-panel-client-secret-file", "is empty")
    return secret


def scope_map(pairs: Sequence[str]) -> dict[str, frozenset[str]]:
    """`mcp:read=SCOPE` pairs -> our scope -> the issuer scopes granting it. A scope named here gets exactly
    the listed issuer scopes; one not named keeps the default (itself).

    Raises:
        InvalidInputError: ("oauth-scope") a pair that is not `OURS=THEIRS` with OURS one of our scopes.
    """
    named: dict[str, set[str]] = {}
    for pair in pairs:
        ours, sep, theirs = pair.partition("=")
        if not sep or ours not in TOKEN_SCOPES or not theirs.strip() or " " in theirs.strip():
            known = ", ".join(sorted(TOKEN_SCOPES))
            raise InvalidInputError("oauth-scope", f"must be OURS=THEIRS with OURS {known}, e.g. mcp:read=memory.read")
        named.setdefault(ours, set()).add(theirs.strip())
    from adapters_oidc import DEFAULT_SCOPE_MAP

    mapping = dict(DEFAULT_SCOPE_MAP)
    mapping.update({ours: frozenset(theirs) for ours, theirs in named.items()})
    return mapping


def person_claims(
    user_claims: Sequence[str], user_id_claims: Sequence[str], issuers: Sequence[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Per issuer: the claim naming the person (ids derived), and the claim holding our user id as is.

    A bare `CLAIM` in `user_claims` applies to every issuer without an `ISSUER=CLAIM` of its own; an issuer in
    `user_id_claims` must be named, since that trusts it with every user id on this server.

    Raises:
        InvalidInputError: ("oauth-user-claim", "oauth-user-id-claim") an issuer that is not trusted, an empty
            claim, two claims for one issuer, or a bare claim where the issuer must be named.
    """
    default: str | None = None
    named: dict[str, str] = {}
    for value in user_claims:
        issuer, claim = _issuer_and_claim(value, issuers, "oauth-user-claim")
        if issuer is None:
            if default not in (None, claim):
                raise InvalidInputError(
                    "oauth-user-claim", "names two claims for every issuer: give ISSUER=CLAIM for each issuer instead"
                )
            default = claim
        else:
            _name_once(named, issuer, claim, "oauth-user-claim")
    trusted: dict[str, str] = {}
    for value in user_id_claims:
        issuer, claim = _issuer_and_claim(value, issuers, "oauth-user-id-claim")
        if issuer is None:
            raise InvalidInputError(
                "oauth-user-id-claim", "must name the issuer it trusts with every user id: ISSUER=CLAIM"
            )
        _name_once(trusted, issuer, claim, "oauth-user-id-claim")
        if issuer in named:
            raise InvalidInputError(
                "oauth-user-id-claim", f"and --oauth-user-claim both name the person at {issuer}: keep one"
            )
    if default is not None:
        named.update({issuer: default for issuer in issuers if issuer not in named and issuer not in trusted})
    return {issuer: claim for issuer, claim in named.items() if claim != "sub"}, trusted


def organization_claims(org_claims: Sequence[str], issuers: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """The claim naming the organization at every issuer (a bare `CLAIM`, no team bank), and per issuer named
    `ISSUER=CLAIM` the claim whose organization's team bank that issuer's tokens may open.

    Raises:
        InvalidInputError: ("oauth-org-claim") an issuer that is not trusted, an empty claim, two claims for one
            issuer, or two bare claims.
    """
    default: str | None = None
    banks: dict[str, str] = {}
    for value in org_claims:
        issuer, claim = _issuer_and_claim(value, issuers, "oauth-org-claim")
        if issuer is not None:
            _name_once(banks, issuer, claim, "oauth-org-claim")
        elif default not in (None, claim):
            raise InvalidInputError(
                "oauth-org-claim", "names two claims for every issuer: give ISSUER=CLAIM for each issuer instead"
            )
        else:
            default = claim
    return default, banks


def _issuer_and_claim(value: str, issuers: Sequence[str], option: str) -> tuple[str | None, str]:
    # Match a configured issuer rather than split at "=": claims may be URLs (Auth0's namespaced claims).
    value = value.strip()
    matching = [issuer for issuer in issuers if value.startswith(issuer + "=")]
    if matching:
        issuer = max(matching, key=len)
        claim = value[len(issuer) + 1 :].strip()
    elif "=" in value:
        raise InvalidInputError(option, "must be CLAIM or ISSUER=CLAIM with ISSUER one of the --oauth-issuer URLs")
    else:
        issuer, claim = None, value
    if not claim or any(character.isspace() for character in claim):
        raise InvalidInputError(option, "must name a claim, e.g. oid or ISSUER=oid")
    return issuer, claim


def _name_once(claims: dict[str, str], issuer: str, claim: str, option: str) -> None:
    if claims.get(issuer, claim) != claim:
        raise InvalidInputError(option, f"names two claims for {issuer}: keep one")
    claims[issuer] = claim


def _check_issuer(issuer: str) -> None:
    parts = urlsplit(issuer)
    secure = parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname or ""))
    if not secure or not parts.hostname or parts.query or parts.fragment:
        raise InvalidInputError(
            "oauth-issuer", "must be an https URL (http only on loopback), exactly as the issuer's tokens name it"
        )


def _introspection(options: OAuthOptions, issuers: Sequence[str]) -> IntrospectionSettings | None:
    issuer = options.introspection_issuer
    if issuer is None:
        return None
    if issuer not in issuers:
        raise InvalidInputError("oauth-introspection-issuer", "must be one of the --oauth-issuer URLs")
    client_id, client_secret = options.client_id, options.client_secret
    if not client_id or not client_secret:
        raise InvalidInputError(
            "oauth-introspection-issuer", f"needs ${CLIENT_ID_ENV} and ${CLIENT_SECRET_ENV} (the server's client there)"
        )
    from adapters_oidc import IntrospectionSettings

    return IntrospectionSettings(issuer=issuer, client_id=client_id, client_secret=client_secret)
