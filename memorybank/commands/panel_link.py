"""`memorybank panel-link`: a one-time sign-in link to the management panel, or `--revoke` the user's sessions."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, TextIO

from memorybank.commands.base import EXIT_BAD_INPUT, PROGRAM, CommandError, Shared, Subcommands, with_services
from memorybank.commands.serve import DEFAULT_SERVER
from memorybank.commands.tokens import known_org
from memorybank.settings import PUBLIC_URL_ENV, Settings, add_arguments
from memorybank_core import ids
from memorybank_core.panel_sessions import check_link_ttl

if TYPE_CHECKING:
    from memorybank import composition


def register(commands: Subcommands, shared: Shared) -> None:
    panel_link = commands.add_parser(
        "panel-link",
        parents=[shared.database],
        help="print a one-time sign-in link to the management panel",
        description="Print a one-time URL that signs a person in to the management panel served by "
        "`memorybank serve` at /. The link works once, for --ttl; --revoke ends every session and unused "
        "link of the user instead.",
    )
    panel_link.add_argument("--user", metavar="usr_…", required=True, help="whose panel")
    panel_link.add_argument(
        "--org", metavar="org_…", help="the user's organization (default: that of the user's latest API token)"
    )
    panel_link.add_argument(
        "--ttl", default="10m", help="how long the link works: 30s, 10m, 2h, 1d (default: 10m; at most 1d)"
    )
    add_arguments(panel_link, "panel-link")  # --public-url (or --url), as `serve` takes it
    panel_link.add_argument(
        "--revoke", action="store_true", help="end the user's panel sessions and unused links instead"
    )
    panel_link.set_defaults(run=run_panel_link)


_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_ttl(text: str) -> timedelta:
    """`30s`, `10m`, `2h` or `1d` as a duration.

    Raises:
        CommandError: anything else (exit status 2).
    """
    value, unit = text.strip()[:-1], text.strip()[-1:]
    if not value.isdecimal() or unit not in _TTL_UNITS or len(value) > 6:
        raise CommandError("--ttl must be a duration such as 30s, 10m, 2h or 1d", EXIT_BAD_INPUT)
    return timedelta(seconds=int(value) * _TTL_UNITS[unit])


def run_panel_link(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    # Validate before touching the database.
    ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")
    if args.org is not None:
        ids.parse_id(args.org, prefix=ids.ORGANIZATION_PREFIX, field="org")
    ttl = parse_ttl(args.ttl)
    check_link_ttl(ttl)
    # The server's address as `serve` itself names it: --public-url, else $MEMORYBANK_PUBLIC_URL, else its default.
    server = settings.oauth.public_url
    address = server or DEFAULT_SERVER

    def link(services: composition.Services) -> None:
        if args.revoke:
            ended = services.panel_sessions.revoke_user(args.user)
            print(f"ended {ended} panel sessions and unused sign-in links of {args.user}", file=out)
            return
        _require_known_user(services, args.user)
        org_id = args.org or _latest_org(services, args.user)
        issued = services.panel_sessions.issue_link(user_id=args.user, org_id=org_id, ttl=ttl)
        expires = issued.expires_at.isoformat(timespec="seconds")
        print(f"one-time sign-in link for {args.user}, valid until {expires}:", file=out)
        # The code travels in the fragment: browsers never send it to a server or in a Referer.
        print(f"{address}/#link={issued.code}", file=out)
        if server is None:
            sys.stderr.write(
                f"{PROGRAM}: the link names {DEFAULT_SERVER}, where `serve` listens by default; for another "
                f"address pass --public-url or set {PUBLIC_URL_ENV}\n"
            )

    with_services(settings, link)


def _require_known_user(services: composition.Services, user_id: str) -> None:
    """Refuse a link for a user who holds nothing here: a mistyped id, or someone purged."""
    if any(token.revoked_at is None for token in services.tokens.list(user_id=user_id)):
        return
    assert services.controls is not None  # noqa: S101 - build_services always makes them
    if services.controls.effective(user_id=user_id).usage.memories:
        return
    raise CommandError(
        f"{user_id} holds nothing here (no live API token, no memories): a mistyped id, or a purged user; "
        f"no link issued. To let them in, create a token first: memorybank token create --user {user_id} --org org_…"
    )


def _latest_org(services: composition.Services, user_id: str) -> str:
    org_id = known_org(services, user_id)
    if org_id is None:
        raise CommandError(
            f"--org is required: {user_id} has no API token to take the organization from", EXIT_BAD_INPUT
        )
    return org_id
