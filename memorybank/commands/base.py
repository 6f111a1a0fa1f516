"""What every command shares: the program name, exit statuses, `CommandError`, the parser class, the
`--db`/`--key-file` options, opening the services, and how counts are worded."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeAlias

from memorybank.settings import OPENS_DATABASE, Settings, add_arguments
from memorybank_core.wording import counted

if TYPE_CHECKING:
    from memorybank import composition
    from memorybank.bootstrap import Runtime

PROGRAM = "memorybank"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2

#: What a command runs: the parsed line, the settings resolved from it (`Settings.resolve`), and where its
#: report goes.
Run = Callable[[argparse.Namespace, Settings, TextIO], None]


class CommandError(Exception):
    """A failure to report as one line, with its exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.status = status


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class Version(argparse.Action):
    """`--version`: the installed distribution's version, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **_: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("memorybank")
        except PackageNotFoundError:  # a source tree on sys.path, not installed
            found = "unknown (not installed)"
        sys.stdout.write(f"{PROGRAM} {found}\n")
        parser.exit(EXIT_OK)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming `--help`, not the whole usage block.

    A mistyped command gets a "did you mean" (Python 3.14's `suggest_on_error`, which 3.11 lacks). Every
    command answers `--version` (`memorybank serve --version` too), as the program does.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.add_help:  # not on the parent parsers that only lend their options
            self.add_argument("--version", action=Version)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{PROGRAM}: error: {message}{_suggestion(message)} (see `{self.prog} --help`)\n")


def _suggestion(message: str) -> str:
    """`; did you mean 'serve'?` for an invalid choice close to a valid one, else nothing."""
    invalid = _INVALID_CHOICE.search(message)
    if invalid is None:
        return ""
    import difflib  # only for a usage error: `--help` does not pay for it

    choices = [choice.strip().strip("'") for choice in invalid.group(2).split(",")]
    close = difflib.get_close_matches(invalid.group(1), choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


#: Where a command module adds its commands (`commands.add_parser(...)`).
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"


@dataclass(frozen=True)
class Shared:
    """What a command module's `register` gets besides the subcommands."""

    #: The parent parser of every command that opens the database: `--db` and `--key-file`.
    database: Parser
    #: The environment, for help texts naming a default location.
    env: Mapping[str, str]


def database_options() -> Parser:
    """The flags of every command that opens the database (`--db`, `--key-file`), as a parent parser
    (`parents=[shared.database]`); which flags those are is declared in `memorybank.settings.DECLARED`."""
    database = Parser(add_help=False)
    add_arguments(database, OPENS_DATABASE)
    return database


def actions(parser: argparse.ArgumentParser, dest: str) -> Subcommands:
    """The ACTION subcommands of a command family (`keys create`, `token list`, ...)."""
    return parser.add_subparsers(dest=dest, required=True, metavar="ACTION", parser_class=Parser)


def runtime(settings: Settings, *, migrating: bool = False) -> Runtime:
    """`bootstrap.build` for an admin command: the database and the services, without loading an embedding
    model (admin commands neither search nor embed; `reindex --embeddings` builds its own)."""
    from memorybank import bootstrap

    return bootstrap.build(settings, search="off", migrating=migrating)


def with_services(settings: Settings, work: Callable[[composition.Services], None]) -> None:
    """Run `work` on the services over the ready database, then close it."""
    with runtime(settings) as opened:
        work(opened.services)


def memories(count: int) -> str:
    """`1 memory`, `2 memories`."""
    return counted(count, "memory")


def suggest_compact(settings: Settings, changed: int) -> None:
    """After a command deleted or rewrote `changed` memories: on MySQL/MariaDB, where every search pays for their old
    full-text entries until the table is rebuilt, say so and name the command, on stderr (stdout may be a receipt).
    SQLite's commands merge their index themselves."""
    if changed and settings.database.url.startswith("mysql"):
        sys.stderr.write(
            f"{PROGRAM}: the search index keeps the old entries of {memories(changed)}, and every search pays for "
            f"them, until `{PROGRAM} compact` (docs/operations.md, Compacting the search index)\n"
        )
