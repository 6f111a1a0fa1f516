"""Every setting of memorybank, resolved once: `Settings.resolve(flags, env)` (ADR 0027).

The one reader of the `MEMORYBANK_*` environment variables. Each setting is its command-line flag,
else its environment variable, else its default; a list given on the command line replaces the
environment's list. The result is a frozen `Settings` that `memorybank.bootstrap.build` wires, and
that crosses to `serve --workers` processes as JSON (`to_json`, `for_worker`) without its secrets:
those stay in the variables the workers inherit, and each worker reads them again here.

Pure functions of their arguments (the environment is passed in), so nothing is read at import
time and tests need no monkeypatching.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from memorybank_core import InvalidInputError, Quota, limits
from memorybank_search.fusion import MIN_SIMILARITY

#: A Host header value: a DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port or `:*`.
_HOST_HEADER = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::(?:[0-9]{1,5}|\*))?$")

#: Marks a field whose value is a secret: never in `repr`, never in `to_json` (workers read it again).
_SECRET = {"secret": True}


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _secret() -> Any:
    return attrs.field(default=None, repr=False, metadata=_SECRET)


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


def _choose_database(cli_value: str | None, env: Mapping[str, str]) -> DatabaseChoice:
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


def _choose_allowed_hosts(cli_values: Sequence[str] | None, env: Mapping[str, str]) -> tuple[str, ...]:
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


def _choose_quota(memories: str | None, characters: str | None, env: Mapping[str, str]) -> Quota:
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
    text: str | None = _secret()
    """The ring itself, from `$MEMORYBANK_KEYS`."""


def _choose_key_ring(cli_value: Path | None, env: Mapping[str, str]) -> KeyRingChoice | None:
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


def _choose_rate_limits(
    cli_storage: str | None, cli_rules: Sequence[str] | None, env: Mapping[str, str]
) -> RateLimitChoice:
    """`--rate-limit-storage`, else `MEMORYBANK_RATE_LIMIT_STORAGE`, else `memory://`; every `--rate-limit`,
    else `MEMORYBANK_RATE_LIMITS` split on commas. The rules are checked where they are used
    (`memorybank_core.RateLimitPolicy.from_rules`)."""
    storage = (cli_storage or env.get(RATE_LIMIT_STORAGE_ENV, "")).strip() or "memory://"
    raw = list(cli_rules) if cli_rules else env.get(RATE_LIMITS_ENV, "").split(",")
    return RateLimitChoice(storage_url=storage, rules=tuple(rule.strip() for rule in raw if rule.strip()))


# --- Search (memorybank.semantic loads and applies it; ADR 0022) ---

SEARCH_ENV = "MEMORYBANK_SEARCH"
"""`lexical` or `hybrid` when `--search` is not given."""

EMBEDDER_MODEL_ENV = "MEMORYBANK_EMBEDDER_MODEL"
"""A directory holding a user's own `model.onnx` and `tokenizer.json`, when `--embedder-model` is not given."""

HYBRID_MIN_SIMILARITY_ENV = "MEMORYBANK_HYBRID_MIN_SIMILARITY"
"""The cosine a memory sharing no query word needs to be found, when `--hybrid-min-similarity` is not given."""

SEARCH_MODES = ("lexical", "hybrid")


@attrs.frozen(kw_only=True)
class SearchChoice:
    """Which search a process serves, and with which embedding model."""

    mode: str = "lexical"
    embedder_model: str | None = None
    """A directory with a user's own ONNX export; None: the default all-MiniLM-L6-v2 int8."""
    min_similarity: float = MIN_SIMILARITY
    """Hybrid only: the cosine a memory that shares no word with the query needs to be returned."""
    explicit: bool = False
    """The mode was asked for (`--search` or the variable), not the command's default: a default hybrid
    without the semantic extra falls back to lexical search, an explicit one stops."""

    @property
    def hybrid(self) -> bool:
        """True when search fuses BM25 with the memories' vectors."""
        return self.mode == "hybrid"


def _choose_search(
    cli_mode: str | None,
    cli_model: str | None,
    env: Mapping[str, str],
    cli_min_similarity: str | None = None,
    default_mode: str = "lexical",
) -> SearchChoice:
    """`--search`, else `MEMORYBANK_SEARCH`, else the command's default (hybrid for `serve` and `mcp`, else
    lexical); `--embedder-model`, else `MEMORYBANK_EMBEDDER_MODEL`;
    `--hybrid-min-similarity`, else `MEMORYBANK_HYBRID_MIN_SIMILARITY`, else 0.15.

    Raises:
        InvalidInputError: ("search") a mode other than lexical or hybrid; ("--hybrid-min-similarity") not a
            number from 0 to 1.
    """
    asked = cli_mode or env.get(SEARCH_ENV, "").strip()
    mode = (asked or default_mode).lower()
    if mode not in SEARCH_MODES:
        raise InvalidInputError("search", f"(or ${SEARCH_ENV}) must be lexical or hybrid, not {mode!r}")
    model = cli_model or env.get(EMBEDDER_MODEL_ENV, "").strip() or None
    raw = cli_min_similarity if cli_min_similarity is not None else env.get(HYBRID_MIN_SIMILARITY_ENV, "").strip()
    return SearchChoice(
        mode=mode,
        embedder_model=model,
        min_similarity=_similarity(raw) if raw else MIN_SIMILARITY,
        explicit=bool(asked),
    )


def _similarity(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also refuses nan
        raise InvalidInputError(
            "--hybrid-min-similarity",
            f"(or ${HYBRID_MIN_SIMILARITY_ENV}) must be a number from 0 to 1, such as 0.15; not {raw!r}",
        )
    return value


# --- The secret screen (memorybank.secret_settings builds it; ADR 0024) ---

SECRET_SCREEN_ENV = "MEMORYBANK_SECRET_SCREEN"  # noqa: S105 - the variable's name, not a secret
"""The environment variable choosing the screen when `--secret-screen` is not given."""

REFUSE = "refuse"
"""Refuse a save holding what looks like a credential (the default)."""
OFF = "off"
"""Screen nothing: an operator's deliberate choice, said at start-up."""
SECRET_SCREEN_CHOICES = (REFUSE, OFF)


def _choose_secret_screen(cli_value: str | None, env: Mapping[str, str]) -> str:
    """`--secret-screen`, else `MEMORYBANK_SECRET_SCREEN`, else `refuse`.

    Raises:
        InvalidInputError: ("secret-screen") neither `refuse` nor `off`.
    """
    raw = cli_value if cli_value is not None else env.get(SECRET_SCREEN_ENV, "").strip() or REFUSE
    mode = raw.strip().lower()
    if mode not in SECRET_SCREEN_CHOICES:
        raise InvalidInputError("secret-screen", f"must be {REFUSE} or {OFF}, not {raw!r}")
    return mode


# --- OAuth (memorybank.oauth_settings turns these into the resource server's settings; docs/auth.md) ---

PUBLIC_URL_ENV = "MEMORYBANK_PUBLIC_URL"
ISSUERS_ENV = "MEMORYBANK_OAUTH_ISSUERS"
AUDIENCES_ENV = "MEMORYBANK_OAUTH_AUDIENCES"
SCOPES_ENV = "MEMORYBANK_OAUTH_SCOPES"
USER_CLAIM_ENV = "MEMORYBANK_OAUTH_USER_CLAIM"
USER_ID_CLAIM_ENV = "MEMORYBANK_OAUTH_USER_ID_CLAIM"
ORG_CLAIM_ENV = "MEMORYBANK_OAUTH_ORG_CLAIM"
DEFAULT_ORG_ENV = "MEMORYBANK_OAUTH_DEFAULT_ORG"
INTROSPECTION_ISSUER_ENV = "MEMORYBANK_OAUTH_INTROSPECTION_ISSUER"
CLIENT_ID_ENV = "MEMORYBANK_OAUTH_CLIENT_ID"
CLIENT_SECRET_ENV = "MEMORYBANK_OAUTH_CLIENT_SECRET"  # noqa: S105 - the variable's name, not a secret
PANEL_CLIENT_ID_ENV = "MEMORYBANK_OAUTH_PANEL_CLIENT_ID"
PANEL_ISSUER_ENV = "MEMORYBANK_OAUTH_PANEL_ISSUER"
PANEL_NAME_ENV = "MEMORYBANK_OAUTH_PANEL_NAME"
PANEL_CLIENT_SECRET_ENV = "MEMORYBANK_OAUTH_PANEL_CLIENT_SECRET"  # noqa: S105 - the variable's name, not a secret
PANEL_CLIENT_SECRET_FILE_ENV = "MEMORYBANK_OAUTH_PANEL_CLIENT_SECRET_FILE"  # noqa: S105 - the variable's name


@attrs.frozen(kw_only=True)
class OAuthOptions:
    """The OAuth settings, each from its option else its variable (None or empty: not configured)."""

    public_url: str | None = None
    """`--public-url` without its trailing slash; None: derived from a loopback bind (`oauth_settings`)."""
    issuers: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    audiences: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    scopes: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    user_claims: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    """`CLAIM` (every issuer) or `ISSUER=CLAIM`: the claim naming the person; ids stay derived per issuer."""
    user_id_claims: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    """`ISSUER=CLAIM`: that issuer's claim is our `usr_` id as is (trusting it with every user id)."""
    org_claim: str | None = None
    default_org: str | None = None
    introspection_issuer: str | None = None
    client_id: str | None = None
    """The server's own client at the introspection issuer (`$MEMORYBANK_OAUTH_CLIENT_ID`)."""
    client_secret: str | None = _secret()
    """`$MEMORYBANK_OAUTH_CLIENT_SECRET`: from the environment only, never argv."""
    panel_client_id: str | None = None
    panel_issuer: str | None = None
    panel_name: str | None = None
    panel_client_secret_file: str | None = None
    """A path, read where the panel's client is built (`oauth_settings`); its secret wins over the variable's."""
    panel_client_secret: str | None = _secret()
    """`$MEMORYBANK_OAUTH_PANEL_CLIENT_SECRET`, when no secret file is named."""


def _resolve_oauth(flags: Flags, env: Mapping[str, str]) -> OAuthOptions:
    public_url = _text(flags, "public_url", env, PUBLIC_URL_ENV)
    if public_url is not None:
        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise InvalidInputError("public-url", "must be an http(s) URL such as https://bank.example.com")
        public_url = public_url.rstrip("/")
    options = OAuthOptions(
        public_url=public_url,
        issuers=_words(flags, "oauth_issuer", env, ISSUERS_ENV),
        audiences=_words(flags, "oauth_audience", env, AUDIENCES_ENV),
        scopes=_words(flags, "oauth_scope", env, SCOPES_ENV),
        user_claims=_words(flags, "oauth_user_claim", env, USER_CLAIM_ENV),
        user_id_claims=_words(flags, "oauth_user_id_claim", env, USER_ID_CLAIM_ENV),
        org_claim=_text(flags, "oauth_org_claim", env, ORG_CLAIM_ENV),
        default_org=_text(flags, "oauth_default_org", env, DEFAULT_ORG_ENV),
        introspection_issuer=_text(flags, "oauth_introspection_issuer", env, INTROSPECTION_ISSUER_ENV),
        client_id=_text(None, "", env, CLIENT_ID_ENV),
        panel_client_id=_text(flags, "oauth_panel_client_id", env, PANEL_CLIENT_ID_ENV),
        panel_issuer=_text(flags, "oauth_panel_issuer", env, PANEL_ISSUER_ENV),
        panel_name=_text(flags, "oauth_panel_name", env, PANEL_NAME_ENV),
        panel_client_secret_file=_text(flags, "oauth_panel_client_secret_file", env, PANEL_CLIENT_SECRET_FILE_ENV),
    )
    return _with_oauth_secrets(options, env)


def _with_oauth_secrets(options: OAuthOptions, env: Mapping[str, str]) -> OAuthOptions:
    """`options` with their secrets read: by the resolver, and again by each worker (`for_worker`)."""
    return attrs.evolve(
        options,
        client_secret=env.get(CLIENT_SECRET_ENV) or None,
        panel_client_secret=env.get(PANEL_CLIENT_SECRET_ENV, "").strip() or None,
    )


# --- Serving over HTTP (memorybank.serving, memorybank.bootstrap) ---

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000

METRICS_TOKEN_ENV = "MEMORYBANK_METRICS_TOKEN"  # noqa: S105 - the variable's name, not a token
"""The bearer token `/metrics` requires; unset, `/metrics` is not served."""

SERVE_SETTINGS_ENV = "MEMORYBANK_SERVE_OPTIONS"
"""Where `serve --workers` leaves its settings for its workers (`to_json`, without secrets)."""

LOG_FORMATS = ("text", "json")


@attrs.frozen(kw_only=True)
class HttpSettings:
    """Where and how `serve` listens."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workers: int = 1
    log_format: str = "text"
    shutdown_timeout: int = 10
    """On SIGTERM, how long in-flight requests may take to finish (seconds)."""
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    """Host headers the MCP rail accepts besides loopback names."""
    metrics_token: str | None = _secret()
    """The bearer token `/metrics` requires (`$MEMORYBANK_METRICS_TOKEN` only); None: no `/metrics`."""


def _resolve_http(flags: Flags, env: Mapping[str, str]) -> HttpSettings:
    port = _number(flags, "port", DEFAULT_PORT, "--port", 0, 65535)
    workers = _number(flags, "workers", 1, "--workers", 1, 64)
    shutdown_timeout = _number(flags, "shutdown_timeout", 10, "--shutdown-timeout", 0, 3600, unit=" seconds")
    log_format = str(_flag(flags, "log_format") or "text")
    if log_format not in LOG_FORMATS:
        raise InvalidInputError("--log-format", f"must be text or json, not {log_format!r}")
    return HttpSettings(
        host=str(_flag(flags, "host") or DEFAULT_HOST),
        port=port,
        workers=workers,
        log_format=log_format,
        shutdown_timeout=shutdown_timeout,
        allowed_hosts=_choose_allowed_hosts(_sequence(flags, "allowed_hosts"), env),
        metrics_token=_metrics_token(env),
    )


def _metrics_token(env: Mapping[str, str]) -> str | None:
    return env.get(METRICS_TOKEN_ENV) or None


# --- Everything ---

Flags = argparse.Namespace | Mapping[str, object] | None
"""A parsed command line, or a mapping of its destinations (`{"db": "sqlite:///…", "workers": 2}`)."""


@attrs.frozen(kw_only=True)
class Settings:
    """Every setting of one memorybank process, resolved once (`resolve`); `memorybank.bootstrap.build` wires it."""

    database: DatabaseChoice
    keys: KeyRingChoice | None = None
    search: SearchChoice = attrs.field(factory=SearchChoice)
    secret_screen: str = REFUSE
    """`refuse` (screen every save for credentials) or `off`."""
    quota: Quota = attrs.field(factory=Quota)
    """The deployment's default quota, where no operator set one."""
    rate_limits: RateLimitChoice = attrs.field(factory=lambda: RateLimitChoice(storage_url="memory://"))
    oauth: OAuthOptions = attrs.field(factory=OAuthOptions)
    http: HttpSettings = attrs.field(factory=HttpSettings)

    @classmethod
    def resolve(cls, flags: Flags = None, env: Mapping[str, str] | None = None) -> Settings:
        """Each setting from `flags` (a parsed command line, or a mapping), else `env` (default: `os.environ`),
        else its default.

        Raises:
            InvalidInputError: naming the setting's option, for a malformed value.
        """
        environment: Mapping[str, str] = os.environ if env is None else env
        key_file = _flag(flags, "key_file")
        return cls(
            database=_choose_database(_optional_text(flags, "db"), environment),
            keys=_choose_key_ring(Path(str(key_file)) if key_file is not None else None, environment),
            search=_choose_search(
                _optional_text(flags, "search"),
                _optional_text(flags, "embedder_model"),
                environment,
                _optional_text(flags, "hybrid_min_similarity"),
                _optional_text(flags, "search_default") or "lexical",
            ),
            secret_screen=_choose_secret_screen(_optional_text(flags, "secret_screen"), environment),
            quota=_choose_quota(
                _optional_text(flags, "quota_memories"), _optional_text(flags, "quota_characters"), environment
            ),
            rate_limits=_choose_rate_limits(
                _optional_text(flags, "rate_limit_storage"), _sequence(flags, "rate_limits"), environment
            ),
            oauth=_resolve_oauth(flags, environment),
            http=_resolve_http(flags, environment),
        )

    @classmethod
    def for_database(cls, url: str, **changes: Any) -> Settings:
        """The defaults over the database at `url` (no environment read): for tests and benchmarks."""
        return cls(database=DatabaseChoice(url=url, source="--db"), **changes)

    def to_json(self) -> str:
        """Everything but the secrets, for the environment of `serve --workers` processes (`for_worker`)."""
        return json.dumps(
            attrs.asdict(self, filter=lambda field, _value: not field.metadata.get("secret")), default=str
        )

    @classmethod
    def from_json(cls, text: str, env: Mapping[str, str]) -> Settings:
        """What `to_json` wrote, with the secrets read again from `env` (the variables a worker inherits)."""
        values = json.loads(text)
        database = values["database"]
        keys = values["keys"]
        key_ring = None
        if keys is not None:
            text_of_ring = env.get(KEYS_ENV, "").strip() if keys["source"] == KEYS_ENV else None
            key_ring = KeyRingChoice(
                source=keys["source"], path=Path(keys["path"]) if keys["path"] else None, text=text_of_ring
            )
        return cls(
            database=DatabaseChoice(
                url=database["url"],
                source=database["source"],
                embedded_path=Path(database["embedded_path"]) if database["embedded_path"] else None,
            ),
            keys=key_ring,
            search=SearchChoice(**values["search"]),
            secret_screen=values["secret_screen"],
            quota=Quota(**values["quota"]),
            rate_limits=RateLimitChoice(
                storage_url=values["rate_limits"]["storage_url"], rules=tuple(values["rate_limits"]["rules"])
            ),
            oauth=_with_oauth_secrets(OAuthOptions(**values["oauth"]), env),
            http=HttpSettings(**values["http"], metrics_token=_metrics_token(env)),
        )

    def worker_environment(self) -> dict[str, str]:
        """The variable `for_worker` reads, for `serve --workers` to set before it starts them."""
        return {SERVE_SETTINGS_ENV: self.to_json()}

    @classmethod
    def for_worker(cls, env: Mapping[str, str]) -> Settings:
        """In a `serve --workers` process: the settings its supervisor resolved (`worker_environment`).

        Raises:
            KeyError: not started by `serve --workers`.
        """
        return cls.from_json(env[SERVE_SETTINGS_ENV], env)


def _flag(flags: Flags, dest: str) -> object:
    if flags is None:
        return None
    if isinstance(flags, argparse.Namespace):
        return getattr(flags, dest, None)
    return flags.get(dest)


def _optional_text(flags: Flags, dest: str) -> str | None:
    value = _flag(flags, dest)
    return None if value is None else str(value)


def _sequence(flags: Flags, dest: str) -> list[str] | None:
    value = _flag(flags, dest)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value]  # type: ignore[attr-defined]


def _text(flags: Flags, dest: str, env: Mapping[str, str], variable: str) -> str | None:
    """The option if given, else the variable; blank is not given."""
    given = _optional_text(flags, dest) if dest else None
    return (given or "").strip() or env.get(variable, "").strip() or None


def _words(flags: Flags, dest: str, env: Mapping[str, str], variable: str) -> tuple[str, ...]:
    """Every value of a repeated option, else the variable's values separated by commas or spaces."""
    given = _sequence(flags, dest)
    if given:
        return tuple(given)
    return tuple(env.get(variable, "").replace(",", " ").split())


def _number(flags: Flags, dest: str, default: int, option: str, low: int, high: int, *, unit: str = "") -> int:
    value = _flag(flags, dest)
    if value is None:
        return default
    try:
        number = int(str(value))
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise InvalidInputError(option, f"must be from {low} to {high}{unit}")
    return number
