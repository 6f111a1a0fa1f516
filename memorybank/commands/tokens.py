"""`memorybank token create|list|revoke`: the API tokens agents and scripts authenticate with."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from memorybank.commands.base import PROGRAM, CommandError, Shared, Subcommands, actions, with_services
from memorybank.settings import Settings, redacted
from memorybank_core import ApiToken, NotFoundError, ids
from memorybank_core.tokens import KNOWN_SCOPES, TOKEN_SCOPES

if TYPE_CHECKING:
    from memorybank import composition


def register(commands: Subcommands, shared: Shared) -> None:
    token = commands.add_parser("token", help="manage API tokens", description="Create, list and revoke API tokens.")
    token_commands = actions(token, "token_command")
    create = token_commands.add_parser(
        "create",
        parents=[shared.database],
        help="create a token; its secret is the last line of output",
        description="Create a token. stdout names the user and organization ids, then the secret, printed once as "
        "the last line and never again, after the database it was written to. Without --user a NEW user is created "
        "(said on stderr too); --user alone gives another token of the same person, in their organization.",
    )
    create.add_argument("--user", metavar="usr_…", help="the user it speaks for (default: a NEW user, with a new id)")
    create.add_argument(
        "--org",
        metavar="org_…",
        help="the user's organization (default: that of the user's latest token, else a new organization id)",
    )
    create.add_argument(
        "--scope",
        action="append",
        choices=sorted(TOKEN_SCOPES),
        help="a scope to grant; repeat for several (default: mcp:read and mcp:write). The org:read, org:write and "
        "org:admin scopes open the shared bank of the token's organization (--org) and are granted only when named",
    )
    create.set_defaults(run=run_create)
    listing = token_commands.add_parser(
        "list", parents=[shared.database], help="list tokens (never their secrets)", description="List tokens."
    )
    listing.add_argument("--user", metavar="usr_…", help="only this user's tokens")
    listing.set_defaults(run=run_list)
    revoke = token_commands.add_parser(
        "revoke",
        parents=[shared.database],
        help="revoke a token by id or secret",
        description="Revoke a token; it stops working on the next request.",
    )
    revoke.add_argument("token", metavar="TOKEN_OR_ID", help="the token's id (tok_…) or its secret")
    revoke.set_defaults(run=run_revoke)


def run_create(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    # Validate before touching the database, so a typo never needs a reachable server to be reported.
    user_id = args.user if args.user is not None else ids.new_id(ids.USER_PREFIX)
    ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user")
    if args.org is not None:
        ids.parse_id(args.org, prefix=ids.ORGANIZATION_PREFIX, field="org")
    scopes = frozenset(args.scope) if args.scope else KNOWN_SCOPES

    def create(services: composition.Services) -> None:
        org_id, notice = args.org, None
        if org_id is None and args.user is not None:
            # Another token of a known person keeps their organization, as panel-link does.
            org_id = known_org(services, user_id)
        if org_id is None:
            org_id = ids.new_id(ids.ORGANIZATION_PREFIX)
            notice = f"no --org given and {user_id} has no token yet: created a new organization id {org_id}"
        issued = services.tokens.issue(user_id=user_id, org_id=org_id, scopes=scopes)
        if args.user is None:
            # On stderr too, so it shows when stdout is captured (TOKEN=$(memorybank token create | tail -n 1)).
            notice = (
                f"created a NEW user {user_id} (organization {org_id}), with no memories yet; "
                f"another token for this same person: {PROGRAM} token create --user {user_id} --org {org_id}"
            )
        if notice is not None:
            sys.stderr.write(f"{PROGRAM}: {notice}\n")
        print(f"user: {user_id}", file=out)
        print(f"org: {org_id}", file=out)
        # A token in another database than the server's is an unexplained 401: say where it went.
        print(f"database: {redacted(settings.database.url)}", file=out)
        print(f"token: {issued.token.id}, scopes: {_scopes(issued.token)}", file=out)
        print("the secret below is shown only now; store it safely:", file=out)
        print(issued.secret, file=out)

    with_services(settings, create)


def run_list(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    if args.user is not None:
        ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")

    def show(services: composition.Services) -> None:
        tokens = services.tokens.list(user_id=args.user)
        if not tokens:
            print("no tokens", file=out)
            return
        rows = [("ID", "USER", "ORG", "SCOPES", "CREATED", "REVOKED")]
        rows += [
            (
                t.id,
                t.user_id,
                t.org_id,
                _scopes(t),
                t.created_at.isoformat(timespec="seconds"),
                t.revoked_at.isoformat(timespec="seconds") if t.revoked_at else "-",
            )
            for t in tokens
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), file=out)

    with_services(settings, show)


def run_revoke(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    def revoke(services: composition.Services) -> None:
        try:
            token = services.tokens.revoke(args.token)
        except NotFoundError as error:
            raise CommandError("no live token matches that id or secret") from error
        # The sessions already fail their next request (they check the token); this ends them for the record.
        ended = services.panel_sessions.end_made_from(token.id)
        print(f"revoked token {token.id} of {token.user_id}; ended {ended} panel sessions made from it", file=out)

    with_services(settings, revoke)


def known_org(services: composition.Services, user_id: str) -> str | None:
    """The organization of the user's latest API token, or None for a user without one."""
    tokens = services.tokens.list(user_id=user_id)
    return tokens[-1].org_id if tokens else None


def _scopes(token: ApiToken) -> str:
    return " ".join(sorted(token.scopes))
