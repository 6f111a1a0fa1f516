"""Who a validated token speaks for: a stable `usr_` id from (issuer, subject), an organization, our scopes.

The user id is a name-based UUID (RFC 9562 version 5) of the JSON array `[issuer, subject]` in our own
namespace, written as a `usr_` TypeID. The same person at the same issuer always gets the same id, on every
server, with no table to keep; the same `sub` at two issuers gives two ids, because a `sub` is only unique
within its issuer (OpenID Connect Core 1.0, section 2). A value that looks like one of our ids is derived like
any other: an issuer can only ever reach the people it signed in. The one exception is an issuer the operator
named in `user_id_claims`, whose claim is our `usr_` id as is (see docs/auth.md and ADR 0020).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping

import attrs
import uuid_utils
from typeid import TypeID

from adapters_oidc.settings import ResourceServerSettings
from memorybank_core import ORG_SCOPES, CredentialsRefusedError
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, is_id

USER_NAMESPACE = uuid.UUID("6f1d8c7e-3b2a-5e0f-9a41-0d6c2b7e8a15")
"""The UUIDv5 namespace of user ids derived from issuer identities. Persisted in data: never change it."""
ORGANIZATION_NAMESPACE = uuid.UUID("b3a0e2d4-71c9-5f86-8e1a-5c4f90d2b637")
"""The UUIDv5 namespace of organization ids derived from issuers and organization claims. Never change it."""


@attrs.frozen(kw_only=True)
class OAuthPrincipal:
    """The principal an issuer's access token speaks for."""

    user_id: str
    organization_id: str
    scopes: frozenset[str]
    issuer: str
    subject: str


def derived_id(prefix: str, namespace: uuid.UUID, *parts: str) -> str:
    """A TypeID with `prefix` whose UUID is the version-5 UUID of the JSON array of `parts` in `namespace`."""
    name = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))
    # typeid takes uuid_utils' UUID class (its own dependency); the value is the standard library's UUIDv5.
    return str(TypeID.from_uuid(suffix=uuid_utils.UUID(int=uuid.uuid5(namespace, name).int), prefix=prefix))


def user_id_for(issuer: str, subject: str) -> str:
    """The `usr_` id of `subject` at `issuer`."""
    return derived_id(USER_PREFIX, USER_NAMESPACE, issuer, subject)


def principal_from_claims(
    issuer: str, claims: Mapping[str, object], settings: ResourceServerSettings
) -> OAuthPrincipal:
    """Map validated claims to a principal.

    Raises:
        CredentialsRefusedError: the claim that names the person is missing or not a string, or (at an issuer
            trusted with our user ids) not a `usr_` id.
    """
    subject_claim, holds_user_id = settings.person_claim(issuer)
    subject = claims.get(subject_claim)
    if not isinstance(subject, str) or not subject:
        raise CredentialsRefusedError(f"the token has no {subject_claim} claim naming the person")
    if holds_user_id and not is_id(subject, prefix=USER_PREFIX):
        raise CredentialsRefusedError(f"the token's {subject_claim} claim is not a usr_ id")
    user_id = subject if holds_user_id else user_id_for(issuer, subject)
    team = _team(issuer, claims, settings)
    scopes = granted_scopes(token_scopes(claims), settings.scope_map if team is None else settings.org_scope_map())
    return OAuthPrincipal(
        user_id=user_id,
        organization_id=_organization(issuer, claims, settings) if team is None else team,
        # No team bank without the issuer's organization claim: org scopes count only beside it.
        scopes=scopes - ORG_SCOPES if team is None else scopes,
        issuer=issuer,
        subject=subject,
    )


def _team(issuer: str, claims: Mapping[str, object], settings: ResourceServerSettings) -> str | None:
    """The organization whose team bank the token may open, or None: the issuer opens none, or the token
    carries no organization claim. Always derived, even from a value spelled as an `org_` id, so an issuer
    never reaches a built-in token's organization or another issuer's."""
    claim = settings.org_bank_claims.get(issuer)
    value = claims.get(claim) if claim else None
    if isinstance(value, str) and value:
        return derived_id(ORGANIZATION_PREFIX, ORGANIZATION_NAMESPACE, issuer, value)
    return None


def _organization(issuer: str, claims: Mapping[str, object], settings: ResourceServerSettings) -> str:
    if issuer in settings.org_bank_claims:
        # Its claim is missing: the organization is the fallback's, never a value taken from another claim.
        return _fallback_organization(issuer, settings)
    value = claims.get(settings.org_claim) if settings.org_claim else None
    if isinstance(value, str) and value:
        if is_id(value, prefix=ORGANIZATION_PREFIX):
            return value
        return derived_id(ORGANIZATION_PREFIX, ORGANIZATION_NAMESPACE, issuer, value)
    return _fallback_organization(issuer, settings)


def _fallback_organization(issuer: str, settings: ResourceServerSettings) -> str:
    if settings.default_org is not None:
        return settings.default_org
    return derived_id(ORGANIZATION_PREFIX, ORGANIZATION_NAMESPACE, issuer)


def token_scopes(claims: Mapping[str, object]) -> frozenset[str]:
    """The scopes a token carries: `scope` (RFC 9068, RFC 7662) or `scp` (Entra ID, Okta), a string or a list."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str))
    return frozenset(found)


def granted_scopes(scopes: Collection[str], scope_map: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """Our scopes that `scopes` grant under `scope_map`."""
    held = set(scopes)
    return frozenset(ours for ours, granting in scope_map.items() if held & granting)
