"""`memorybank import` and `memorybank export`: memories in and out as JSON Lines (docs/portability.md)."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path
from typing import TextIO

from memorybank import secret_settings
from memorybank.commands import secrets
from memorybank.commands.base import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    PROGRAM,
    CommandError,
    Shared,
    Subcommands,
    memories,
    runtime,
)
from memorybank.settings import Settings, add_arguments
from memorybank_core import ids
from memorybank_core.wording import counted, pluralized


def register(commands: Subcommands, shared: Shared) -> None:
    importing = commands.add_parser(
        "import",
        parents=[shared.database],
        help="load memories from a JSON Lines file",
        description="Load memories, one JSON object per line (docs/portability.md), in batches of 1,000 per "
        "transaction. A bad line is reported by its number and skipped; the exit status is 1 if any was. "
        "Lines holding credentials are reported and skipped, or refuse the whole file (--on-secret).",
    )
    importing.add_argument("file", metavar="FILE.jsonl", type=Path, help="the file to load")
    secrets.add_on_secret_option(importing)
    add_arguments(importing, "import")
    importing.set_defaults(run=run_import)

    exporting = commands.add_parser(
        "export",
        parents=[shared.database],
        help="write one user's memories, or one organization's team bank, as JSON Lines",
        description="Write every memory of one user (--user), or of one organization's team bank (--org: each "
        "line names its author), one JSON object per line, in the format import reads: ids and timestamps "
        "included, so export then import round-trips.",
    )
    whose = exporting.add_mutually_exclusive_group(required=True)
    whose.add_argument("--user", metavar="usr_…", help="whose memories")
    whose.add_argument("--org", metavar="org_…", help="whose team bank (not its members' own memories)")
    exporting.add_argument(
        "--out", metavar="FILE", type=Path, help="write here instead of stdout (mode 0600; never over a file)"
    )
    exporting.add_argument("--force", action="store_true", help="replace the --out file if it exists")
    exporting.set_defaults(run=run_export)


def run_import(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    from memorybank import portability

    if not args.file.is_file():
        raise CommandError(f"{args.file} is not a readable file", EXIT_BAD_INPUT)
    screen = secret_settings.build_secret_screen(settings.secret_screen)
    with runtime(settings) as opened:
        report = portability.import_file(
            args.file, opened.ports.writer(), show_progress=sys.stderr.isatty(), screen=screen, on_secret=args.on_secret
        )
    for problem in report.skipped:
        sys.stderr.write(f"{PROGRAM}: skipped {problem.describe()}\n")
    secrets.report_import(report, out)
    unreadable, held = len(report.skipped), len(report.secrets)
    if report.refused:
        print(f"{PROGRAM}: imported {memories(report.imported)}", file=out)
        raise CommandError(
            f"{counted(held, 'line')} {pluralized(held, 'holds')} credentials (listed above): nothing was imported"
        )
    # Every line left out is counted once, in the summary and in the exit line alike.
    skipped = unreadable + held
    why = f" ({unreadable} unreadable, {held} holding credentials)" if unreadable and held else ""
    print(f"{PROGRAM}: imported {memories(report.imported)}, skipped {counted(skipped, 'line')}{why}", file=out)
    if skipped:
        raise CommandError(f"skipped {counted(skipped, 'line')} (listed above)", EXIT_FAILURE)


def run_export(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    from memorybank import portability

    # Validate before touching the database.
    if args.org is not None:
        ids.parse_id(args.org, prefix=ids.ORGANIZATION_PREFIX, field="org")
        export, whose = partial(portability.export_org, org_id=args.org), f"the team bank of {args.org}"
    else:
        ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")
        export, whose = partial(portability.export_user, user_id=args.user), args.user
    if args.out is not None and not args.force and os.path.lexists(args.out):
        raise CommandError(_export_exists(args.out), EXIT_BAD_INPUT)
    if args.out is not None and not args.out.parent.is_dir():
        raise CommandError(f"cannot write {args.out}: {args.out.parent} is not a directory", EXIT_BAD_INPUT)
    with runtime(settings) as opened:
        store = opened.ports.store
        try:
            if args.out is None:
                count = export(store, out=out)
            else:
                with portability.private_output(args.out, replace=args.force) as file:
                    count = export(store, out=file)
        except FileExistsError as error:  # created meanwhile: still never overwritten
            raise CommandError(_export_exists(args.out), EXIT_BAD_INPUT) from error
        except OSError as error:  # e.g. a directory we may not write in: the export's file, not the database
            raise CommandError(f"cannot write {args.out}: {error.strerror or error}") from error
    # stdout may be the export itself: the summary goes to stderr.
    sys.stderr.write(f"{PROGRAM}: exported {memories(count)} of {whose}\n")


def _export_exists(path: Path) -> str:
    return f"{path} exists already: an export never overwrites a file; pass --force to replace it"
