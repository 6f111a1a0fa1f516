"""`memorybank migrate`: create or upgrade the schema, of one database or of a sharded deployment."""

from __future__ import annotations

import argparse
from typing import TextIO

from memorybank.commands.base import (
    EXIT_BAD_INPUT,
    PROGRAM,
    CommandError,
    Shared,
    Subcommands,
    memories,
    runtime,
    suggest_compact,
)
from memorybank.settings import Settings, redacted
from memorybank_core.wording import pluralized


def register(commands: Subcommands, shared: Shared) -> None:
    migrate = commands.add_parser(
        "migrate",
        parents=[shared.database],
        help="create or upgrade the database schema",
        description="Run pending migrations, create the full-text indexes if they are missing, and re-index "
        "memories written by an older search scheme. Safe to repeat. With --shards, --db names a Spider head: "
        "every data node is migrated first, then the head's Spider tables are defined over them "
        "(docs/scaling.md).",
    )
    migrate.add_argument(
        "--shards",
        metavar="URL,URL,...",
        help="the data nodes of a sharded deployment, in order (the first also holds the unsharded tables)",
    )
    migrate.set_defaults(run=run_migrate)


def run_migrate(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    if args.shards is not None:
        _migrate_sharded(args.shards, settings, out)
        return
    with runtime(settings, migrating=True) as opened:
        storage = opened.storage
        report = storage.migrate()
        storage.check_ready()
        mode = storage.describe_mode()
        suggest_compact(settings, report.reindexed)
    created_database = opened.created_database
    where = redacted(settings.database.url)
    if not created_database and not report.changed:
        print(f"{PROGRAM}: {where} is already up to date (revision {report.revision}); nothing to do", file=out)
        print(f"{PROGRAM}: {mode}", file=out)
        return
    done = []
    if created_database:
        done.append("created the database (utf8mb4)")
    if report.applied:
        applied = f"applied {pluralized(len(report.applied), 'revision')} {', '.join(report.applied)}"
        if list(report.applied) != sorted(report.applied):
            # 0010 was written before 0008 and runs before it: ids are names, the chain is the order.
            applied += " (in the order they run: see docs/storage.md, Revisions)"
        done.append(applied)
    if report.created_search_structures:
        done.append("created the full-text search indexes")
    if report.reindexed:
        done.append(f"re-indexed {memories(report.reindexed)}")
    if report.measured:
        done.append(f"counted the quota use of {memories(report.measured)}")
    print(f"{PROGRAM}: migrated {where} to revision {report.revision}: {'; '.join(done)}", file=out)
    print(f"{PROGRAM}: {mode}", file=out)


def _migrate_sharded(shards_option: str, settings: Settings, out: TextIO) -> None:
    from adapters_mysql import split_shard_urls
    from memorybank import composition

    if settings.database.embedded_path is not None:
        raise CommandError("--shards needs --db (or $MEMORYBANK_DATABASE_URL) naming the Spider head", EXIT_BAD_INPUT)
    shards = split_shard_urls(shards_option)
    composition.migrate_sharded(settings.database, shards, settings.keys)
    head = redacted(settings.database.url)
    print(f"{PROGRAM}: the schema of {len(shards)} data nodes and the head {head} is up to date", file=out)
