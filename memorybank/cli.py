"""The `memorybank` command: serve, mcp, prompt, migrate, import, export, reindex, encrypt, keys, panel-link,
gate, quota, token, purge and secrets.

Exit status: 0 on success, 2 on bad input (usage, URL, id, scope), 1 when the
database is unreachable, its schema is not ready, or a token is not found. Every
failure is one line on stderr, never a traceback.

The server stack (SQLAlchemy, Starlette, uvicorn, the MCP SDK) is imported inside the
commands that use it, so `--help` and `prompt` answer at once.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import re
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO
from urllib.parse import urlsplit

from memorybank import listeners, oauth_settings, secret_commands, secret_settings, semantic
from memorybank.settings import (
    ALLOWED_HOSTS_ENV,
    DATABASE_URL_ENV,
    KEY_FILE_ENV,
    KEYS_ENV,
    PRIVATE_DIRECTORY_MODE,
    QUOTA_CHARACTERS_ENV,
    QUOTA_MEMORIES_ENV,
    RATE_LIMIT_STORAGE_ENV,
    RATE_LIMITS_ENV,
    DatabaseChoice,
    KeyRingChoice,
    RateLimitChoice,
    choose_allowed_hosts,
    choose_database,
    choose_key_ring,
    choose_quota,
    choose_rate_limits,
    default_database_path,
    default_key_file,
    parse_quota_number,
    redacted,
)
from memorybank_core import (
    ApiToken,
    InvalidInputError,
    MemoryBankError,
    MemoryControls,
    NotFoundError,
    RateLimits,
    SubjectKind,
    UnavailableError,
    clean_subject_id,
    ids,
    limits,
)
from memorybank_core.distribution import install_command
from memorybank_core.offboarding import PurgeSubject
from memorybank_core.panel_sessions import check_link_ttl
from memorybank_core.tokens import KNOWN_SCOPES

if TYPE_CHECKING:
    from adapters_mysql import ReindexReport
    from memorybank import composition

PROGRAM = "memorybank"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
_DEFAULT_SERVER = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2

#: CLI spelling of the fields the core names in its errors.
_OPTION_NAMES = {
    "shards": "--shards",
    "db": "--db",
    "user": "--user",
    "org": "--org",
    "scope": "--scope",
    "key-file": "key ring",
    "key": "KEY_ID",
    "ttl": "--ttl",
    "url": "--public-url",
    **{name: f"--{name}" for name in ("public-url", "oauth-issuer", "oauth-scope", "oauth-default-org")},
    **{name: f"--{name}" for name in ("oauth-user-claim", "oauth-user-id-claim")},
    "oauth-introspection-issuer": "--oauth-introspection-issuer",
    **{name: f"--{name}" for name in ("oauth-panel-client-id", "oauth-panel-issuer", "oauth-panel-client-secret-file")},
    "allowed_host": "--allowed-host",
    "search": "--search",
    "embedder-model": "--embedder-model",
    "quota-memories": "--quota-memories",
    "quota-characters": "--quota-characters",
    "memories": "--memories",
    "characters": "--characters",
    "quota": "quota set",
    "rate_limit": "--rate-limit",
    "rate_limit_storage": "--rate-limit-storage",
    "batch_size": "--batch-size",
    "pause_ms": "--pause-ms",
    "secret-screen": "--secret-screen",
}


class CommandError(Exception):
    """A failure to report as one line, with its exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.status = status


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming `--help`, not the whole usage block.

    A mistyped command gets a "did you mean" (Python 3.14's `suggest_on_error`, which 3.11 lacks).
    """

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


class _Version(argparse.Action):
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


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The argument parser; `env` only feeds the help text (the default database location)."""
    database = _Parser(add_help=False)
    database.add_argument(
        "--db",
        metavar="URL",
        help=(
            f"database URL: sqlite:///path/file.sqlite3, mysql://user:password@host:3306/name (mysqlclient) or "
            f"mysql+pymysql://...; default: ${DATABASE_URL_ENV}, else {default_database_path(env)}"
        ),
    )
    database.add_argument(
        "--key-file",
        metavar="FILE",
        type=Path,
        help=f"key ring for encryption at rest (`memorybank keys create`); default: ${KEY_FILE_ENV}, else the ring "
        f"in ${KEYS_ENV}, else none (plaintext)",
    )
    parser = _Parser(prog=PROGRAM, description="A per-user memory bank for AI agents: REST server and admin tools.")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    serve = commands.add_parser(
        "serve",
        parents=[database],
        help="run the HTTP server",
        description="Run the HTTP API. The embedded SQLite database is created on first start; a MySQL "
        "database must be migrated first (`memorybank migrate`).",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default: {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default: {DEFAULT_PORT})")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes sharing the port, each with its own connection pool (default: 1)",
    )
    serve.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="text lines or JSON lines (default: text)"
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=int,
        default=10,
        metavar="SECONDS",
        help="on SIGTERM, how long in-flight requests may take to finish (default: 10)",
    )
    serve.add_argument(
        "--allowed-host",
        metavar="HOST",
        action="append",
        dest="allowed_hosts",
        help="a Host header the MCP rail accepts besides loopback names, e.g. bank.example.com behind a reverse "
        f"proxy (`name`, `name:port` or `name:*`); repeat for several; default: ${ALLOWED_HOSTS_ENV} "
        "(comma-separated)",
    )
    serve.add_argument(
        "--quota-memories",
        metavar="N",
        help=f"each user's quota of memories unless an operator set theirs (`memorybank quota`); default: "
        f"${QUOTA_MEMORIES_ENV}, else {limits.QUOTA_MEMORIES_DEFAULT:_}",
    )
    serve.add_argument(
        "--quota-characters",
        metavar="N",
        help=f"each user's quota of characters (content, tags and snippets together); default: "
        f"${QUOTA_CHARACTERS_ENV}, else {limits.QUOTA_CHARACTERS_DEFAULT:_}",
    )
    rate_limit_options = serve.add_argument_group(
        "rate limits", "per user (and optionally per token), per operation; see docs/operations.md#rate-limits"
    )
    rate_limit_options.add_argument(
        "--rate-limit",
        metavar="RULE",
        action="append",
        dest="rate_limits",
        help="change a limit: OPERATION=N/UNIT with OPERATION save, search, list, delete or * (all), prefixed "
        "token. for a per-token limit; N/UNIT like 120/minute, or off; repeat for several (default: "
        f"${RATE_LIMITS_ENV}, comma-separated; else save=60/minute and 120/minute for the others)",
    )
    rate_limit_options.add_argument(
        "--rate-limit-storage",
        metavar="URL",
        help="where limits are counted: memory:// (each process alone) or redis://host:port/db, shared by every "
        f"worker and host (default: ${RATE_LIMIT_STORAGE_ENV}, else memory://)",
    )
    semantic.add_search_options(serve)
    _add_oauth_options(serve)
    secret_commands.add_secret_screen_option(serve)
    serve.set_defaults(run=_serve)

    mcp = commands.add_parser(
        "mcp",
        parents=[database],
        help="serve the MCP rail on stdio for one local user",
        description="Serve the capability rail (search_capabilities, execute_capability) on stdin/stdout for "
        "one local user with both scopes, for MCP clients such as Claude Desktop or Claude Code. stdout "
        "carries the protocol; messages go to stderr. The embedded SQLite database is created on first use.",
    )
    mcp.add_argument("--user", metavar="usr_…", required=True, help="the user whose memories the rail acts on")
    mcp.add_argument("--org", metavar="org_…", required=True, help="the user's organization (recorded on saves)")
    semantic.add_search_options(mcp)
    mcp.set_defaults(run=_mcp)

    prompt = commands.add_parser(
        "prompt",
        help="print the `## Memory Bank` agent prompt",
        description="Print the `## Memory Bank` section to append to an agent's prompt, for harnesses that do "
        "not read MCP server instructions.",
    )
    prompt.set_defaults(run=_prompt, db=None)

    migrate = commands.add_parser(
        "migrate",
        parents=[database],
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
    migrate.set_defaults(run=_migrate)

    importing = commands.add_parser(
        "import",
        parents=[database],
        help="load memories from a JSON Lines file",
        description="Load memories, one JSON object per line (docs/portability.md), in batches of 1,000 per "
        "transaction. A bad line is reported by its number and skipped; the exit status is 1 if any was. "
        "Lines holding credentials are reported and skipped, or refuse the whole file (--on-secret).",
    )
    importing.add_argument("file", metavar="FILE.jsonl", type=Path, help="the file to load")
    secret_commands.add_on_secret_option(importing)
    secret_commands.add_secret_screen_option(importing)
    importing.set_defaults(run=_import)

    exporting = commands.add_parser(
        "export",
        parents=[database],
        help="write one user's memories as JSON Lines",
        description="Write every memory of one user, one JSON object per line, in the format import reads: "
        "ids and timestamps included, so export then import round-trips.",
    )
    exporting.add_argument("--user", metavar="usr_…", required=True, help="whose memories")
    exporting.add_argument(
        "--out", metavar="FILE", type=Path, help="write here instead of stdout (mode 0600; never over a file)"
    )
    exporting.add_argument("--force", action="store_true", help="replace the --out file if it exists")
    exporting.set_defaults(run=_export)
    secret_commands.add_secrets_command(commands, database, _Parser)

    reindexing = commands.add_parser(
        "reindex",
        parents=[database],
        help="rebuild the search index of memories indexed by an older scheme",
        description="Recompute the owner-scoped search terms of memories written by an older tokenization "
        "scheme (or of all, with --all), in batches of 1,000, with a progress bar. Safe to stop and rerun.",
    )
    reindexing.add_argument("--all", action="store_true", help="re-index every memory, not only stale ones")
    reindexing.add_argument(
        "--embeddings",
        action="store_true",
        help="instead, write the vector of every memory lacking one of the embedding model (hybrid search), in "
        "batches of 64, online, with a progress bar; safe to stop and rerun",
    )
    reindexing.add_argument(
        "--embedder-model",
        metavar="DIR",
        help=f"with --embeddings: your own model.onnx and tokenizer.json (default: ${semantic.EMBEDDER_MODEL_ENV}, "
        "else all-MiniLM-L6-v2 int8)",
    )
    reindexing.set_defaults(run=_reindex)

    online = "in batches of 1,000, with a progress bar, while servers keep serving. Safe to stop and rerun."
    commands.add_parser(
        "encrypt",
        parents=[database],
        help="seal every plaintext memory with the key ring, online",
        description="Seal the memories stored in plaintext (content, tags, snippets, citation ids) and replace "
        f"their search terms with the blind index, {online} Needs a key ring (--key-file or ${KEY_FILE_ENV}).",
    ).set_defaults(run=_encrypt)

    keys = commands.add_parser(
        "keys", help="manage encryption keys", description="Create key rings, add and remove keys, re-seal rows."
    )
    key_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION", parser_class=_Parser)
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
        help=f"where to write it (default: {default_key_file(env)}, apart from the database's directory)",
    )
    keys_create.set_defaults(run=_keys_create, db=None)
    keys_add = key_commands.add_parser(
        "add",
        help="add a new primary key to a key ring file",
        description="Add a fresh key and make it primary (new writes), keeping the old keys to open old rows. "
        "Restart servers with the new ring, then run `memorybank keys rotate`.",
    )
    keys_add.add_argument("--key-file", metavar="FILE", type=Path, help=f"the ring (default: ${KEY_FILE_ENV})")
    keys_add.add_argument(
        "--new-index",
        action="store_true",
        help="derive the blind index from the new key too (`keys rotate` then re-tokenizes every memory)",
    )
    keys_add.set_defaults(run=_keys_add, db=None)
    keys_remove = key_commands.add_parser(
        "remove",
        help="remove a key no database needs any more from a key ring file",
        description="Remove a key that is neither primary nor the index key. Only after `memorybank keys rotate` "
        "reported it unused on every database that uses this ring.",
    )
    keys_remove.add_argument("key_id", metavar="KEY_ID")
    keys_remove.add_argument("--key-file", metavar="FILE", type=Path, help=f"the ring (default: ${KEY_FILE_ENV})")
    keys_remove.set_defaults(run=_keys_remove, db=None)
    key_commands.add_parser(
        "rotate",
        parents=[database],
        help="re-seal rows written under older keys, online",
        description="Re-seal memories sealed under a key that is no longer primary, and recompute their blind "
        "index if the index key changed or an older token format wrote it (format 2 kept the words' order), "
        f"{online} Every row stays readable throughout.",
    ).set_defaults(run=_keys_rotate)

    panel_link = commands.add_parser(
        "panel-link",
        parents=[database],
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
    panel_link.add_argument(
        "--public-url",
        "--url",
        dest="url",
        metavar="URL",
        help=f"the server's address, as `serve --public-url` (default: ${oauth_settings.PUBLIC_URL_ENV}, else "
        f"{_DEFAULT_SERVER}, where `serve` listens by default)",
    )
    panel_link.add_argument(
        "--revoke", action="store_true", help="end the user's panel sessions and unused links instead"
    )
    panel_link.set_defaults(run=_panel_link)

    _add_control_commands(commands, database)

    token = commands.add_parser("token", help="manage API tokens", description="Create, list and revoke API tokens.")
    token_commands = token.add_subparsers(dest="token_command", required=True, metavar="ACTION", parser_class=_Parser)
    create = token_commands.add_parser(
        "create",
        parents=[database],
        help="create a token; its secret is the last line of output",
        description="Create a token. stdout names the user and organization ids, then the secret, printed once as "
        "the last line and never again, after the database it was written to. Without --user a NEW user is created "
        "(said on stderr too); --user alone gives another token of the same person, in their organization.",
    )
    create.add_argument("--user", metavar="usr_…", help="the user it speaks for (default: a NEW user, with a new id)")
    create.add_argument(
        "--org",
        metavar="org_…",
        help="the user's organization (default: that of the user's latest token, else a new organization id)",
    )
    create.add_argument(
        "--scope",
        action="append",
        choices=sorted(KNOWN_SCOPES),
        help="a scope to grant; repeat for several (default: all of them)",
    )
    create.set_defaults(run=_token_create)
    listing = token_commands.add_parser(
        "list", parents=[database], help="list tokens (never their secrets)", description="List tokens."
    )
    listing.add_argument("--user", metavar="usr_…", help="only this user's tokens")
    listing.set_defaults(run=_token_list)
    revoke = token_commands.add_parser(
        "revoke",
        parents=[database],
        help="revoke a token by id or secret",
        description="Revoke a token; it stops working on the next request.",
    )
    revoke.add_argument("token", metavar="TOKEN_OR_ID", help="the token's id (tok_…) or its secret")
    revoke.set_defaults(run=_token_revoke)

    purge = commands.add_parser(
        "purge",
        parents=[database],
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
    purge.set_defaults(run=_purge)
    return parser


def _subject_options(parser: argparse.ArgumentParser, *, everyone: bool) -> None:
    subject = parser.add_mutually_exclusive_group(required=True)
    subject.add_argument("--user", metavar="usr_…", help="one user")
    subject.add_argument("--org", metavar="org_…", help="one organization: every member, in it")
    if everyone:
        subject.add_argument("--all", action="store_true", help="everyone: the kill switch")


def _add_control_commands(commands: argparse._SubParsersAction[_Parser], database: _Parser) -> None:
    gate = commands.add_parser(
        "gate",
        help="switch memory on or off for a user, an organization or everyone",
        description="Switch memory on or off, effective on the next request of every server process. Off "
        "anywhere wins: the kill switch (--all) over an organization over a user. A switched-off account gets "
        "403 memory_disabled on every memory route and no memory capability on the MCP rail; its memories stay.",
    )
    gate_commands = gate.add_subparsers(dest="gate_command", required=True, metavar="ACTION", parser_class=_Parser)
    for action, enabled in (("on", True), ("off", False)):
        switch = gate_commands.add_parser(
            action,
            parents=[database],
            help=f"switch memory {action}",
            description=f"Switch memory {action} for a user, an organization, or everyone (--all).",
        )
        _subject_options(switch, everyone=True)
        switch.set_defaults(run=_gate_switch, enabled=enabled)
    _show_command(
        gate_commands,
        database,
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
    quota_commands = quota.add_subparsers(dest="quota_command", required=True, metavar="ACTION", parser_class=_Parser)
    quota_set = quota_commands.add_parser(
        "set",
        parents=[database],
        help="set a user's or an organization's quota",
        description="Set a quota; a measure not given keeps its current setting. Nothing stored is removed: "
        "a user over a lowered quota cannot save until they delete enough.",
    )
    _subject_options(quota_set, everyone=False)
    quota_set.add_argument("--memories", metavar="N", type=_whole_number, help="the maximum number of memories")
    quota_set.add_argument(
        "--characters", metavar="N", type=_whole_number, help="the maximum characters of all memories together"
    )
    quota_set.set_defaults(run=_quota_set)
    quota_unset = quota_commands.add_parser(
        "unset",
        parents=[database],
        help="forget a user's or an organization's quota",
        description="Forget the quota set for a user or an organization, so the next level's applies (the "
        "organization's, then the server's default). A gate switch set for them stays as it is.",
    )
    _subject_options(quota_unset, everyone=False)
    quota_unset.set_defaults(run=_quota_unset)
    _show_command(
        quota_commands,
        database,
        "quota",
        help="show the quotas set, or one user's quota and use",
        description="Without --user: every quota set. With --user (and --org): the quota that applies to them "
        f"and what they use. The default shown is ${QUOTA_MEMORIES_ENV} / ${QUOTA_CHARACTERS_ENV} or the "
        "built-in one; a server started with --quota-* options applies its own.",
    )


def _show_command(
    commands: argparse._SubParsersAction[_Parser], database: _Parser, what: str, *, help: str, description: str
) -> None:
    show = commands.add_parser("show", parents=[database], help=help, description=description)
    show.add_argument("--user", metavar="usr_…", help="the user to check")
    show.add_argument("--org", metavar="org_…", help="the organization the user works in")
    show.set_defaults(run=_controls_show, what=what)


def _whole_number(value: str) -> int:
    try:
        return parse_quota_number(value, "quota")
    except InvalidInputError as error:
        raise argparse.ArgumentTypeError(error.problems[0].message) from error


def _add_oauth_options(serve: argparse.ArgumentParser) -> None:
    oauth = serve.add_argument_group(
        "OAuth (an identity provider's access tokens beside the built-in tokens; docs/auth.md)"
    )
    oauth.add_argument(
        "--public-url",
        metavar="URL",
        help=f"the server's public base URL (https://bank.example.com); the OAuth resource is URL/mcp/agent; "
        f"default: ${oauth_settings.PUBLIC_URL_ENV}, else http://HOST:PORT on a loopback bind",
    )
    oauth.add_argument(
        "--oauth-issuer",
        metavar="URL",
        action="append",
        default=[],
        help=f"trust access tokens from this issuer; repeat for several (default: ${oauth_settings.ISSUERS_ENV})",
    )
    oauth.add_argument(
        "--oauth-audience",
        metavar="AUD",
        action="append",
        default=[],
        help=f"an accepted token audience; repeat for several (default: ${oauth_settings.AUDIENCES_ENV}, "
        "else the resource URL)",
    )
    oauth.add_argument(
        "--oauth-scope",
        metavar="OURS=THEIRS",
        action="append",
        default=[],
        help=f"the issuer scope granting mcp:read or mcp:write, e.g. mcp:read=memory.read; repeatable "
        f"(default: ${oauth_settings.SCOPES_ENV}, else the same names)",
    )
    oauth.add_argument(
        "--oauth-user-claim",
        metavar="[ISSUER=]CLAIM",
        action="append",
        default=[],
        help=f"the claim naming the person instead of sub (e.g. oid), at every issuer or at ISSUER; user ids stay "
        f"derived from the issuer and the claim; repeatable (default: ${oauth_settings.USER_CLAIM_ENV})",
    )
    oauth.add_argument(
        "--oauth-user-id-claim",
        metavar="ISSUER=CLAIM",
        action="append",
        default=[],
        help=f"ISSUER's CLAIM holds this server's usr_ id, used as is: trusts ISSUER with EVERY user id here; "
        f"repeatable (default: ${oauth_settings.USER_ID_CLAIM_ENV})",
    )
    oauth.add_argument("--oauth-org-claim", metavar="CLAIM", help="the claim naming the person's organization")
    oauth.add_argument("--oauth-default-org", metavar="org_…", help="the organization of people whose token names none")
    oauth.add_argument(
        "--oauth-introspection-issuer",
        metavar="URL",
        help=f"check opaque tokens with this issuer's introspection endpoint, as the client "
        f"${oauth_settings.CLIENT_ID_ENV} / ${oauth_settings.CLIENT_SECRET_ENV}",
    )
    panel = serve.add_argument_group(
        "Panel sign-in with the identity provider (OpenID Connect, authorization code + PKCE; docs/auth.md)"
    )
    panel.add_argument(
        "--oauth-panel-client-id",
        metavar="ID",
        help=f"the panel's client at the provider; offers 'Sign in with <provider>' "
        f"(default: ${oauth_settings.PANEL_CLIENT_ID_ENV}); its redirect URI is PUBLIC_URL/panel/oidc/callback",
    )
    panel.add_argument(
        "--oauth-panel-issuer",
        metavar="URL",
        help=f"which --oauth-issuer the panel signs people in with (default: ${oauth_settings.PANEL_ISSUER_ENV}, "
        "else the only one)",
    )
    panel.add_argument(
        "--oauth-panel-name",
        metavar="NAME",
        help=f"the provider's name on the button (default: ${oauth_settings.PANEL_NAME_ENV}, else the issuer's host)",
    )
    panel.add_argument(
        "--oauth-panel-client-secret-file",
        metavar="PATH",
        help=f"a file holding the panel client's secret (default: ${oauth_settings.PANEL_CLIENT_SECRET_FILE_ENV}, "
        f"else ${oauth_settings.PANEL_CLIENT_SECRET_ENV}, else a public client); never the secret itself",
    )


def oauth_options(args: argparse.Namespace) -> oauth_settings.OAuthOptions:
    """The OAuth options of a parsed `serve` command line."""
    return oauth_settings.OAuthOptions(
        public_url=args.public_url,
        issuers=args.oauth_issuer,
        audiences=args.oauth_audience,
        scopes=args.oauth_scope,
        user_claims=args.oauth_user_claim,
        user_id_claims=args.oauth_user_id_claim,
        org_claim=args.oauth_org_claim,
        default_org=args.oauth_default_org,
        introspection_issuer=args.oauth_introspection_issuer,
        panel_client_id=args.oauth_panel_client_id,
        panel_issuer=args.oauth_panel_issuer,
        panel_name=args.oauth_panel_name,
        panel_client_secret_file=args.oauth_panel_client_secret_file,
    )


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None) -> int:
    """Run the command line; return the exit status."""
    environment = os.environ if env is None else env
    args = build_parser(environment).parse_args(argv)
    choice = choose_database(args.db, environment)
    args.keys = choose_key_ring(getattr(args, "key_file", None), environment)
    args.environment = environment
    run: Callable[[argparse.Namespace, DatabaseChoice, TextIO], None] = args.run
    try:
        run(args, choice, sys.stdout)
    except CommandError as error:
        return _fail(str(error), error.status)
    except InvalidInputError as error:
        problems = "; ".join(f"{_OPTION_NAMES.get(p.path, p.path)} {p.message}" for p in error.problems)
        return _fail(problems, EXIT_BAD_INPUT)
    except FileExistsError as error:
        return _fail(f"{error.filename} exists already: a key ring is never overwritten", EXIT_FAILURE)
    except UnavailableError as error:
        return _fail(f"{error} ({redacted(choice.url)})", EXIT_FAILURE)
    except MemoryBankError as error:  # e.g. SchemaNotReadyError: its message names the fix
        return _fail(str(error), EXIT_FAILURE)
    except OSError as error:
        return _fail(f"cannot prepare the database location: {error}", EXIT_FAILURE)
    return EXIT_OK


def _fail(message: str, status: int) -> int:
    one_line = " ".join(message.split())
    sys.stderr.write(f"{PROGRAM}: error: {one_line}\n")
    return status


def _describe_rate_limits(rate_limits: RateLimits, choice: RateLimitChoice, *, workers: int) -> str:
    from adapters_ratelimit import describe_storage  # scheme, host, port and database: never a password

    rules = ", ".join(rate_limits.policy.describe()) or "none"
    line = f"{PROGRAM}: rate limits {rules}; counted in {describe_storage(choice.storage_url)}"
    if workers > 1 and choice.storage_url.startswith("memory"):
        line += f" by each of the {workers} workers alone (--rate-limit-storage redis://... shares them)"
    return line


def _serve(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    import uvicorn

    from memorybank import composition, serving
    from memorybank.logs import logging_config

    if not 0 <= args.port <= 65535:
        raise CommandError("--port must be from 0 to 65535", EXIT_BAD_INPUT)
    if not 1 <= args.workers <= 64:
        raise CommandError("--workers must be from 1 to 64", EXIT_BAD_INPUT)
    if not 0 <= args.shutdown_timeout <= 3600:
        raise CommandError("--shutdown-timeout must be from 0 to 3600 seconds", EXIT_BAD_INPUT)
    if args.workers > 1 and not serving.shared_between_processes(choice.url):
        raise CommandError(
            "--workers above 1 needs a database file or server: in-memory SQLite lives in one process",
            EXIT_BAD_INPUT,
        )
    allowed_hosts = choose_allowed_hosts(args.allowed_hosts, args.environment)
    quota = choose_quota(args.quota_memories, args.quota_characters, args.environment)
    secret_screen = secret_settings.choose_secret_screen(args.secret_screen, args.environment)
    limits_choice = choose_rate_limits(args.rate_limit_storage, args.rate_limits, args.environment)
    rate_limits = composition.build_rate_limits(limits_choice)  # checks the rules and URL before anything starts
    options = oauth_options(args)
    oauth = oauth_settings.choose_oauth(options, args.environment, host=args.host, port=args.port)
    panel_sign_in = oauth_settings.choose_panel_sign_in(options, args.environment, oauth)
    search = semantic.choose_search(args.search, args.embedder_model, args.environment)
    # Before the database is opened: a missing extra or model is one line, and nothing is held. A
    # supervisor of several workers only checks the files; each worker loads its own model.
    embedder = None
    if search.hybrid and args.workers > 1:
        semantic.check_embedder(search)
    elif search.hybrid:
        embedder = semantic.load_embedder(search)
    storage = composition.open_ready_storage(choice, args.keys)
    issuers = composition.connect_issuers(oauth)
    try:
        if embedder is not None:
            semantic.apply_search(storage, search, embedder)
        # Bound here, before saying "serving": a port in use is one clear line, not a log after the banner.
        listener = _listen(args.host, args.port)
        port = listener.getsockname()[1]
        base = f"http://{_url_host(args.host)}:{port}"
        print(f"{PROGRAM}: {storage.describe_mode()}", file=out)
        print(f"{PROGRAM}: {semantic.describe(storage, search)}", file=out)
        workers = f", {args.workers} workers" if args.workers > 1 else ""
        print(f"{PROGRAM}: serving {base} ({_rail_at(base)}) on {redacted(choice.url)}{workers}", file=out, flush=True)
        print(_describe_rate_limits(rate_limits, limits_choice, workers=args.workers), file=out, flush=True)
        print(f"{PROGRAM}: {secret_settings.describe(secret_screen)}", file=out, flush=True)
        if oauth is not None and panel_sign_in is not None:
            print(
                f"{PROGRAM}: panel sign-in with {panel_sign_in.issuer} as client {panel_sign_in.client_id}; "
                f"its redirect URI: {composition.panel_callback_url(oauth)}",
                file=out,
                flush=True,
            )
        if args.workers > 1:
            # Each worker opens its own storage and issuers, and loads its own embedder (memorybank.serving);
            # the checks above stand.
            listener.close()
            storage.close()
            serving.run(
                serving.ServeOptions(
                    database_url=choice.url,
                    bind_host=args.host,
                    port=port,
                    oauth=options,
                    allowed_hosts=list(allowed_hosts),
                    key_file=str(args.key_file) if args.key_file is not None else None,
                    quota_memories=quota.max_memories,
                    quota_characters=quota.max_characters,
                    rate_limit_storage=limits_choice.storage_url,
                    rate_limits=list(limits_choice.rules),
                    secret_screen=secret_screen,
                    search=search.mode,
                    embedder_model=search.embedder_model,
                ),
                workers=args.workers,
                log_format=args.log_format,
                shutdown_timeout=args.shutdown_timeout,
            )
            return
        app = composition.build_server_app(
            storage,
            bind_host=args.host,
            allowed_hosts=allowed_hosts,
            metrics_token=args.environment.get(serving.METRICS_TOKEN_ENV) or None,
            issuers=issuers,
            default_quota=quota,
            rate_limits=rate_limits,
            panel_sign_in=panel_sign_in,
            secret_screen=secret_screen,
        )
        # No uvicorn access log: it prints query strings, and search text must never be logged.
        # The app logs its own access event (operationId, status, timing, request id).
        config = uvicorn.Config(
            app,
            access_log=False,
            http=serving.HTTP_PARSER,
            log_level="info",
            log_config=logging_config(args.log_format),
            timeout_graceful_shutdown=args.shutdown_timeout,
        )
        with listener:
            uvicorn.Server(config).run(sockets=[listener])
    finally:
        if issuers is not None:
            issuers.close()
        storage.close()


def _rail_at(base: str) -> str:
    """Where the MCP rail answers, or that it is off (the `mcp` extra is missing): the banner never promises it."""
    from memorybank import composition

    try:
        composition.require_mcp()
    except composition.McpUnavailableError:
        return f"MCP rail off: {install_command(composition.MCP_EXTRA)}"
    return f"MCP: {base}/mcp/agent"


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, as uvicorn would bind it (SO_REUSEADDR, IPv6 for a `:` host)."""
    try:
        return listeners.tcp_listener(host, port)
    except socket.gaierror as error:  # an unknown host name (a subclass of OSError, so first)
        raise CommandError(f"cannot listen on {host}:{port}: {error.strerror}", EXIT_BAD_INPUT) from error
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise CommandError(
                f"port {port} on {host} is already in use: stop what listens there or choose another with --port"
            ) from error
        raise CommandError(f"cannot listen on {host}:{port}: {error.strerror or error}") from error


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _mcp(args: argparse.Namespace, choice: DatabaseChoice, _out: TextIO) -> None:
    import anyio

    from memorybank import composition

    _require_mcp()
    from adapters_mcp.stdio_transport import serve_stdio  # see composition.require_mcp

    # Validate before touching the database, so a typo in a client's config is reported at once.
    ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")
    ids.parse_id(args.org, prefix=ids.ORGANIZATION_PREFIX, field="org")
    secret_screen = secret_settings.choose_secret_screen(None, args.environment)
    search = semantic.choose_search(args.search, args.embedder_model, args.environment)
    embedder = semantic.load_embedder(search) if search.hybrid else None
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        semantic.apply_search(storage, search, embedder)
        services = composition.build_services(storage, secret_screen=secret_screen)
        server = composition.build_local_rail(services, user_id=args.user, org_id=args.org)
        # stdout is the protocol: every message goes to stderr, which MCP clients keep as the server's log.
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s"
        )
        anyio.run(serve_stdio, server)
    finally:
        storage.close()


def _prompt(_args: argparse.Namespace, _choice: DatabaseChoice, out: TextIO) -> None:
    # Plain text: needs neither the MCP SDK nor the database.
    from adapters_mcp.prompt import MEMORY_BANK_PROMPT

    out.write(MEMORY_BANK_PROMPT)


def _require_mcp() -> None:
    from memorybank import composition

    try:
        composition.require_mcp(stdio_only=True)
    except composition.McpUnavailableError as error:
        raise CommandError(f"this command needs the MCP SDK: {install_command(composition.MCP_EXTRA)}") from error


def _migrate(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from memorybank import composition

    if args.shards is not None:
        _migrate_sharded(args.shards, choice, args.keys, out)
        return
    storage, created_database = composition.open_storage_for_migration(choice, args.keys)
    try:
        report = storage.migrate()
        storage.check_ready()
        mode = storage.describe_mode()
    finally:
        storage.close()
    where = redacted(choice.url)
    if not created_database and not report.changed:
        print(f"{PROGRAM}: {where} is already up to date (revision {report.revision}); nothing to do", file=out)
        print(f"{PROGRAM}: {mode}", file=out)
        return
    done = []
    if created_database:
        done.append("created the database (utf8mb4)")
    if report.applied:
        done.append(f"applied revision{'s' if len(report.applied) > 1 else ''} {', '.join(report.applied)}")
    if report.created_search_structures:
        done.append("created the full-text search indexes")
    if report.reindexed:
        done.append(f"re-indexed {_memories(report.reindexed)}")
    if report.measured:
        done.append(f"counted the quota use of {_memories(report.measured)}")
    print(f"{PROGRAM}: migrated {where} to revision {report.revision}: {'; '.join(done)}", file=out)
    print(f"{PROGRAM}: {mode}", file=out)


def _migrate_sharded(shards_option: str, choice: DatabaseChoice, keys: KeyRingChoice | None, out: TextIO) -> None:
    from adapters_mysql import split_shard_urls
    from memorybank import composition

    if choice.embedded_path is not None:
        raise CommandError("--shards needs --db (or $MEMORYBANK_DATABASE_URL) naming the Spider head", EXIT_BAD_INPUT)
    shards = split_shard_urls(shards_option)
    composition.migrate_sharded(choice, shards, keys)
    print(
        f"{PROGRAM}: the schema of {len(shards)} data nodes and the head {redacted(choice.url)} is up to date", file=out
    )


def _import(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from memorybank import composition, portability

    if not args.file.is_file():
        raise CommandError(f"{args.file} is not a readable file", EXIT_BAD_INPUT)
    screen = secret_settings.build_secret_screen(
        secret_settings.choose_secret_screen(args.secret_screen, args.environment)
    )
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        report = portability.import_file(
            args.file, storage.store, show_progress=sys.stderr.isatty(), screen=screen, on_secret=args.on_secret
        )
    finally:
        storage.close()
    for problem in report.skipped:
        sys.stderr.write(f"{PROGRAM}: skipped {problem.describe()}\n")
    secret_commands.report_import(report, out)
    skipped = len(report.skipped)
    print(f"{PROGRAM}: imported {_memories(report.imported)}, skipped {_counted(skipped, 'line')}", file=out)
    if report.refused:
        held = len(report.secrets)
        hold = "holds" if held == 1 else "hold"
        raise CommandError(f"{_counted(held, 'line')} {hold} credentials (listed above): nothing was imported")
    if report.skipped or report.secrets:
        left_out = skipped + len(report.secrets)
        were = "was" if left_out == 1 else "were"
        raise CommandError(f"{_counted(left_out, 'line')} {were} left out (listed above)", EXIT_FAILURE)


def _export(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from memorybank import composition, portability

    # Validate before touching the database.
    ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")
    if args.out is not None and not args.force and os.path.lexists(args.out):
        raise CommandError(_export_exists(args.out), EXIT_BAD_INPUT)
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        if args.out is None:
            count = portability.export_user(storage.store, args.user, out)
        else:
            with portability.private_output(args.out, replace=args.force) as file:
                count = portability.export_user(storage.store, args.user, file)
    except FileExistsError as error:  # created meanwhile: still never overwritten
        raise CommandError(_export_exists(args.out), EXIT_BAD_INPUT) from error
    finally:
        storage.close()
    # stdout may be the export itself: the summary goes to stderr.
    sys.stderr.write(f"{PROGRAM}: exported {_memories(count)} of {args.user}\n")


def _export_exists(path: Path) -> str:
    return f"{path} exists already: an export never overwrites a file; pass --force to replace it"


def _reindex(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from memorybank import composition, portability

    if args.embeddings:
        _reindex_embeddings(args, choice, out)
        return
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        report = portability.reindex_with_progress(storage, everything=args.all, show_progress=sys.stderr.isatty())
    finally:
        storage.close()
    print(f"{PROGRAM}: re-indexed {_memories(report.rewritten)}", file=out)
    _fail_on_broken(report)


def _reindex_embeddings(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from memorybank import composition

    if args.all:
        raise CommandError("--all re-indexes search terms; --embeddings writes only missing vectors", EXIT_BAD_INPUT)
    search = semantic.SearchChoice(
        mode="hybrid",
        embedder_model=semantic.choose_search("hybrid", args.embedder_model, args.environment).embedder_model,
    )
    embedder = semantic.load_embedder(search)
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        semantic.apply_search(storage, search, embedder)
        report = semantic.embed_with_progress(storage, show_progress=sys.stderr.isatty())
    finally:
        storage.close()
    print(f"{PROGRAM}: embedded {report.embedded} memories with {embedder.model_id}", file=out)
    if report.skipped:
        raise CommandError(
            f"{report.skipped} memories were not embedded: they do not open (logged by id) or were deleted meanwhile",
            EXIT_FAILURE,
        )


def _encrypt(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    if args.keys is None:
        raise CommandError(
            f"encrypt needs a key ring: create one with `{PROGRAM} keys create`, then pass --key-file or set "
            f"{KEY_FILE_ENV}",
            EXIT_BAD_INPUT,
        )
    _reseal(args, choice, out, verb="sealed")


def _keys_rotate(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    if args.keys is None:
        raise CommandError(f"keys rotate needs the key ring: pass --key-file or set {KEY_FILE_ENV}", EXIT_BAD_INPUT)
    _reseal(args, choice, out, verb="re-sealed")


def _reseal(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO, *, verb: str) -> None:
    from memorybank import composition, portability

    storage = composition.open_ready_storage(choice, args.keys)
    try:
        registered = set(storage.sealing_status().registered)
        report = portability.reindex_with_progress(storage, show_progress=sys.stderr.isatty())
        status = storage.sealing_status()
        mode = storage.describe_mode()
    finally:
        storage.close()
    print(f"{PROGRAM}: {verb} {_memories(report.rewritten)}", file=out)
    print(f"{PROGRAM}: {mode}", file=out)
    for key_id in sorted(registered - set(status.registered)):
        print(f"{PROGRAM}: key {key_id} is no longer used by this database", file=out)
    _fail_on_broken(report)


def _fail_on_broken(report: ReindexReport) -> None:
    if report.broken:
        raise CommandError(
            f"{_memories(report.broken)} {'does' if report.broken == 1 else 'do'} not open with this key ring and "
            f"{'was' if report.broken == 1 else 'were'} left as {'it is' if report.broken == 1 else 'they are'} "
            "(ids in the log)"
        )


def _key_file(args: argparse.Namespace) -> Path:
    if args.keys is None or args.keys.path is None:
        raise CommandError(f"name the key ring file with --key-file or {KEY_FILE_ENV}", EXIT_BAD_INPUT)
    path: Path = args.keys.path
    return path


def _keys_create(args: argparse.Namespace, _choice: DatabaseChoice, out: TextIO) -> None:
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


def _keys_add(args: argparse.Namespace, _choice: DatabaseChoice, out: TextIO) -> None:
    from adapters_crypto import load_key_ring, write_key_ring

    path = _key_file(args)
    ring = load_key_ring(path).with_new_primary(new_index=args.new_index)
    write_key_ring(path, ring, replace=True)
    print(f"{PROGRAM}: key {ring.primary} is now primary in {path}; the older keys still open old rows", file=out)
    print(f"Restart every server with this ring, then run `{PROGRAM} keys rotate`.", file=out)


def _keys_remove(args: argparse.Namespace, _choice: DatabaseChoice, out: TextIO) -> None:
    from adapters_crypto import load_key_ring, write_key_ring

    path = _key_file(args)
    ring = load_key_ring(path).without(args.key_id)
    write_key_ring(path, ring, replace=True)
    print(f"{PROGRAM}: removed key {args.key_id} from {path}", file=out)


def _with_tokens(
    choice: DatabaseChoice, work: Callable[[composition.Services], None], keys: KeyRingChoice | None
) -> None:
    from memorybank import composition

    storage = composition.open_ready_storage(choice, keys)
    try:
        work(composition.build_services(storage))
    finally:
        storage.close()


def _subject(args: argparse.Namespace) -> tuple[SubjectKind, str | None]:
    """The subject a control command names; its id is checked before the database is touched."""
    if getattr(args, "all", False):
        return SubjectKind.ALL, None
    kind, value = (SubjectKind.USER, args.user) if args.user is not None else (SubjectKind.ORG, args.org)
    return kind, clean_subject_id(kind, value)


def _describe_subject(kind: SubjectKind, subject_id: str | None) -> str:
    return "everyone" if kind is SubjectKind.ALL else f"{kind.value} {subject_id}"


def _with_controls(args: argparse.Namespace, choice: DatabaseChoice, work: Callable[[MemoryControls], None]) -> None:
    from memorybank import composition

    quota = choose_quota(None, None, args.environment)

    def run(services: composition.Services) -> None:
        controls = services.controls
        if controls is None:  # pragma: no cover - build_services always wires them
            raise CommandError("this build has no operator controls")
        work(controls)

    storage = composition.open_ready_storage(choice, args.keys)
    try:
        run(composition.build_services(storage, default_quota=quota))
    finally:
        storage.close()


def _gate_switch(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    kind, subject_id = _subject(args)

    def switch(controls: MemoryControls) -> None:
        controls.set_gate(kind, subject_id, enabled=args.enabled)
        state = "on" if args.enabled else "off"
        print(f"{PROGRAM}: memory switched {state} for {_describe_subject(kind, subject_id)}", file=out)
        if args.enabled and kind is not SubjectKind.ALL:
            print("(an organization or the kill switch that is off still keeps it off)", file=out)

    _with_controls(args, choice, switch)


def _quota_set(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    kind, subject_id = _subject(args)
    if args.memories is None and args.characters is None:
        raise CommandError("give --memories N, --characters N, or both", EXIT_BAD_INPUT)

    def set_quota(controls: MemoryControls) -> None:
        control = controls.set_quota(kind, subject_id, max_memories=args.memories, max_characters=args.characters)
        print(
            f"{PROGRAM}: quota of {_describe_subject(kind, subject_id)}: "
            f"{_limit(control.max_memories)} memories, {_limit(control.max_characters)} characters",
            file=out,
        )

    _with_controls(args, choice, set_quota)


def _quota_unset(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    kind, subject_id = _subject(args)

    def unset_quota(controls: MemoryControls) -> None:
        subject = _describe_subject(kind, subject_id)
        if controls.unset_quota(kind, subject_id):
            print(f"{PROGRAM}: quota of {subject} unset: the next level's applies", file=out)
        else:
            print(f"{PROGRAM}: no quota was set for {subject}", file=out)

    _with_controls(args, choice, unset_quota)


def _limit(value: int | None) -> str:
    return "default" if value is None else f"{value:_}"


def _controls_show(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
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
                print(f"{subject}: {_limit(c.max_memories)} memories, {_limit(c.max_characters)} characters", file=out)

    _with_controls(args, choice, show)


def _off_by(kind: SubjectKind | None) -> str:
    return (
        {SubjectKind.ALL: "everyone", SubjectKind.ORG: "the organization", SubjectKind.USER: "the user"}.get(kind, "-")
        if kind is not None
        else "-"
    )


def _token_create(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    # Validate before touching the database, so a typo never needs a reachable server to be reported.
    user_id = args.user if args.user is not None else ids.new_id(ids.USER_PREFIX)
    ids.parse_id(user_id, prefix=ids.USER_PREFIX, field="user")
    if args.org is not None:
        ids.parse_id(args.org, prefix=ids.ORGANIZATION_PREFIX, field="org")
    scopes = frozenset(args.scope) if args.scope else KNOWN_SCOPES

    def create(services: composition.Services) -> None:
        org_id, notice = args.org, None
        if org_id is None and args.user is not None:
            # Another token of a known person keeps their organization, as panel-link does.
            org_id = _known_org(services, user_id)
        if org_id is None:
            org_id = ids.new_id(ids.ORGANIZATION_PREFIX)
            notice = f"no --org given and {user_id} has no token yet: created a new organization id {org_id}"
        issued = services.tokens.issue(user_id=user_id, org_id=org_id, scopes=scopes)
        if args.user is None:
            # On stderr too, so it shows when stdout is captured (TOKEN=$(memorybank token create | tail -n 1)).
            notice = (
                f"created a NEW user {user_id} (organization {org_id}), with no memories yet; "
                f"another token for this same person: {PROGRAM} token create --user {user_id} --org {org_id}"
            )
        if notice is not None:
            sys.stderr.write(f"{PROGRAM}: {notice}\n")
        print(f"user: {user_id}", file=out)
        print(f"org: {org_id}", file=out)
        # A token in another database than the server's is an unexplained 401: say where it went.
        print(f"database: {redacted(choice.url)}", file=out)
        print(f"token: {issued.token.id}, scopes: {_scopes(issued.token)}", file=out)
        print("the secret below is shown only now; store it safely:", file=out)
        print(issued.secret, file=out)

    _with_tokens(choice, create, args.keys)


def _token_list(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    if args.user is not None:
        ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")

    def show(services: composition.Services) -> None:
        tokens = services.tokens.list(user_id=args.user)
        if not tokens:
            print("no tokens", file=out)
            return
        rows = [("ID", "USER", "ORG", "SCOPES", "CREATED", "REVOKED")]
        rows += [
            (
                t.id,
                t.user_id,
                t.org_id,
                _scopes(t),
                t.created_at.isoformat(timespec="seconds"),
                t.revoked_at.isoformat(timespec="seconds") if t.revoked_at else "-",
            )
            for t in tokens
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), file=out)

    _with_tokens(choice, show, args.keys)


def _token_revoke(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    def revoke(services: composition.Services) -> None:
        try:
            token = services.tokens.revoke(args.token)
        except NotFoundError as error:
            raise CommandError("no live token matches that id or secret") from error
        # The sessions already fail their next request (they check the token); this ends them for the record.
        ended = services.panel_sessions.end_made_from(token.id)
        print(f"revoked token {token.id} of {token.user_id}; ended {ended} panel sessions made from it", file=out)

    _with_tokens(choice, revoke, args.keys)


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


def _panel_link(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    # Validate before touching the database.
    ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")
    if args.org is not None:
        ids.parse_id(args.org, prefix=ids.ORGANIZATION_PREFIX, field="org")
    ttl = parse_ttl(args.ttl)
    check_link_ttl(ttl)
    # The server's address as `serve` itself names it: --public-url, else $MEMORYBANK_PUBLIC_URL, else its default.
    server = args.url or args.environment.get(oauth_settings.PUBLIC_URL_ENV, "").strip() or None
    base = urlsplit(server or _DEFAULT_SERVER)
    if base.scheme not in {"http", "https"} or not base.netloc:
        raise CommandError("--public-url must be the server's http:// or https:// address", EXIT_BAD_INPUT)
    address = (server or _DEFAULT_SERVER).rstrip("/")

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
                f"{PROGRAM}: the link names {_DEFAULT_SERVER}, where `serve` listens by default; for another "
                f"address pass --public-url or set {oauth_settings.PUBLIC_URL_ENV}\n"
            )

    _with_tokens(choice, link, args.keys)


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
    org_id = _known_org(services, user_id)
    if org_id is None:
        raise CommandError(
            f"--org is required: {user_id} has no API token to take the organization from", EXIT_BAD_INPUT
        )
    return org_id


def _known_org(services: composition.Services, user_id: str) -> str | None:
    """The organization of the user's latest API token, or None for a user without one."""
    tokens = services.tokens.list(user_id=user_id)
    return tokens[-1].org_id if tokens else None


def _purge(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from tqdm import tqdm

    from memorybank import composition
    from memorybank_core.validation import clean_count

    # Everything is checked before the database is opened: a typo or a wildcard touches nothing.
    subject = PurgeSubject.user(args.user) if args.user is not None else PurgeSubject.organization(args.org)
    batch_size = clean_count(args.batch_size, path="batch_size", bound=limits.PURGE_BATCH)
    pause_ms = clean_count(args.pause_ms, path="pause_ms", bound=limits.PURGE_PAUSE_MS)
    if args.receipt is not None and args.receipt.exists():
        raise CommandError(f"{args.receipt} exists already: a receipt is never overwritten", EXIT_BAD_INPUT)
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        offboarding = composition.build_offboarding(storage)
        purge = offboarding.purge_user if args.user is not None else offboarding.purge_organization
        receipt = purge(subject.id, dry_run=True, batch_size=batch_size)
        if not args.dry_run:
            show = sys.stderr.isatty()
            with tqdm(total=receipt.counts.memories, unit="memory", disable=not show, file=sys.stderr) as bar:
                receipt = purge(subject.id, batch_size=batch_size, pause_ms=pause_ms, progress=bar.update)
    finally:
        storage.close()
    text = json.dumps(receipt.to_json(), indent=2)
    if args.receipt is not None:
        args.receipt.write_text(text + "\n", encoding="utf-8")
    print(text, file=out)


def _counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 line`, `2 lines`, `0 lines`."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def _memories(count: int) -> str:
    return _counted(count, "memory", "memories")


def _scopes(token: ApiToken) -> str:
    return " ".join(sorted(token.scopes))
