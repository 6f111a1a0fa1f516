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
from memorybank_core import MemoryOwners, MemoryStore, RevisionEraser, SecretScreen, scan_owner
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
        help="list memories and their kept earlier versions holding credentials: kind, memory id, owner, field, "
        "version (never the secret)",
        description="Read every memory of every owner through the storage, with the earlier versions its edits "
        "kept (sealed ones are opened with the key ring), and print one tab-separated line per credential found: "
        "kind, memory id, owner, field and character range, and which version holds it (`current`, or "
        "`revision N` for a kept earlier one). The secret itself is never printed. Exit status 1 when any was "
        "found, so the people who own them can be asked to delete them (`memorybank purge` for a whole account); "
        "an earlier version, which its owner cannot delete, the operator can (--drop-revisions).",
    )
    scan.add_argument(
        "--drop-revisions",
        action="store_true",
        help="delete each kept earlier version found holding a credential (the memory as it is now and its other "
        "versions stay); exit status 0 when no memory holds one now",
    )
    scan.set_defaults(run=run_scan)


def run_scan(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    """`memorybank secrets scan` over the configured database."""
    screen = secret_settings.build_secret_screen(secret_settings.REFUSE)
    assert screen is not None  # noqa: S101 - `refuse` always builds one; narrows the type
    with runtime(settings) as opened:
        ports = opened.ports
        eraser = ports.eraser() if args.drop_revisions else None
        scan(ports.owners(), ports.store, screen, out, eraser=eraser)


def scan(
    owners: MemoryOwners,
    store: MemoryStore,
    screen: SecretScreen,
    out: TextIO,
    *,
    eraser: RevisionEraser | None = None,
) -> None:
    """Every stored credential of every owner, in their memories and the earlier versions kept of them, one line each
    on `out`, then a summary on stderr. With `eraser`, each earlier version found is deleted once its owner's walk
    is done (the memories as they are now are their owners' to change).

    Over the ports only, so a host's own store runs it too.

    Raises:
        CommandError: some memories hold credentials now, or (without `eraser`) some earlier versions do
            (exit status 1).
        UnavailableError: storage cannot be reached.
    """
    kinds: Counter[str] = Counter()
    memories: set[str] = set()
    earlier: list[tuple[str, str, list[int]]] = []
    listed = owners.memory_owners()
    for owner in listed:
        found_earlier: dict[str, list[int]] = {}
        for found in scan_owner(store, screen, user_id=owner):
            version = found.version
            which = f"revision {version.revision}" if found.earlier else "current"
            for problem in found.problems:
                kinds[problem.kind] += 1
                where = f"{problem.path}:{problem.start}-{problem.end}"
                print(f"{problem.kind}\t{version.id}\t{owner}\t{where}\t{which}", file=out)
            if found.earlier:
                found_earlier.setdefault(version.id, []).append(version.revision)
            else:
                memories.add(version.id)
        for memory_id, revisions in found_earlier.items():
            if eraser is not None:
                eraser.drop_revisions(user_id=owner, memory_id=memory_id, revisions=revisions)
            earlier.append((owner, memory_id, revisions))
    owner_count = counted(len(listed), "owner")
    if not memories and not earlier:
        sys.stderr.write(
            f"{PROGRAM}: no credentials found in the memories of {owner_count} (their earlier versions included)\n"
        )
        return
    versions = sum(len(revisions) for _, _, revisions in earlier)
    if earlier and eraser is not None:
        sys.stderr.write(
            f"{PROGRAM}: deleted {counted(versions, 'earlier version')} of "
            f"{counted(len(earlier), 'memory')} that held what looks like credentials\n"
        )
    counts = ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())
    problems: list[str] = []
    if memories:
        problems.append(
            f"{counted(len(memories), 'memory')} of {owner_count} {pluralized(len(memories), 'holds')} what looks like "
            "credentials"
        )
    if earlier and eraser is None:
        problems.append(
            f"{counted(versions, 'earlier version')} of {counted(len(earlier), 'memory')} "
            f"{pluralized(versions, 'holds')} what looks like credentials"
        )
    if problems:
        remedy = "; --drop-revisions deletes those earlier versions" if earlier and eraser is None else ""
        raise CommandError(f"{'; '.join(problems)} ({counts}){remedy}")


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
