"""`serve`'s OAuth options: trusting an identity provider's access tokens, and the panel's sign-in with it."""

from __future__ import annotations

import argparse

from memorybank import settings as names


def add_oauth_options(serve: argparse.ArgumentParser) -> None:
    oauth = serve.add_argument_group(
        "OAuth (an identity provider's access tokens beside the built-in tokens; docs/auth.md)"
    )
    oauth.add_argument(
        "--public-url",
        metavar="URL",
        help=f"the server's public base URL (https://bank.example.com); the OAuth resource is URL/mcp/agent; "
        f"default: ${names.PUBLIC_URL_ENV}, else http://HOST:PORT on a loopback bind",
    )
    oauth.add_argument(
        "--oauth-issuer",
        metavar="URL",
        action="append",
        default=[],
        help=f"trust access tokens from this issuer; repeat for several (default: ${names.ISSUERS_ENV})",
    )
    oauth.add_argument(
        "--oauth-audience",
        metavar="AUD",
        action="append",
        default=[],
        help=f"an accepted token audience; repeat for several (default: ${names.AUDIENCES_ENV}, else the resource URL)",
    )
    oauth.add_argument(
        "--oauth-scope",
        metavar="OURS=THEIRS",
        action="append",
        default=[],
        help=f"the issuer scope granting mcp:read or mcp:write, e.g. mcp:read=memory.read; repeatable "
        f"(default: ${names.SCOPES_ENV}, else the same names)",
    )
    oauth.add_argument(
        "--oauth-user-claim",
        metavar="[ISSUER=]CLAIM",
        action="append",
        default=[],
        help=f"the claim naming the person instead of sub (e.g. oid), at every issuer or at ISSUER; user ids stay "
        f"derived from the issuer and the claim; repeatable (default: ${names.USER_CLAIM_ENV})",
    )
    oauth.add_argument(
        "--oauth-user-id-claim",
        metavar="ISSUER=CLAIM",
        action="append",
        default=[],
        help=f"ISSUER's CLAIM holds this server's usr_ id, used as is: trusts ISSUER with EVERY user id here; "
        f"repeatable (default: ${names.USER_ID_CLAIM_ENV})",
    )
    oauth.add_argument("--oauth-org-claim", metavar="CLAIM", help="the claim naming the person's organization")
    oauth.add_argument("--oauth-default-org", metavar="org_…", help="the organization of people whose token names none")
    oauth.add_argument(
        "--oauth-introspection-issuer",
        metavar="URL",
        help=f"check opaque tokens with this issuer's introspection endpoint, as the client "
        f"${names.CLIENT_ID_ENV} / ${names.CLIENT_SECRET_ENV}",
    )
    panel = serve.add_argument_group(
        "Panel sign-in with the identity provider (OpenID Connect, authorization code + PKCE; docs/auth.md)"
    )
    panel.add_argument(
        "--oauth-panel-client-id",
        metavar="ID",
        help=f"the panel's client at the provider; offers 'Sign in with <provider>' "
        f"(default: ${names.PANEL_CLIENT_ID_ENV}); its redirect URI is PUBLIC_URL/panel/oidc/callback",
    )
    panel.add_argument(
        "--oauth-panel-issuer",
        metavar="URL",
        help=f"which --oauth-issuer the panel signs people in with (default: ${names.PANEL_ISSUER_ENV}, "
        "else the only one)",
    )
    panel.add_argument(
        "--oauth-panel-name",
        metavar="NAME",
        help=f"the provider's name on the button (default: ${names.PANEL_NAME_ENV}, else the issuer's host)",
    )
    panel.add_argument(
        "--oauth-panel-client-secret-file",
        metavar="PATH",
        help=f"a file holding the panel client's secret (default: ${names.PANEL_CLIENT_SECRET_FILE_ENV}, "
        f"else ${names.PANEL_CLIENT_SECRET_ENV}, else a public client); never the secret itself",
    )
