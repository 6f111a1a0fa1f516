"""Where the database is: `--db`, else `MEMORYBANK_DATABASE_URL`, else the embedded SQLite file.

Pure functions of their arguments (the environment is passed in), so nothing is
read at import time and tests need no monkeypatching.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import attrs

from memorybank_core import InvalidInputError, Quota, limits

#: A Host header value: a DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port or `:*`.
_HOST_HEADER = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::(?:[0-9]{1,5}|\*))?$")

DATABASE_URL_ENV = "MEMORYBANK_DATABASE_URL"
"""The environment variable naming the database when `--db` is not given."""

DATABASE_FILE_NAME = "memorybank.sqlite3"

ALLOWED_HOSTS_ENV = "MEMORYBANK_ALLOWED_HOSTS"
"""The environment variable listing (comma-separated) the Host headers the MCP rail accepts, for `serve`."""


@attrs.frozen(kw_only=True)
class DatabaseChoice:
    """The database a command will use, and why."""

    url: str
    source: str
    """`--db`, the environment variable's name, or `default`."""
    embedded_path: Path | None = None
    """The SQLite file, when the embedded default was chosen."""


#: The embedded database's directory, and the key ring's default one: entered by their owner only.
PRIVATE_DIRECTORY_MODE = 0o700


def data_home(env: Mapping[str, str]) -> Path:
    """`$XDG_DATA_HOME`, else `~/.local/share` (the XDG Base Directory default)."""
    return _xdg_home(env, "XDG_DATA_HOME", ".local/share")


def config_home(env: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME`, else `~/.config` (the XDG Base Directory default)."""
    return _xdg_home(env, "XDG_CONFIG_HOME", ".config")


def _xdg_home(env: Mapping[str, str], variable: str, default: str) -> Path:
    configured = env.get(variable, "").strip()
    if configured and Path(configured).is_absolute():
        return Path(configured)
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / default


def default_database_path(env: Mapping[str, str]) -> Path:
    """The embedded database file: `<data home>/memorybank/memorybank.sqlite3`."""
    return data_home(env) / "memorybank" / DATABASE_FILE_NAME


def choose_database(cli_value: str | None, env: Mapping[str, str]) -> DatabaseChoice:
    """Pick the database URL: the `--db` value, else the environment variable, else the embedded file."""
    if cli_value is not None:
        return DatabaseChoice(url=cli_value, source="--db")
    from_env = env.get(DATABASE_URL_ENV, "").strip()
    if from_env:
        return DatabaseChoice(url=from_env, source=DATABASE_URL_ENV)
    path = default_database_path(env)
    return DatabaseChoice(url=f"sqlite:///{path}", source="default", embedded_path=path)


def prepare_embedded_directory(choice: DatabaseChoice) -> None:
    """Make the embedded database's directory private (0700), creating it, and its files too (0600).

    The default location is memorybank's own, so a directory or file an earlier version left
    readable by others is tightened as well. The file itself is created by storage (0600 too).

    Raises:
        OSError: the directory cannot be created or its modes changed.
    """
    if choice.embedded_path is None:
        return
    from adapters_mysql.engines import PRIVATE_FILE_MODE  # here: `--help` does not import SQLAlchemy

    directory = choice.embedded_path.parent
    directory.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIRECTORY_MODE)
    directory.chmod(PRIVATE_DIRECTORY_MODE)
    for suffix in ("", "-wal", "-shm"):
        existing = choice.embedded_path.with_name(choice.embedded_path.name + suffix)
        if existing.exists():
            os.chmod(existing, PRIVATE_FILE_MODE)


def redacted(url: str) -> str:
    """`url` with any password replaced by `***`, for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    # By hand rather than parts.password: a cluster URL's netloc lists several host:port pairs.
    userinfo, at, hosts = parts.netloc.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    if not at or not colon:
        return url
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hosts}"))


def choose_allowed_hosts(cli_values: Sequence[str] | None, env: Mapping[str, str]) -> tuple[str, ...]:
    """The rail's extra allowed Host headers: every `--allowed-host`, else `MEMORYBANK_ALLOWED_HOSTS` split on commas.

    Raises:
        InvalidInputError: ("allowed_host") a value that is not `name`, `name:port` or `name:*` (e.g. a URL).
    """
    raw = list(cli_values) if cli_values else env.get(ALLOWED_HOSTS_ENV, "").split(",")
    hosts = tuple(host.strip() for host in raw if host.strip())
    for host in hosts:
        if not _HOST_HEADER.match(host):
            raise InvalidInputError(
                "allowed_host",
                f"must be a Host header such as bank.example.com, bank.example.com:8443 or bank.example.com:*, "
                f"not {host!r}",
            )
    return hosts


QUOTA_MEMORIES_ENV = "MEMORYBANK_QUOTA_MEMORIES"
"""The deployment's default quota of memories per user when `--quota-memories` is not given."""

QUOTA_CHARACTERS_ENV = "MEMORYBANK_QUOTA_CHARACTERS"
"""The deployment's default quota of characters per user when `--quota-characters` is not given."""


def choose_quota(memories: str | None, characters: str | None, env: Mapping[str, str]) -> Quota:
    """The deployment's default quota: each option, else its environment variable, else the built-in default.

    Raises:
        InvalidInputError: ("quota-memories", "quota-characters") not a whole number from 0 to `limits.QUOTA_MAX`.
    """
    return Quota(
        max_memories=_quota_value(memories, env, QUOTA_MEMORIES_ENV, "quota-memories", limits.QUOTA_MEMORIES_DEFAULT),
        max_characters=_quota_value(
            characters, env, QUOTA_CHARACTERS_ENV, "quota-characters", limits.QUOTA_CHARACTERS_DEFAULT
        ),
    )


def _quota_value(given: str | None, env: Mapping[str, str], variable: str, field: str, default: int) -> int:
    raw = given if given is not None else env.get(variable, "").strip() or None
    if raw is None:
        return default
    return parse_quota_number(raw, field)


def parse_quota_number(raw: str, field: str) -> int:
    """A quota measure as an operator writes it: `5000`, or `100_000` as `quota show` prints it.

    Raises:
        InvalidInputError: not a whole number from 0 to `limits.QUOTA_MAX`.
    """
    text = raw.strip().replace("_", "")
    if not re.fullmatch(r"[0-9]{1,13}", text) or int(text) > limits.QUOTA_MAX:
        raise InvalidInputError(field, f"must be a whole number from 0 to {limits.QUOTA_MAX}, not {raw!r}")
    return int(text)


KEY_FILE_ENV = "MEMORYBANK_KEY_FILE"
"""The environment variable naming the key ring file when `--key-file` is not given."""

KEYS_ENV = "MEMORYBANK_KEYS"
"""The environment variable holding the key ring document itself (for secret stores that inject variables)."""

KEY_FILE_NAME = "keys.json"


@attrs.frozen(kw_only=True)
class KeyRingChoice:
    """Where the key ring comes from: a file, or the text of an environment variable."""

    source: str
    """`--key-file`, or the environment variable's name."""
    path: Path | None = None
    text: str | None = attrs.field(default=None, repr=False)


def choose_key_ring(cli_value: Path | None, env: Mapping[str, str]) -> KeyRingChoice | None:
    """The key ring: `--key-file`, else `MEMORYBANK_KEY_FILE`, else `MEMORYBANK_KEYS`, else None (plaintext)."""
    if cli_value is not None:
        return KeyRingChoice(source="--key-file", path=cli_value)
    from_env = env.get(KEY_FILE_ENV, "").strip()
    if from_env:
        return KeyRingChoice(source=KEY_FILE_ENV, path=Path(from_env))
    document = env.get(KEYS_ENV, "").strip()
    if document:
        return KeyRingChoice(source=KEYS_ENV, text=document)
    return None


def default_key_file(env: Mapping[str, str]) -> Path:
    """Where `memorybank keys create` writes by default: `<config home>/memorybank/keys.json`.

    Not beside the embedded database (`<data home>/memorybank/`): a copy of the data directory,
    or a backup of it, must not carry the key that opens it.
    """
    return config_home(env) / "memorybank" / KEY_FILE_NAME


RATE_LIMIT_STORAGE_ENV = "MEMORYBANK_RATE_LIMIT_STORAGE"
"""The environment variable naming the rate limiter's storage when `--rate-limit-storage` is not given."""

RATE_LIMITS_ENV = "MEMORYBANK_RATE_LIMITS"
"""The environment variable holding rate-limit rules (comma-separated) when no `--rate-limit` is given."""


@attrs.frozen(kw_only=True)
class RateLimitChoice:
    """Where rate limits are counted and which rules change the defaults."""

    storage_url: str
    rules: tuple[str, ...] = ()


def choose_rate_limits(
    cli_storage: str | None, cli_rules: Sequence[str] | None, env: Mapping[str, str]
) -> RateLimitChoice:
    """`--rate-limit-storage`, else `MEMORYBANK_RATE_LIMIT_STORAGE`, else `memory://`; every `--rate-limit`,
    else `MEMORYBANK_RATE_LIMITS` split on commas. The rules are checked where they are used
    (`memorybank_core.RateLimitPolicy.from_rules`)."""
    storage = (cli_storage or env.get(RATE_LIMIT_STORAGE_ENV, "")).strip() or "memory://"
    raw = list(cli_rules) if cli_rules else env.get(RATE_LIMITS_ENV, "").split(",")
    return RateLimitChoice(storage_url=storage, rules=tuple(rule.strip() for rule in raw if rule.strip()))
