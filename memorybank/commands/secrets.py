"""The secret screen's command-line surface (ADR 0024): `--secret-screen`, `import --on-secret`, `secrets scan`.

The screen's options and commands live in one place; `serve` and `import` only hook them in.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TYPE_CHECKING, TextIO

from memorybank import secret_settings
from memorybank.commands.base import PROGRAM, CommandError, Shared, Subcommands, actions, runtime
from memorybank.settings import Settings
from memorybank_core import MemoryOwners, MemoryStore, SecretScreen, scan_owner
from memorybank_core.wording import counted, pluralized

if TYPE_CHECKING:  # portability loads SQLAlchemy: only the commands that use it import it
    from memorybank.portability import ImportReport


def add_on_secret_option(parser: argparse.ArgumentParser) -> None:
    """`import --on-secret skip|refuse`."""
    parser.add_argument(
        "--on-secret",
        choices=secret_settings.ON_SECRET_CHOICES,
        default=secret_settings.SKIP_LINE,
        help="a line holding a credential: skip it and import the rest, or refuse the whole file and import "
        "nothing; either way every such line is reported by number, memory id, owner and kind (default: skip)",
    )


def register(commands: Subcommands, shared: Shared) -> None:
    """`memorybank secrets scan`."""
    secrets = commands.add_parser(
        "secrets",
        help="find credentials in stored memories",
        description="Look for credentials saved before the secret screen (or while it was off).",
    )
    scan = actions(secrets, "secrets_command").add_parser(
        "scan",
        parents=[shared.database],
        help="list memories holding credentials: kind, memory id, owner (never the secret)",
        description="Read every memory of every owner through the storage (sealed ones are opened with the key "
        "ring) and print one tab-separated line per credential found: kind, memory id, owner, field and "
        "character range. The secret itself is never printed. Exit status 1 when any was found, so the people "
        "who own them can be asked to delete them (`memorybank purge` for a whole account).",
    )
    scan.set_defaults(run=run_scan)


def run_scan(_args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    """`memorybank secrets scan` over the configured database."""
    screen = secret_settings.build_secret_screen(secret_settings.REFUSE)
    assert screen is not None  # noqa: S101 - `refuse` always builds one; narrows the type
    with runtime(settings) as opened:
        scan(opened.ports.owners(), opened.ports.store, screen, out)


def scan(owners: MemoryOwners, store: MemoryStore, screen: SecretScreen, out: TextIO) -> None:
    """Every stored credential of every owner, one line each on `out`, then a summary on stderr.

    Over the ports only, so a host's own store runs it too.

    Raises:
        CommandError: some memories hold credentials (exit status 1).
        UnavailableError: storage cannot be reached.
    """
    kinds: Counter[str] = Counter()
    memories = 0
    listed = owners.memory_owners()
    for owner in listed:
        for memory, problems in scan_owner(store, screen, user_id=owner):
            memories += 1
            for problem in problems:
                kinds[problem.kind] += 1
                where = f"{problem.path}:{problem.start}-{problem.end}"
                print(f"{problem.kind}\t{memory.id}\t{owner}\t{where}", file=out)
    if not memories:
        sys.stderr.write(f"{PROGRAM}: no credentials found in the memories of {counted(len(listed), 'owner')}\n")
        return
    counts = ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())
    raise CommandError(
        f"{counted(memories, 'memory')} of {counted(len(listed), 'owner')} {pluralized(memories, 'holds')} what "
        f"looks like credentials ({counts})"
    )


def report_import(report: ImportReport, out: TextIO) -> None:
    """The import's lines holding credentials, on stderr, and what was done with them on `out`."""
    for line in report.secrets:
        sys.stderr.write(f"{PROGRAM}: credential in {line.describe()}\n")
    if report.secrets:
        counts = ", ".join(f"{kind} {count}" for kind, count in report.secret_counts().items())
        action = "refused the whole import: nothing was imported" if report.refused else "skipped them"
        held = len(report.secrets)
        lines = f"{counted(held, 'line')} {pluralized(held, 'holds')}"
        print(f"{PROGRAM}: {lines} what looks like credentials ({counts}); {action}", file=out)
