"""`memorybank purge`: offboarding, every memory of a user or an organization removed, with a receipt."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from memorybank.commands.base import EXIT_BAD_INPUT, CommandError, Shared, Subcommands, runtime, suggest_compact
from memorybank.settings import Settings
from memorybank_core import limits
from memorybank_core.offboarding import PurgeSubject


def register(commands: Subcommands, shared: Shared) -> None:
    purge = commands.add_parser(
        "purge",
        parents=[shared.database],
        help="offboarding: delete every memory of a user or an organization, revoke its tokens, print a receipt",
        description="Delete every memory and context of a user (or every memory saved under an organization), "
        "revoke its API tokens and end its panel sessions, in batches of short transactions, with a progress bar. "
        "Prints the receipt (JSON): what was asked, what was removed, when, and a digest of the removed ids. Safe "
        "to stop and rerun: a rerun finishes the interrupted run and its receipt counts the whole run "
        "(docs/operations.md, Offboarding).",
    )
    subject = purge.add_mutually_exclusive_group(required=True)
    subject.add_argument("--user", metavar="usr_…", help="the user to purge")
    subject.add_argument("--org", metavar="org_…", help="the organization whose memories to purge")
    purge.add_argument("--dry-run", action="store_true", help="count what would be removed; change nothing")
    purge.add_argument(
        "--receipt", metavar="FILE", type=Path, help="also write the receipt to FILE (never overwritten)"
    )
    purge.add_argument(
        "--batch-size",
        metavar="N",
        type=int,
        default=limits.PURGE_BATCH.default,
        help=f"memories per transaction, {limits.PURGE_BATCH.min} to {limits.PURGE_BATCH.max} "
        f"(default: {limits.PURGE_BATCH.default})",
    )
    purge.add_argument(
        "--pause-ms",
        metavar="MS",
        type=int,
        default=limits.PURGE_PAUSE_MS.default,
        help=f"rest between batches, leaving the database to other users; 0 to {limits.PURGE_PAUSE_MS.max} "
        f"(default: {limits.PURGE_PAUSE_MS.default})",
    )
    purge.set_defaults(run=run_purge)


def run_purge(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    from tqdm import tqdm

    from memorybank.portability import private_output
    from memorybank_core.validation import clean_count

    # Everything is checked before the database is opened: a typo or a wildcard touches nothing.
    subject = PurgeSubject.user(args.user) if args.user is not None else PurgeSubject.organization(args.org)
    batch_size = clean_count(args.batch_size, path="batch_size", bound=limits.PURGE_BATCH)
    pause_ms = clean_count(args.pause_ms, path="pause_ms", bound=limits.PURGE_PAUSE_MS)
    if args.receipt is not None and args.receipt.exists():
        raise CommandError(f"{args.receipt} exists already: a receipt is never overwritten", EXIT_BAD_INPUT)
    with runtime(settings) as opened:
        offboarding = opened.offboarding()
        purge = offboarding.purge_user if args.user is not None else offboarding.purge_organization
        receipt = purge(subject.id, dry_run=True, batch_size=batch_size)
        if not args.dry_run:
            show = sys.stderr.isatty()
            with tqdm(total=receipt.counts.memories, unit="memory", disable=not show, file=sys.stderr) as bar:
                receipt = purge(subject.id, batch_size=batch_size, pause_ms=pause_ms, progress=bar.update)
            suggest_compact(settings, receipt.counts.memories)
    text = json.dumps(receipt.to_json(), indent=2)
    if args.receipt is not None:
        # 0600 like every file memorybank writes: a receipt names the person and what was removed.
        try:
            with private_output(args.receipt) as file:
                file.write(text + "\n")
        except FileExistsError as error:
            raise CommandError(
                f"{args.receipt} exists already: a receipt is never overwritten", EXIT_BAD_INPUT
            ) from error
    print(text, file=out)
