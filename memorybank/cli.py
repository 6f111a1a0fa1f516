"""The `memorybank` command: serve, mcp, prompt, migrate, import, export, reindex, encrypt, keys, panel-link,
gate, quota, token, purge, secrets and completion (one module each, or per family, in `memorybank.commands`).

Exit status: 0 on success, 2 on bad input (usage, URL, id, scope), 1 when the
database is unreachable, its schema is not ready, or a token is not found. Every
failure is one line on stderr, never a traceback.

The server stack (SQLAlchemy, Starlette, uvicorn, the MCP SDK) is imported inside the
commands that use it, so `--help` and `prompt` answer at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from memorybank.commands import (
    compact,
    completion,
    controls,
    import_export,
    keys,
    mcp,
    migrate,
    panel_link,
    purge,
    reindex,
    secrets,
    serve,
    tokens,
)
from memorybank.commands.base import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    PROGRAM,
    CommandError,
    Parser,
    Run,
    Shared,
    database_options,
)
from memorybank.commands.panel_link import parse_ttl
from memorybank.settings import Settings, option_names, redacted
from memorybank_core import InvalidInputError, MemoryBankError, UnavailableError

# What tests and the docs import from here, besides `main`.
__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "PROGRAM", "CommandError", "build_parser", "main", "parse_ttl"]

#: In `memorybank --help` order.
_COMMANDS = (
    serve,
    mcp,
    migrate,
    import_export,
    secrets,
    reindex,
    compact,
    keys,
    panel_link,
    controls,
    tokens,
    purge,
    completion,
)

#: CLI spelling of the fields the core and later checks name in their errors: each setting's flag
#: (`memorybank.settings.option_names`), then the commands' own arguments.
_OPTION_NAMES = {
    **option_names(),
    "shards": "--shards",
    "db": "--db",
    "user": "--user",
    "org": "--org",
    "scope": "--scope",
    "key-file": "key ring",
    "key": "KEY_ID",
    "ttl": "--ttl",
    "memories": "--memories",
    "characters": "--characters",
    "quota": "quota set",
    "rate_limit": "--rate-limit",
    "batch_size": "--batch-size",
    "pause_ms": "--pause-ms",
}


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The argument parser; `env` only feeds the help text (the default database location)."""
    parser = Parser(prog=PROGRAM, description="A per-user memory bank for AI agents: REST server and admin tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    shared = Shared(database=database_options(), env=env)
    for command in _COMMANDS:
        command.register(commands, shared)
    return parser


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None) -> int:
    """Run the command line; return the exit status.

    Every error a command can meet gets its exit status and its one line here.
    """
    environment = os.environ if env is None else env
    args = build_parser(environment).parse_args(argv)
    args.environment = environment  # for default locations in messages (the XDG directories), not settings
    run: Run = args.run
    database = "the database"
    try:
        settings = Settings.resolve(args, environment)
        database = redacted(settings.database.url)
        run(args, settings, sys.stdout)
    except CommandError as error:
        return _fail(str(error), error.status)
    except InvalidInputError as error:
        problems = "; ".join(f"{_OPTION_NAMES.get(p.path, p.path)} {p.message}" for p in error.problems)
        return _fail(problems, EXIT_BAD_INPUT)
    except FileExistsError as error:
        return _fail(f"{error.filename} exists already: a key ring is never overwritten", EXIT_FAILURE)
    except UnavailableError as error:
        return _fail(f"{error} ({database})", EXIT_FAILURE)
    except MemoryBankError as error:  # e.g. SchemaNotReadyError: its message names the fix
        return _fail(str(error), EXIT_FAILURE)
    except OSError as error:
        return _fail(f"cannot prepare the database location: {error}", EXIT_FAILURE)
    return EXIT_OK


def _fail(message: str, status: int) -> int:
    one_line = " ".join(message.split())
    sys.stderr.write(f"{PROGRAM}: error: {one_line}\n")
    return status
