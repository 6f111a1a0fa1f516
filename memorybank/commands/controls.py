"""Operator controls: `memorybank gate on|off|show` (memory switched on or off) and `memorybank quota
set|unset|show` (storage quotas), for a user, an organization or everyone."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from memorybank.commands.base import EXIT_BAD_INPUT, PROGRAM, CommandError, Shared, Subcommands, actions, with_services
from memorybank.settings import (
    QUOTA_CHARACTERS_ENV,
    QUOTA_MEMORIES_ENV,
    Settings,
    parse_quota_number,
)
from memorybank_core import InvalidInputError, MemoryControls, SubjectKind, clean_subject_id
from memorybank_core.wording import pluralized

if TYPE_CHECKING:
    from memorybank import composition


def register(commands: Subcommands, shared: Shared) -> None:
    gate = commands.add_parser(
        "gate",
        help="switch memory on or off for a user, an organization or everyone",
        description="Switch memory on or off, effective on the next request of every server process. Off "
        "anywhere wins: the kill switch (--all) over an organization over a user. A switched-off account gets "
        "403 memory_disabled on every memory route and no memory capability on the MCP rail; its memories stay.",
    )
    gate_commands = actions(gate, "gate_command")
    for action, enabled in (("on", True), ("off", False)):
        switch = gate_commands.add_parser(
            action,
            parents=[shared.database],
            help=f"switch memory {action}",
            description=f"Switch memory {action} for a user, an organization, or everyone (--all).",
        )
        _subject_options(switch, everyone=True)
        switch.set_defaults(run=run_gate_switch, enabled=enabled)
    _show_command(
        gate_commands,
        shared,
        "gate",
        help="show the switches, or whether memory is on for one user",
        description="Without --user: every switch set. With --user (and --org): whether memory is on for them.",
    )

    quota = commands.add_parser(
        "quota",
        help="set and show storage quotas",
        description="Storage quotas: how many memories, and characters of content, tags and snippets, a user may "
        "store. A user's own quota wins over their organization's, which wins over the server's default "
        "(serve --quota-memories/--quota-characters). A save over quota gets 403 quota_exceeded.",
    )
    quota_commands = actions(quota, "quota_command")
    quota_set = quota_commands.add_parser(
        "set",
        parents=[shared.database],
        help="set a user's or an organization's quota",
        description="Set a quota; a measure not given keeps its current setting. Nothing stored is removed: "
        "a user over a lowered quota cannot save until they delete enough.",
    )
    _subject_options(quota_set, everyone=False)
    quota_set.add_argument("--memories", metavar="N", type=_whole_number, help="the maximum number of memories")
    quota_set.add_argument(
        "--characters", metavar="N", type=_whole_number, help="the maximum characters of all memories together"
    )
    quota_set.set_defaults(run=run_quota_set)
    quota_unset = quota_commands.add_parser(
        "unset",
        parents=[shared.database],
        help="forget a user's or an organization's quota",
        description="Forget the quota set for a user or an organization, so the next level's applies (the "
        "organization's, then the server's default). A gate switch set for them stays as it is.",
    )
    _subject_options(quota_unset, everyone=False)
    quota_unset.set_defaults(run=run_quota_unset)
    _show_command(
        quota_commands,
        shared,
        "quota",
        help="show the quotas set, or one user's quota and use",
        description="Without --user: every quota set. With --user (and --org): the quota that applies to them "
        f"and what they use. The default shown is ${QUOTA_MEMORIES_ENV} / ${QUOTA_CHARACTERS_ENV} or the "
        "built-in one; a server started with --quota-* options applies its own.",
    )


def _subject_options(parser: argparse.ArgumentParser, *, everyone: bool) -> None:
    subject = parser.add_mutually_exclusive_group(required=True)
    subject.add_argument("--user", metavar="usr_…", help="one user")
    subject.add_argument("--org", metavar="org_…", help="one organization: every member, in it")
    if everyone:
        subject.add_argument("--all", action="store_true", help="everyone: the kill switch")


def _show_command(commands: Subcommands, shared: Shared, what: str, *, help: str, description: str) -> None:
    show = commands.add_parser("show", parents=[shared.database], help=help, description=description)
    show.add_argument("--user", metavar="usr_…", help="the user to check")
    show.add_argument("--org", metavar="org_…", help="the organization the user works in")
    show.set_defaults(run=run_show, what=what)


def _whole_number(value: str) -> int:
    try:
        return parse_quota_number(value, "quota")
    except InvalidInputError as error:
        raise argparse.ArgumentTypeError(error.problems[0].message) from error


def _subject(args: argparse.Namespace) -> tuple[SubjectKind, str | None]:
    """The subject a control command names; its id is checked before the database is touched."""
    if getattr(args, "all", False):
        return SubjectKind.ALL, None
    kind, value = (SubjectKind.USER, args.user) if args.user is not None else (SubjectKind.ORG, args.org)
    return kind, clean_subject_id(kind, value)


def _describe_subject(kind: SubjectKind, subject_id: str | None) -> str:
    return "everyone" if kind is SubjectKind.ALL else f"{kind.value} {subject_id}"


def _with_controls(settings: Settings, work: Callable[[MemoryControls], None]) -> None:
    def run(services: composition.Services) -> None:
        controls = services.controls
        if controls is None:  # pragma: no cover - build_services always wires them
            raise CommandError("this build has no operator controls")
        work(controls)

    with_services(settings, run)


def run_gate_switch(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    kind, subject_id = _subject(args)

    def switch(controls: MemoryControls) -> None:
        controls.set_gate(kind, subject_id, enabled=args.enabled)
        state = "on" if args.enabled else "off"
        print(f"{PROGRAM}: memory switched {state} for {_describe_subject(kind, subject_id)}", file=out)
        if args.enabled and kind is not SubjectKind.ALL:
            print("(an organization or the kill switch that is off still keeps it off)", file=out)

    _with_controls(settings, switch)


def run_quota_set(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    kind, subject_id = _subject(args)
    if args.memories is None and args.characters is None:
        raise CommandError("give --memories N, --characters N, or both", EXIT_BAD_INPUT)

    def set_quota(controls: MemoryControls) -> None:
        control = controls.set_quota(kind, subject_id, max_memories=args.memories, max_characters=args.characters)
        print(
            f"{PROGRAM}: quota of {_describe_subject(kind, subject_id)}: "
            f"{_measure(control.max_memories, 'memory')}, {_measure(control.max_characters, 'character')}",
            file=out,
        )

    _with_controls(settings, set_quota)


def run_quota_unset(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    kind, subject_id = _subject(args)

    def unset_quota(controls: MemoryControls) -> None:
        subject = _describe_subject(kind, subject_id)
        if controls.unset_quota(kind, subject_id):
            print(f"{PROGRAM}: quota of {subject} unset: the next level's applies", file=out)
        else:
            print(f"{PROGRAM}: no quota was set for {subject}", file=out)

    _with_controls(settings, unset_quota)


def _measure(value: int | None, noun: str) -> str:
    """`1 memory`, `5_000 memories`, `default memories` (no quota of its own)."""
    return f"{_limit(value)} {pluralized(0 if value is None else value, noun)}"


def _limit(value: int | None) -> str:
    return "default" if value is None else f"{value:_}"


def run_show(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    """`gate show` and `quota show` (`args.what`)."""
    if args.user is None and args.org is not None:
        raise CommandError("--org needs --user: it names the organization the user works in", EXIT_BAD_INPUT)
    user = clean_subject_id(SubjectKind.USER, args.user) if args.user is not None else None
    org = clean_subject_id(SubjectKind.ORG, args.org) if args.org is not None else None

    def show(controls: MemoryControls) -> None:
        if user is not None:
            effective = controls.effective(user_id=user, org_id=org)
            policy = effective.policy
            if args.what == "gate":
                state = "on" if policy.enabled else f"OFF (switched off for {_off_by(policy.switched_off_by)})"
                print(f"memory for {user}{f' in {org}' if org else ''}: {state}", file=out)
                return
            used, quota = effective.usage, policy.quota
            print(f"quota of {user}{f' in {org}' if org else ''}:", file=out)
            print(f"  memories:   {used.memories:_} of {quota.max_memories:_}", file=out)
            print(f"  characters: {used.characters:_} of {quota.max_characters:_}", file=out)
            return
        shown = [
            c
            for c in controls.list()
            if (c.enabled is not None if args.what == "gate" else (c.max_memories, c.max_characters) != (None, None))
        ]
        if not shown:
            print(f"no {'switches' if args.what == 'gate' else 'quotas'} set", file=out)
            return
        for c in shown:
            subject = _describe_subject(c.kind, c.subject_id)
            if args.what == "gate":
                print(f"{subject}: {'on' if c.enabled else 'OFF'}", file=out)
            else:
                print(
                    f"{subject}: {_measure(c.max_memories, 'memory')}, {_measure(c.max_characters, 'character')}",
                    file=out,
                )

    _with_controls(settings, show)


def _off_by(kind: SubjectKind | None) -> str:
    return (
        {SubjectKind.ALL: "everyone", SubjectKind.ORG: "the organization", SubjectKind.USER: "the user"}.get(kind, "-")
        if kind is not None
        else "-"
    )
