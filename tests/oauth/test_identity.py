"""From validated claims to a principal: the user id, the organization, our scopes."""

from __future__ import annotations

import uuid

import pytest
from typeid import TypeID

from adapters_oidc import ResourceServerSettings, granted_scopes, token_scopes, user_id_for
from adapters_oidc.identity import ORGANIZATION_NAMESPACE, derived_id, principal_from_claims
from memorybank_core import CredentialsRefusedError
from memorybank_core.ids import ORGANIZATION_PREFIX, is_id

ISSUER = "https://login.example.com"
OTHER_ISSUER = "https://other.example.com"
BUILT_IN_USER = "usr_01h455vb4pex5vsknk084sn02q"
SETTINGS = ResourceServerSettings(issuers=(ISSUER,), resource="https://bank.example.com/mcp/agent")


def test_the_documented_user_id_derivation_holds() -> None:
    # docs/auth.md spells this out; user ids are persisted, so the derivation must never change.
    name = '["https://login.example.com","248289761001"]'
    expected = uuid.uuid5(uuid.UUID("6f1d8c7e-3b2a-5e0f-9a41-0d6c2b7e8a15"), name)

    derived = user_id_for("https://login.example.com", "248289761001")

    assert derived == "usr_7hcycp79bgajkrb7nwtxmxg3wp"
    assert str(TypeID.from_string(derived).uuid) == str(expected)


def test_an_organization_claim_becomes_a_stable_org_id_per_issuer() -> None:
    settings = ResourceServerSettings(issuers=(ISSUER,), resource=SETTINGS.resource, org_claim="org")

    acme = principal_from_claims(ISSUER, {"sub": "a", "org": "acme"}, settings).organization_id
    again = principal_from_claims(ISSUER, {"sub": "b", "org": "acme"}, settings).organization_id
    elsewhere = principal_from_claims("https://other.example.com", {"sub": "a", "org": "acme"}, settings)

    assert is_id(acme, prefix=ORGANIZATION_PREFIX)
    assert acme == again
    assert elsewhere.organization_id != acme


def test_an_org_typeid_in_the_claim_is_used_as_is_and_a_missing_one_gives_the_default() -> None:
    settings = ResourceServerSettings(
        issuers=(ISSUER,), resource=SETTINGS.resource, org_claim="org", default_org="org_01h455vb4pex5vsknk084sn02q"
    )

    named = principal_from_claims(ISSUER, {"sub": "a", "org": "org_01jbz3x9qkf6gsv5w2m7c8d4ta"}, settings)
    unnamed = principal_from_claims(ISSUER, {"sub": "a"}, settings)

    assert named.organization_id == "org_01jbz3x9qkf6gsv5w2m7c8d4ta"
    assert unnamed.organization_id == "org_01h455vb4pex5vsknk084sn02q"


def test_a_configured_user_claim_names_the_person_instead_of_sub() -> None:
    settings = ResourceServerSettings(issuers=(ISSUER,), resource=SETTINGS.resource, user_claims={ISSUER: "oid"})

    person = principal_from_claims(ISSUER, {"sub": "pairwise-1", "oid": "4f1c"}, settings)

    assert person.user_id == user_id_for(ISSUER, "4f1c")
    with pytest.raises(CredentialsRefusedError, match="no oid claim"):
        principal_from_claims(ISSUER, {"sub": "pairwise-1"}, settings)


def test_a_user_claim_applies_only_at_its_issuer() -> None:
    settings = ResourceServerSettings(
        issuers=(ISSUER, OTHER_ISSUER), resource=SETTINGS.resource, user_claims={ISSUER: "oid"}
    )

    person = principal_from_claims(OTHER_ISSUER, {"sub": "pairwise-1", "oid": "4f1c"}, settings)

    assert person.user_id == user_id_for(OTHER_ISSUER, "pairwise-1")


@pytest.mark.parametrize("claim", ["sub", "oid"])
def test_a_subject_spelled_like_one_of_our_user_ids_is_still_derived_from_its_issuer(claim: str) -> None:
    # Issue 19, finding 1: a token whose `sub` was our user id used to *be* that user, at any issuer.
    settings = ResourceServerSettings(
        issuers=(ISSUER,), resource=SETTINGS.resource, user_claims={ISSUER: "oid"} if claim == "oid" else {}
    )

    person = principal_from_claims(ISSUER, {"sub": BUILT_IN_USER, "oid": BUILT_IN_USER}, settings)

    assert person.user_id == user_id_for(ISSUER, BUILT_IN_USER)
    assert person.user_id != BUILT_IN_USER


def test_only_an_issuer_trusted_with_user_ids_names_one_of_ours_as_is() -> None:
    settings = ResourceServerSettings(
        issuers=(ISSUER, OTHER_ISSUER), resource=SETTINGS.resource, user_id_claims={ISSUER: "memorybank_user"}
    )
    claims = {"sub": "pairwise-1", "memorybank_user": BUILT_IN_USER}

    trusted = principal_from_claims(ISSUER, claims, settings)
    other = principal_from_claims(OTHER_ISSUER, claims, settings)

    assert trusted.user_id == BUILT_IN_USER
    assert other.user_id == user_id_for(OTHER_ISSUER, "pairwise-1")


@pytest.mark.parametrize("value", ["alice", "org_01jbz3x9qkf6gsv5w2m7c8d4ta", 7])
def test_a_trusted_user_id_claim_that_is_not_one_of_our_user_ids_is_refused(value: object) -> None:
    settings = ResourceServerSettings(
        issuers=(ISSUER,), resource=SETTINGS.resource, user_id_claims={ISSUER: "memorybank_user"}
    )

    with pytest.raises(CredentialsRefusedError, match="memorybank_user"):
        principal_from_claims(ISSUER, {"sub": "pairwise-1", "memorybank_user": value}, settings)


@pytest.mark.parametrize(
    "claims",
    [
        {"user_claims": {OTHER_ISSUER: "oid"}},
        {"user_id_claims": {OTHER_ISSUER: "oid"}},
        {"user_claims": {ISSUER: "oid"}, "user_id_claims": {ISSUER: "uid"}},
    ],
)
def test_settings_naming_an_untrusted_issuer_or_one_issuer_twice_are_refused(claims: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"issuer|both"):
        ResourceServerSettings(issuers=(ISSUER,), resource=SETTINGS.resource, **claims)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"scope": "openid mcp:read"}, {"openid", "mcp:read"}),
        ({"scp": "mcp:read mcp:write"}, {"mcp:read", "mcp:write"}),
        ({"scp": ["mcp:write", 7]}, {"mcp:write"}),
        ({}, set()),
    ],
)
def test_scopes_are_read_from_scope_or_scp(claims: dict[str, object], expected: set[str]) -> None:
    assert token_scopes(claims) == expected


def test_only_mapped_issuer_scopes_grant_ours() -> None:
    scope_map = {"mcp:read": frozenset({"memory.read"}), "mcp:write": frozenset({"memory.write"})}

    assert granted_scopes({"memory.read", "mcp:write"}, scope_map) == {"mcp:read"}


TEAM_SETTINGS = ResourceServerSettings(
    issuers=(ISSUER, OTHER_ISSUER), resource=SETTINGS.resource, org_claim="tid", org_bank_claims={ISSUER: "org"}
)
ALL_SCOPES = "mcp:read mcp:write org:read org:write org:admin"


def test_an_issuer_named_for_team_banks_grants_org_scopes_beside_its_organization_claim() -> None:
    member = principal_from_claims(ISSUER, {"sub": "ann", "org": "acme", "scope": ALL_SCOPES}, TEAM_SETTINGS)

    assert member.scopes == {"mcp:read", "mcp:write", "org:read", "org:write", "org:admin"}
    assert member.organization_id == derived_id(ORGANIZATION_PREFIX, ORGANIZATION_NAMESPACE, ISSUER, "acme")


@pytest.mark.parametrize("org", [None, "", 7, ["acme"], {"id": "acme"}])
def test_a_token_without_the_organization_claim_has_no_org_scope_and_no_organization_from_another_claim(
    org: object,
) -> None:
    claims: dict[str, object] = {"sub": "ann", "tid": "acme", "scope": ALL_SCOPES}
    if org is not None:
        claims["org"] = org

    person = principal_from_claims(ISSUER, claims, TEAM_SETTINGS)

    assert person.scopes == {"mcp:read", "mcp:write"}
    # The bare claim (tid) does not name the organization at an issuer with a team claim of its own.
    assert person.organization_id == derived_id(ORGANIZATION_PREFIX, ORGANIZATION_NAMESPACE, ISSUER)


def test_an_issuer_not_named_for_team_banks_never_grants_an_org_scope() -> None:
    elsewhere = principal_from_claims(
        OTHER_ISSUER, {"sub": "ann", "org": "acme", "tid": "acme", "scope": ALL_SCOPES}, TEAM_SETTINGS
    )
    everywhere = principal_from_claims(ISSUER, {"sub": "ann", "org": "acme", "scope": ALL_SCOPES}, SETTINGS)

    assert elsewhere.scopes == {"mcp:read", "mcp:write"}
    assert everywhere.scopes == {"mcp:read", "mcp:write"}


def test_a_team_claim_spelled_as_an_org_id_is_still_derived_from_its_issuer() -> None:
    built_in_org = "org_01h455vb4pex5vsknk084sn02q"

    member = principal_from_claims(ISSUER, {"sub": "ann", "org": built_in_org, "scope": ALL_SCOPES}, TEAM_SETTINGS)

    assert member.organization_id != built_in_org
    assert member.organization_id == derived_id(ORGANIZATION_PREFIX, ORGANIZATION_NAMESPACE, ISSUER, built_in_org)


def test_mapped_org_scopes_are_granted_only_by_the_mapped_issuer_scopes() -> None:
    settings = ResourceServerSettings(
        issuers=(ISSUER,),
        resource=SETTINGS.resource,
        org_bank_claims={ISSUER: "org"},
        scope_map={"mcp:read": frozenset({"mcp:read"}), "org:read": frozenset({"team.read"})},
    )

    mapped = principal_from_claims(ISSUER, {"sub": "a", "org": "acme", "scope": "mcp:read team.read"}, settings)
    unmapped = principal_from_claims(ISSUER, {"sub": "a", "org": "acme", "scope": "mcp:read org:read"}, settings)

    assert mapped.scopes == {"mcp:read", "org:read"}
    assert unmapped.scopes == {"mcp:read"}
    assert settings.scopes_supported == ("mcp:read", "org:admin", "org:write", "team.read")
    assert SETTINGS.scopes_supported == ("mcp:read", "mcp:write")


def test_a_team_claim_at_an_untrusted_issuer_is_refused() -> None:
    with pytest.raises(ValueError, match="org_bank_claims names issuers that are not trusted"):
        ResourceServerSettings(issuers=(ISSUER,), resource=SETTINGS.resource, org_bank_claims={OTHER_ISSUER: "org"})
