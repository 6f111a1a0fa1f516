"""docs/auth.md cannot drift: its commands configure what it says, and its metadata example is what is served."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from starlette.testclient import TestClient

from adapters_oidc import IssuerTokenVerifier, ResourceServerSettings
from harness.served import REPO_ROOT
from memorybank import bootstrap
from memorybank.cli import build_parser
from memorybank.oauth_settings import choose_oauth, choose_panel_sign_in
from memorybank.settings import PANEL_CLIENT_SECRET_FILE_ENV, Settings
from memorybank_core import (
    InMemoryStore,
)

AUTH_DOC = (REPO_ROOT / "docs" / "auth.md").read_text()
README = (REPO_ROOT / "README.md").read_text()


def serve_commands(text: str = AUTH_DOC) -> list[tuple[list[str], dict[str, str]]]:
    """Every `memorybank serve` command in the bash blocks of `text`, with the variables its block exports."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        env: dict[str, str] = {}
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line)
            if words[:1] == ["export"]:
                name, _, value = words[1].partition("=")
                env[name] = value
            elif words[:2] == ["memorybank", "serve"]:
                found.append((words[1 : words.index("#")] if "#" in words else words[1:], dict(env)))
    return found


def resolved(argv: list[str], env: dict[str, str]) -> Settings:
    return Settings.resolve(build_parser(env).parse_args(argv), env)


def settings_of(argv: list[str], env: dict[str, str]) -> ResourceServerSettings:
    served = resolved(argv, env)
    settings = choose_oauth(served.oauth, host=served.http.host, port=served.http.port)
    assert settings is not None
    return settings


def test_every_documented_serve_command_configures_an_issuer() -> None:
    commands = serve_commands()

    issuers = [settings_of(argv, env).issuers for argv, env in commands]

    assert len(commands) == 8
    assert issuers == [
        ("https://login.example.com",),
        ("https://login.example.com", "https://partner.example.org"),  # the one opt-out
        ("https://login.example.com", "https://partner.example.org"),  # the team bank's issuer
        ("https://keycloak.example.com/realms/acme",),
        ("https://acme.eu.auth0.com/",),
        ("https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",),
        ("https://login.example.com",),  # the panel's sign-in
        ("https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",),
    ]


def test_the_documented_panel_sign_ins_configure_what_the_doc_says(tmp_path: Path) -> None:
    secret_file = tmp_path / "panel-client-secret"
    secret_file.write_text("s3cret\n")
    configured = []
    for argv, env in serve_commands()[6:]:
        assert env.pop(PANEL_CLIENT_SECRET_FILE_ENV) == "/etc/memorybank/panel-client-secret"
        env[PANEL_CLIENT_SECRET_FILE_ENV] = str(secret_file)
        panel = choose_panel_sign_in(resolved(argv, env).oauth, settings_of(argv, env))
        assert panel is not None
        configured.append((panel.client_id, panel.client_secret, panel.display_name, panel.scopes))

    assert configured == [
        ("memorybank-panel", "s3cret", "Example SSO", ("openid",)),
        ("6e74172b-be56-4843-9ff4-e66a39bb12e3", "s3cret", "Microsoft", ("openid", "profile")),
    ]


def test_the_readmes_oauth_example_is_the_docs_first_one() -> None:
    oauth_examples = [command for command in serve_commands(README) if any("oauth" in word for word in command[0])]

    assert oauth_examples == [serve_commands()[0]]


def test_the_entra_id_example_maps_what_the_doc_says() -> None:
    argv, env = serve_commands()[5]

    settings = settings_of(argv, env)

    assert settings.accepted_audiences == ("6e74172b-be56-4843-9ff4-e66a39bb12e3",)
    assert settings.scopes_supported == ("memory.read", "memory.write")
    assert settings.person_claim(settings.issuers[0]) == ("oid", False)
    assert settings.org_claim == "tid"


def test_the_documented_opt_out_trusts_only_the_issuer_it_names() -> None:
    argv, env = serve_commands()[1]

    settings = settings_of(argv, env)

    assert settings.person_claim("https://login.example.com") == ("memorybank_user", True)
    assert settings.person_claim("https://partner.example.org") == ("sub", False)


def test_the_documented_team_bank_issuer_is_the_only_one_opening_team_banks() -> None:
    argv, env = serve_commands()[2]

    settings = settings_of(argv, env)

    assert settings.org_bank_claims == {"https://login.example.com": "org"}
    assert settings.org_claim is None
    assert settings.scope_map["org:read"] == frozenset({"team.read"})
    assert "team.read" in settings.scopes_supported


def test_the_documented_metadata_is_what_the_first_example_serves() -> None:
    documented = json.loads(re.findall(r"```json\n(.*?)```", AUTH_DOC, re.DOTALL)[0])
    argv, env = serve_commands()[0]
    verifier = IssuerTokenVerifier(settings_of(argv, env))
    with bootstrap.build(store=InMemoryStore(), issuers=verifier) as runtime, TestClient(runtime.web_app()) as client:
        served = client.get("/.well-known/oauth-protected-resource/mcp/agent").json()
    verifier.close()

    assert served == documented
