"""Encryption at rest: `memorybank encrypt` and `memorybank keys create|add|remove|rotate`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from memorybank.commands.base import (
    EXIT_BAD_INPUT,
    PROGRAM,
    CommandError,
    Shared,
    Subcommands,
    actions,
    memories,
    runtime,
    suggest_compact,
)
from memorybank.commands.reindex import fail_on_broken, reindex_with_progress
from memorybank.settings import (
    KEY_FILE_ENV,
    PRIVATE_DIRECTORY_MODE,
    Settings,
    add_arguments,
    default_database_path,
    default_key_file,
)

_ONLINE = "in batches of 1,000, with a progress bar, while servers keep serving. Safe to stop and rerun."


def register(commands: Subcommands, shared: Shared) -> None:
    commands.add_parser(
        "encrypt",
        parents=[shared.database],
        help="seal every plaintext memory with the key ring, online",
        description="Seal the memories stored in plaintext (content, tags, snippets, citation ids) and replace "
        f"their search terms with the blind index, {_ONLINE} Needs a key ring (--key-file or ${KEY_FILE_ENV}).",
    ).set_defaults(run=run_encrypt)

    keys = commands.add_parser(
        "keys", help="manage encryption keys", description="Create key rings, add and remove keys, re-seal rows."
    )
    key_commands = actions(keys, "keys_command")
    keys_create = key_commands.add_parser(
        "create",
        help="write a new key ring file (mode 0600)",
        description="Write a new key ring with one random 256-bit key. Keep a copy apart from the database and its "
        "backups: whoever loses the key loses the sealed memories.",
    )
    keys_create.add_argument(
        "--out",
        metavar="FILE",
        type=Path,
        help=f"where to write it (default: {default_key_file(shared.env)}, apart from the database's directory)",
    )
    keys_create.set_defaults(run=run_create, db=None)
    keys_add = key_commands.add_parser(
        "add",
        help="add a new primary key to a key ring file",
        description="Add a fresh key and make it primary (new writes), keeping the old keys to open old rows. "
        "Restart servers with the new ring, then run `memorybank keys rotate`.",
    )
    add_arguments(keys_add, "keys add")
    keys_add.add_argument(
        "--new-index",
        action="store_true",
        help="derive the blind index from the new key too (`keys rotate` then re-tokenizes every memory)",
    )
    keys_add.set_defaults(run=run_add, db=None)
    keys_remove = key_commands.add_parser(
        "remove",
        help="remove a key no database needs any more from a key ring file",
        description="Remove a key that is neither primary nor the index key. Only after `memorybank keys rotate` "
        "reported it unused on every database that uses this ring.",
    )
    keys_remove.add_argument("key_id", metavar="KEY_ID")
    add_arguments(keys_remove, "keys remove")
    keys_remove.set_defaults(run=run_remove, db=None)
    key_commands.add_parser(
        "rotate",
        parents=[shared.database],
        help="re-seal rows written under older keys, online",
        description="Re-seal memories sealed under a key that is no longer primary, and recompute their blind "
        "index if the index key changed or an older token format wrote it (format 2 kept the words' order), "
        f"{_ONLINE} Every row stays readable throughout.",
    ).set_defaults(run=run_rotate)


def run_encrypt(_args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    if settings.keys is None:
        raise CommandError(
            f"encrypt needs a key ring: create one with `{PROGRAM} keys create`, then pass --key-file or set "
            f"{KEY_FILE_ENV}",
            EXIT_BAD_INPUT,
        )
    _reseal(settings, out, verb="sealed")


def run_rotate(_args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    if settings.keys is None:
        raise CommandError(f"keys rotate needs the key ring: pass --key-file or set {KEY_FILE_ENV}", EXIT_BAD_INPUT)
    _reseal(settings, out, verb="re-sealed")


def _reseal(settings: Settings, out: TextIO, *, verb: str) -> None:
    with runtime(settings) as opened:
        storage = opened.storage
        registered = set(storage.sealing_status().registered)
        report = reindex_with_progress(storage, show_progress=sys.stderr.isatty())
        status = storage.sealing_status(vectors=True)
        mode = status.describe(storage.codec.state)
        suggest_compact(settings, report.rewritten)
    print(f"{PROGRAM}: {verb} {memories(report.rewritten)}", file=out)
    print(f"{PROGRAM}: {mode}", file=out)
    for key_id in sorted(registered - set(status.registered)):
        print(f"{PROGRAM}: key {key_id} is no longer used by this database", file=out)
    fail_on_broken(report)


def _key_file(settings: Settings) -> Path:
    if settings.keys is None or settings.keys.path is None:
        raise CommandError(f"name the key ring file with --key-file or {KEY_FILE_ENV}", EXIT_BAD_INPUT)
    return settings.keys.path


def run_create(args: argparse.Namespace, _settings: Settings, out: TextIO) -> None:
    from adapters_crypto import new_key_ring, write_key_ring

    path: Path = args.out if args.out is not None else default_key_file(args.environment)
    if args.out is None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIRECTORY_MODE)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    ring = new_key_ring()
    write_key_ring(path, ring)
    print(f"{PROGRAM}: wrote key ring {path} (mode 0600) with key {ring.primary}", file=out)
    if args.out is None:
        print(
            f"It is in the configuration directory, apart from the embedded database's "
            f"{default_database_path(args.environment).parent}: a copy of that directory does not carry the key.",
            file=out,
        )
    print(
        "Keep a copy somewhere other than the database and its backups (a password manager or secret store): "
        "without this key the sealed memories cannot be read by anyone, including you.",
        file=out,
    )
    print(f"Use it: {PROGRAM} serve --key-file {path}   (or {KEY_FILE_ENV}={path})", file=out)


def run_add(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    from adapters_crypto import load_key_ring, write_key_ring

    path = _key_file(settings)
    ring = load_key_ring(path).with_new_primary(new_index=args.new_index)
    write_key_ring(path, ring, replace=True)
    print(f"{PROGRAM}: key {ring.primary} is now primary in {path}; the older keys still open old rows", file=out)
    print(f"Restart every server with this ring, then run `{PROGRAM} keys rotate`.", file=out)


def run_remove(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    from adapters_crypto import load_key_ring, write_key_ring

    path = _key_file(settings)
    ring = load_key_ring(path).without(args.key_id)
    write_key_ring(path, ring, replace=True)
    print(f"{PROGRAM}: removed key {args.key_id} from {path}", file=out)
