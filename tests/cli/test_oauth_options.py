"""`serve`'s OAuth options: what they configure, and one-line refusals of malformed values."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from adapters_mcp import RAIL_PATH
from adapters_oidc import ResourceServerSettings, SignInSettings
from memorybank import oauth_settings
from memorybank import settings as settings_module
from memorybank.oauth_settings import choose_oauth, choose_panel_sign_in
from memorybank.settings import Settings
from memorybank_core import InvalidInputError
from tests.cli.conftest import Run

TWO_ISSUERS = ("--oauth-issuer", "https://a.example.com", "--oauth-issuer", "https://b.example.com")


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--oauth-issuer", "http://login.example.com"], "--oauth-issuer must be an https URL (http only on loopback)"),
        (["--oauth-issuer", "not a url"], "--oauth-issuer must be an https URL"),
        (["--oauth-issuer", "https://login.example.com", "--host", "0.0.0.0"], "--public-url is required"),  # noqa: S104
        (["--oauth-issuer", "https://login.example.com", "--public-url", "ftp://x"], "--public-url must be an http(s)"),
        (
            ["--oauth-issuer", "https://login.example.com", "--oauth-scope", "admin=x"],
            "--oauth-scope must be OURS=THEIRS",
        ),
        (["--oauth-issuer", "https://login.example.com", "--oauth-default-org", "acme"], "--oauth-default-org must be"),
        (
            [
                "--oauth-issuer",
                "https://login.example.com",
                "--oauth-introspection-issuer",
                "https://other.example.com",
            ],
            "--oauth-introspection-issuer must be one of the --oauth-issuer URLs",
        ),
        (
            [
                "--oauth-issuer",
                "https://login.example.com",
                "--oauth-introspection-issuer",
                "https://login.example.com",
            ],
            "--oauth-introspection-issuer needs $MEMORYBANK_OAUTH_CLIENT_ID",
        ),
        (["--oauth-panel-client-id", "memorybank-panel"], "--oauth-panel-client-id needs --oauth-issuer"),
        (
            [
                *("--oauth-issuer", "https://a.example.com", "--oauth-issuer", "https://b.example.com"),
                *("--oauth-panel-client-id", "memorybank-panel"),
            ],
            "--oauth-panel-issuer must name which --oauth-issuer",
        ),
        (
            [
                *("--oauth-issuer", "https://a.example.com", "--oauth-panel-client-id", "memorybank-panel"),
                *("--oauth-panel-issuer", "https://b.example.com"),
            ],
            "--oauth-panel-issuer must be one of the --oauth-issuer URLs",
        ),
        (
            [
                *("--oauth-issuer", "https://a.example.com", "--oauth-panel-client-id", "memorybank-panel"),
                *("--oauth-panel-client-secret-file", "/nonexistent/secret"),
            ],
            "--oauth-panel-client-secret-file cannot be read",
        ),
        (
            [*TWO_ISSUERS, "--oauth-user-id-claim", "memorybank_user"],
            "--oauth-user-id-claim must name the issuer it trusts with every user id: ISSUER=CLAIM",
        ),
        (
            [*TWO_ISSUERS, "--oauth-user-id-claim", "https://c.example.com=memorybank_user"],
            "--oauth-user-id-claim must be CLAIM or ISSUER=CLAIM with ISSUER one of the --oauth-issuer URLs",
        ),
        (
            [*TWO_ISSUERS, "--oauth-user-claim", "https://c.example.com=oid"],
            "--oauth-user-claim must be CLAIM or ISSUER=CLAIM with ISSUER one of the --oauth-issuer URLs",
        ),
        (
            [*TWO_ISSUERS, "--oauth-user-claim", "oid", "--oauth-user-claim", "uid"],
            "--oauth-user-claim names two claims for every issuer",
        ),
        (
            [
                *TWO_ISSUERS,
                "--oauth-user-claim",
                "https://a.example.com=oid",
                "--oauth-user-claim",
                "https://a.example.com=uid",
            ],
            "--oauth-user-claim names two claims for https://a.example.com",
        ),
        (
            [
                *TWO_ISSUERS,
                *("--oauth-user-claim", "https://a.example.com=oid"),
                *("--oauth-user-id-claim", "https://a.example.com=memorybank_user"),
            ],
            "--oauth-user-id-claim and --oauth-user-claim both name the person at https://a.example.com",
        ),
        ([*TWO_ISSUERS, "--oauth-user-claim", "https://a.example.com="], "--oauth-user-claim must name a claim"),
        (
            [*TWO_ISSUERS, "--oauth-org-claim", "https://c.example.com=org"],
            "--oauth-org-claim must be CLAIM or ISSUER=CLAIM with ISSUER one of the --oauth-issuer URLs",
        ),
        (
            [
                *TWO_ISSUERS,
                *("--oauth-org-claim", "https://a.example.com=org", "--oauth-org-claim", "https://a.example.com=tid"),
            ],
            "--oauth-org-claim names two claims for https://a.example.com",
        ),
        (
            [*TWO_ISSUERS, "--oauth-org-claim", "tid", "--oauth-org-claim", "org"],
            "--oauth-org-claim names two claims for every issuer",
        ),
        ([*TWO_ISSUERS, "--oauth-org-claim", "https://a.example.com="], "--oauth-org-claim must name a claim"),
        (
            ["--oauth-issuer", "https://a.example.com", "--oauth-scope", "org:owner=x"],
            "--oauth-scope must be OURS=THEIRS",
        ),
    ],
)
def test_a_malformed_oauth_option_is_one_line_and_exit_2(run: Run, argv: list[str], reason: str) -> None:
    outcome = run("serve", *argv)

    assert outcome.status == 2
    assert reason in outcome.err
    assert outcome.err.count("\n") == 1


def test_without_an_issuer_only_built_in_tokens_are_served() -> None:
    assert oauth_of({}, {}, host="127.0.0.1", port=8000) is None


def test_the_resource_is_the_rails_url_on_the_public_base() -> None:
    settings = oauth_of(
        {"oauth_issuer": ["https://login.example.com"], "public_url": "https://bank.example.com/"},
        {},
        host="0.0.0.0",  # noqa: S104 - a bind address under test, not a server
        port=8000,
    )

    assert settings is not None
    assert settings.resource == "https://bank.example.com" + RAIL_PATH == "https://bank.example.com/mcp/agent"
    assert settings.accepted_audiences == ("https://bank.example.com/mcp/agent",)


def test_a_loopback_bind_is_its_own_public_url() -> None:
    settings = oauth_of({"oauth_issuer": ["http://127.0.0.1:9000"]}, {}, host="127.0.0.1", port=8123)

    assert settings is not None
    assert settings.resource == "http://127.0.0.1:8123/mcp/agent"


def test_everything_can_come_from_the_environment() -> None:
    env = {
        settings_module.ISSUERS_ENV: "https://a.example.com, https://b.example.com",
        settings_module.PUBLIC_URL_ENV: "https://bank.example.com",
        settings_module.AUDIENCES_ENV: "api://6e74172b-be56-4843-9ff4-e66a39bb12e3",
        settings_module.SCOPES_ENV: "mcp:read=memory.read mcp:write=memory.write",
        settings_module.USER_CLAIM_ENV: "oid",
        settings_module.ORG_CLAIM_ENV: "tid",
        settings_module.INTROSPECTION_ISSUER_ENV: "https://b.example.com",
        settings_module.CLIENT_ID_ENV: "memorybank",
        settings_module.CLIENT_SECRET_ENV: "s3cret",
    }

    settings = oauth_of({}, env, host="0.0.0.0", port=8000)  # noqa: S104

    assert settings is not None
    assert settings.issuers == ("https://a.example.com", "https://b.example.com")
    assert settings.accepted_audiences == ("api://6e74172b-be56-4843-9ff4-e66a39bb12e3",)
    assert settings.scope_map == {"mcp:read": frozenset({"memory.read"}), "mcp:write": frozenset({"memory.write"})}
    assert settings.scopes_supported == ("memory.read", "memory.write")
    assert settings.user_claims == {"https://a.example.com": "oid", "https://b.example.com": "oid"}
    assert settings.org_claim == "tid"
    assert settings.introspection is not None
    assert settings.introspection.client_id == "memorybank"
    assert "s3cret" not in repr(settings)


def test_a_bare_user_claim_names_the_person_at_every_issuer_and_ids_stay_derived() -> None:
    options = {"oauth_issuer": ["https://a.example.com", "https://b.example.com"], "oauth_user_claim": ["oid"]}

    settings = oauth_of(options, {}, host="127.0.0.1", port=8000)

    assert settings is not None
    assert settings.user_claims == {"https://a.example.com": "oid", "https://b.example.com": "oid"}
    assert settings.user_id_claims == {}


def test_user_claims_per_issuer_override_the_bare_one_and_may_be_urls() -> None:
    namespaced = "https://bank.example.com/claims/person"
    options = {
        "oauth_issuer": ["https://a.example.com", "https://b.example.com/", "https://c.example.com"],
        "oauth_user_claim": ["oid", f"https://b.example.com/={namespaced}", "https://c.example.com=sub"],
    }

    settings = oauth_of(options, {}, host="127.0.0.1", port=8000)

    assert settings is not None
    assert settings.user_claims == {"https://a.example.com": "oid", "https://b.example.com/": namespaced}
    assert settings.person_claim("https://c.example.com") == ("sub", False)


def test_only_the_named_issuer_is_trusted_with_user_ids() -> None:
    env = {
        settings_module.ISSUERS_ENV: "https://a.example.com https://b.example.com",
        settings_module.USER_CLAIM_ENV: "oid",
        settings_module.USER_ID_CLAIM_ENV: "https://b.example.com=memorybank_user",
    }

    settings = oauth_of({}, env, host="127.0.0.1", port=8000)

    assert settings is not None
    assert settings.person_claim("https://a.example.com") == ("oid", False)
    assert settings.person_claim("https://b.example.com") == ("memorybank_user", True)


def test_options_win_over_the_environment() -> None:
    env = {settings_module.ISSUERS_ENV: "https://env.example.com"}

    settings = oauth_of({"oauth_issuer": ["https://flag.example.com"]}, env, host="127.0.0.1", port=1)

    assert settings is not None
    assert settings.issuers == ("https://flag.example.com",)


def test_a_scope_map_names_only_our_scopes() -> None:
    with pytest.raises(InvalidInputError):
        oauth_settings.scope_map(["mcp:admin=everything"])
    assert oauth_settings.scope_map(["mcp:read=a", "mcp:read=b"])["mcp:read"] == frozenset({"a", "b"})
    assert oauth_settings.scope_map(["mcp:read=a"])["mcp:write"] == frozenset({"mcp:write"})


def oauth_of(
    flags: Mapping[str, object], env: dict[str, str], *, host: str, port: int
) -> ResourceServerSettings | None:
    """The resource server's settings for `serve`'s OAuth options `flags` (argparse's destinations) and `env`."""
    return choose_oauth(Settings.resolve(flags, env).oauth, host=host, port=port)


def panel_settings(flags: Mapping[str, object], env: dict[str, str]) -> SignInSettings | None:
    options = Settings.resolve(flags, env).oauth
    return choose_panel_sign_in(options, choose_oauth(options, host="127.0.0.1", port=8000))


def test_without_a_panel_client_id_the_panel_offers_no_provider() -> None:
    assert panel_settings({"oauth_issuer": ["https://a.example.com"]}, {}) is None


def test_the_panel_signs_in_with_the_only_issuer_as_a_public_client_by_default() -> None:
    settings = panel_settings({"oauth_issuer": ["https://a.example.com"], "oauth_panel_client_id": "bank-panel"}, {})

    assert settings is not None
    assert (settings.issuer, settings.client_id, settings.client_secret) == (
        "https://a.example.com",
        "bank-panel",
        None,
    )
    assert settings.display_name is None  # the button then names the issuer's host
    assert settings.scopes == ("openid",)


def test_a_panel_mapping_people_by_claims_asks_for_the_profile_scope_that_carries_them() -> None:
    options = {
        "oauth_issuer": ["https://a.example.com"],
        "oauth_panel_client_id": "p",
        "oauth_user_claim": ["oid"],
        "oauth_org_claim": ["tid"],
    }

    settings = panel_settings(options, {})

    assert settings is not None
    assert settings.scopes == ("openid", "profile")


def test_the_panel_client_can_come_from_the_environment_and_its_secret_file_wins(tmp_path: Path) -> None:
    secret_file = tmp_path / "secret"
    secret_file.write_text("from-the-file\n")
    env = {
        settings_module.ISSUERS_ENV: "https://a.example.com https://b.example.com",
        settings_module.PANEL_CLIENT_ID_ENV: "bank-panel",
        settings_module.PANEL_ISSUER_ENV: "https://b.example.com",
        settings_module.PANEL_NAME_ENV: "Acme SSO",
        settings_module.PANEL_CLIENT_SECRET_ENV: "from-the-environment",
    }

    from_env = panel_settings({}, env)
    from_file = panel_settings({"oauth_panel_client_secret_file": str(secret_file)}, env)

    assert from_env is not None
    assert from_file is not None
    assert (from_env.issuer, from_env.display_name) == ("https://b.example.com", "Acme SSO")
    assert from_env.client_secret == "from-the-environment"
    assert from_file.client_secret == "from-the-file"
    assert "from-the" not in repr(from_file)


def test_an_empty_secret_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "secret"
    empty.write_text("\n")
    options = {
        "oauth_issuer": ["https://a.example.com"],
        "oauth_panel_client_id": "p",
        "oauth_panel_client_secret_file": str(empty),
    }

    with pytest.raises(InvalidInputError, match="is empty"):
        panel_settings(options, {})


def test_an_org_claim_naming_its_issuer_opens_team_banks_there_and_a_bare_one_names_organizations_only() -> None:
    options = {
        "oauth_issuer": ["https://a.example.com", "https://b.example.com"],
        "oauth_org_claim": ["tid", "https://b.example.com=org"],
        "oauth_scope": ["org:read=team.read"],
    }

    settings = oauth_of(options, {}, host="127.0.0.1", port=8000)

    assert settings is not None
    assert settings.org_claim == "tid"
    assert settings.org_bank_claims == {"https://b.example.com": "org"}
    assert settings.scope_map["org:read"] == frozenset({"team.read"})
    assert "team.read" in settings.scopes_supported


def test_without_an_issuer_named_in_an_org_claim_no_issuer_opens_a_team_bank() -> None:
    options = {"oauth_issuer": ["https://a.example.com"], "oauth_org_claim": ["tid"]}

    settings = oauth_of(options, {}, host="127.0.0.1", port=8000)

    assert settings is not None
    assert settings.org_bank_claims == {}
    assert settings.scopes_supported == ("mcp:read", "mcp:write")
