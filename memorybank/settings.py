"""Every setting of memorybank, declared once as data and resolved once: `Settings.resolve(flags, env)`.

A setting is a field of the group its consumer takes, declared with `memorybank_core.configuration.declare`
(ADR 0027, ADR 0032): the field's default, and as data its environment variable, its command-line flag,
the commands that take the flag, its parser and bound, whether it is a secret, and its help text.
`DECLARED` walks the groups' fields; everything else is read from it: the argparse options
(`add_arguments`), `Settings.resolve`, the worker hand-over (`to_json`, `from_json`), the names errors
use, the settings test's cases and docs/operations.md's table (`settings_table`, diffed by a docs test).

One rule for every setting: the flag, else the variable, else the default. Values are trimmed. A
blank variable (`MEMORYBANK_X=`) counts as unset, as shells and unit files write "unset"; a blank flag
(`--db ""`, usually an unset shell variable in a script) is an error rather than a silent fall-through
to another database. A list flag given on the command line replaces the variable's list; a variable's
list is split on commas and whitespace. Secrets have no flag (argv is visible to every local user) and
never leave the process: `to_json` leaves them out and each `serve --workers` worker reads them again.

The settings are grouped by who consumes them (`Settings.database`, `.keys`, `.search`, `.bank` (the use
cases), `.rate_limits`, `.oauth`, `.http`, `.secret_screen`); a consumer takes its group, never single values.

The one reader of the `MEMORYBANK_*` environment variables. Pure functions of their arguments (the
environment is passed in), so nothing is read at import time and tests need no monkeypatching.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from memorybank_core import InvalidInputError, Quota
from memorybank_core.configuration import BankSettings, Declared, choice, declare, declared, quota_number, whole
from memorybank_search.fusion import MIN_SIMILARITY

# --- The variables (names operators rely on; each is declared once in `DECLARED` below) ---

DATABASE_URL_ENV = "MEMORYBANK_DATABASE_URL"
KEY_FILE_ENV = "MEMORYBANK_KEY_FILE"
KEYS_ENV = "MEMORYBANK_KEYS"
ALLOWED_HOSTS_ENV = "MEMORYBANK_ALLOWED_HOSTS"
QUOTA_MEMORIES_ENV = "MEMORYBANK_QUOTA_MEMORIES"
QUOTA_CHARACTERS_ENV = "MEMORYBANK_QUOTA_CHARACTERS"
RATE_LIMIT_STORAGE_ENV = "MEMORYBANK_RATE_LIMIT_STORAGE"
RATE_LIMITS_ENV = "MEMORYBANK_RATE_LIMITS"
SEARCH_ENV = "MEMORYBANK_SEARCH"
EMBEDDER_MODEL_ENV = "MEMORYBANK_EMBEDDER_MODEL"
HYBRID_MIN_SIMILARITY_ENV = "MEMORYBANK_HYBRID_MIN_SIMILARITY"
SECRET_SCREEN_ENV = "MEMORYBANK_SECRET_SCREEN"  # noqa: S105 - the variable's name, not a secret
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
HOST_ENV = "MEMORYBANK_HOST"
PORT_ENV = "MEMORYBANK_PORT"
WORKERS_ENV = "MEMORYBANK_WORKERS"
LOG_FORMAT_ENV = "MEMORYBANK_LOG_FORMAT"
SHUTDOWN_TIMEOUT_ENV = "MEMORYBANK_SHUTDOWN_TIMEOUT"
METRICS_TOKEN_ENV = "MEMORYBANK_METRICS_TOKEN"  # noqa: S105 - the variable's name, not a token

SERVE_SETTINGS_ENV = "MEMORYBANK_SERVE_OPTIONS"
"""Where `serve --workers` leaves its settings for its workers (`to_json`, without secrets). Not a setting."""

DATABASE_FILE_NAME = "memorybank.sqlite3"
KEY_FILE_NAME = "keys.json"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
LOG_FORMATS = ("text", "json")
SEARCH_MODES = ("lexical", "hybrid")
REFUSE = "refuse"
"""Refuse a save holding what looks like a credential (the default)."""
OFF = "off"
"""Screen nothing: an operator's deliberate choice, said at start-up."""
SECRET_SCREEN_CHOICES = (REFUSE, OFF)

#: The embedded database's directory, and the key ring's default one: entered by their owner only.
PRIVATE_DIRECTORY_MODE = 0o700

#: A Host header value: a DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port or `:*`.
_HOST_HEADER = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::(?:[0-9]{1,5}|\*))?$")


# --- Locations ---


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


def default_key_file(env: Mapping[str, str]) -> Path:
    """Where `memorybank keys create` writes by default: `<config home>/memorybank/keys.json`.

    Not beside the embedded database (`<data home>/memorybank/`): a copy of the data directory,
    or a backup of it, must not carry the key that opens it.
    """
    return config_home(env) / "memorybank" / KEY_FILE_NAME


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


# --- Parsers of the declarations below (the shared ones are memorybank_core.configuration's) ---


def _cosine(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also refuses nan
        raise ValueError("must be a number from 0 to 1, such as 0.15")
    return value


def _host_header(text: str) -> str:
    if not _HOST_HEADER.match(text):
        raise ValueError("must be a Host header such as bank.example.com, bank.example.com:8443 or bank.example.com:*")
    return text


def _public_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError("must be an http(s) URL such as https://bank.example.com")
    return text.rstrip("/")


def _embedded_database(env: Mapping[str, str]) -> str:
    return f"sqlite:///{default_database_path(env)}"


def parse_quota_number(raw: str, field: str) -> int:
    """A quota measure as an operator writes it: `5000`, or `100_000` as `quota show` prints it.

    Raises:
        InvalidInputError: not a whole number from 0 to `limits.QUOTA_MAX`.
    """
    try:
        return quota_number(raw)
    except ValueError as error:
        raise InvalidInputError(field, f"{error}, not {raw!r}") from error


#: Every command that opens the database: they share one parent parser (`commands.base.Shared.database`).
OPENS_DATABASE = "every command that opens the database"

_SERVE_AND_MCP = ("serve", "mcp")
_SEARCH = "search: lexical BM25, or hybrid: BM25 fused with a local embedding model"
_RATE_LIMITS = (
    "rate limits: per user (and optionally per token or organization), per operation; "
    "see docs/operations.md#rate-limits"
)
_OAUTH = "OAuth: an identity provider's access tokens beside the built-in tokens; docs/auth.md"
_PANEL = "panel sign-in: with the identity provider (OpenID Connect, authorization code + PKCE; docs/auth.md)"
_ISSUER = "https://login.example.com"


# --- The groups, one frozen value per consumer; their `declare(...)` fields are the declaration ---


@attrs.frozen(kw_only=True)
class DatabaseChoice:
    """The database a command will use, and why (consumed by storage: `composition.open_ready_storage`)."""

    url: str = declare(
        variable=DATABASE_URL_ENV,
        flag="--db",
        commands=(OPENS_DATABASE,),
        metavar="URL",
        computed_default=_embedded_database,
        shown_default="the embedded SQLite file `<data home>/memorybank/memorybank.sqlite3`",
        help="database URL: sqlite:///path/file.sqlite3, mysql://user:password@host:3306/name (mysqlclient) or "
        "mysql+pymysql://...",
        example="sqlite:///bank.sqlite3",
        example_value="sqlite:///bank.sqlite3",
    )
    source: str
    """`--db`, the environment variable's name, or `default`."""
    embedded_path: Path | None = None
    """The SQLite file, when the embedded default was chosen."""


@attrs.frozen(kw_only=True)
class KeyRingChoice:
    """Where the key ring comes from: a file, or the text of an environment variable (consumed by the sealer)."""

    source: str
    """`--key-file`, or the environment variable's name."""
    path: Path | None = declare(
        None,
        variable=KEY_FILE_ENV,
        flag="--key-file",
        commands=(OPENS_DATABASE, "keys add", "keys remove"),
        metavar="FILE",
        parse=Path,
        shown_default=f"the ring in ${KEYS_ENV}, else none (plaintext)",
        help="key ring for encryption at rest (`memorybank keys create`)",
        example="/keys/ring.json",
        example_value=Path("/keys/ring.json"),
    )
    text: str | None = declare(
        None,
        variable=KEYS_ENV,
        secret=True,
        shown_default="none (plaintext)",
        help="the key ring document itself, for secret stores that inject variables; --key-file wins",
        example='{"keys": []}',
        example_value='{"keys": []}',
    )


@attrs.frozen(kw_only=True)
class SearchChoice:
    """Which search a process serves, and with which embedding model (consumed by `memorybank.semantic`)."""

    mode: str = declare(
        "lexical",
        variable=SEARCH_ENV,
        flag="--search",
        commands=_SERVE_AND_MCP,
        choices=SEARCH_MODES,
        parse=choice(*SEARCH_MODES),
        shown_default="hybrid (lexical when the semantic extra is missing)",
        section=_SEARCH,
        help="hybrid also finds what a question means in other words (the server extra brings the model; "
        "docs/search.md), lexical only shared words",
        example="hybrid",
        example_value="hybrid",
    )
    embedder_model: str | None = declare(
        None,
        variable=EMBEDDER_MODEL_ENV,
        flag="--embedder-model",
        commands=(*_SERVE_AND_MCP, "reindex"),
        metavar="DIR",
        shown_default="all-MiniLM-L6-v2 int8 from the semantic extra",
        section=_SEARCH,
        help="hybrid search with your own sentence-embedding export: DIR holds model.onnx and tokenizer.json",
        example="/models/mine",
        example_value="/models/mine",
    )
    min_similarity: float = declare(
        MIN_SIMILARITY,
        variable=HYBRID_MIN_SIMILARITY_ENV,
        flag="--hybrid-min-similarity",
        commands=_SERVE_AND_MCP,
        metavar="COSINE",
        parse=_cosine,
        shown_default=f"{MIN_SIMILARITY}",
        section=_SEARCH,
        help="hybrid search: the cosine (0 to 1) a memory sharing no word with the query needs to be found; "
        "higher finds fewer paraphrases and less noise",
        example="0.4",
        example_value=0.4,
    )

    explicit: bool = False
    """The mode was asked for (`--search` or the variable): `serve` and `mcp` make an unasked one hybrid
    (`memorybank.semantic.serving_default`), and a default hybrid without the semantic extra falls back to
    lexical search where an explicit one stops. Every other process keeps the declared lexical default."""

    @property
    def hybrid(self) -> bool:
        """True when search fuses BM25 with the memories' vectors."""
        return self.mode == "hybrid"


@attrs.frozen(kw_only=True)
class RateLimitChoice:
    """Where rate limits are counted and which rules change the defaults (consumed by `build_rate_limits`)."""

    rules: tuple[str, ...] = declare(
        (),
        variable=RATE_LIMITS_ENV,
        flag="--rate-limit",
        destination="rate_limits",
        many=True,
        metavar="RULE",
        shown_default="save=60/minute and 120/minute for the others",
        section=_RATE_LIMITS,
        help="change a limit: OPERATION=N/UNIT with OPERATION save, search, list, delete or * (all), prefixed "
        "token. for a per-token limit; N/UNIT like 120/minute, or off",
        example="search=300/minute,save=off",
        example_value=("search=300/minute", "save=off"),
    )
    storage_url: str = declare(
        "memory://",
        variable=RATE_LIMIT_STORAGE_ENV,
        flag="--rate-limit-storage",
        metavar="URL",
        shown_default="memory://",
        section=_RATE_LIMITS,
        help="where limits are counted: memory:// (each process alone) or redis://host:port/db, shared by every "
        "worker and host",
        example="redis://cache:6379/0",
        example_value="redis://cache:6379/0",
    )


@attrs.frozen(kw_only=True)
class HttpSettings:
    """Where and how `serve` listens (consumed by `memorybank.serving` and the served app)."""

    host: str = declare(
        DEFAULT_HOST,
        variable=HOST_ENV,
        flag="--host",
        shown_default=DEFAULT_HOST,
        help="interface to bind",
        example="0.0.0.0",  # noqa: S104 - an example value, not a bind
        example_value="0.0.0.0",  # noqa: S104 - as above
    )
    port: int = declare(
        DEFAULT_PORT,
        variable=PORT_ENV,
        flag="--port",
        parse=whole(0, 65535),
        shown_default=str(DEFAULT_PORT),
        help="port to listen on",
        example="8123",
        example_value=8123,
    )
    workers: int = declare(
        1,
        variable=WORKERS_ENV,
        flag="--workers",
        parse=whole(1, 64),
        shown_default="1",
        help="worker processes sharing the port, each with its own connection pool",
        example="4",
        example_value=4,
    )
    log_format: str = declare(
        "text",
        variable=LOG_FORMAT_ENV,
        flag="--log-format",
        choices=LOG_FORMATS,
        parse=choice(*LOG_FORMATS),
        shown_default="text",
        help="text lines or JSON lines",
        example="json",
        example_value="json",
    )
    shutdown_timeout: int = declare(
        10,
        variable=SHUTDOWN_TIMEOUT_ENV,
        flag="--shutdown-timeout",
        metavar="SECONDS",
        parse=whole(0, 3600, " seconds"),
        shown_default="10",
        help="on SIGTERM, how long in-flight requests may take to finish",
        example="30",
        example_value=30,
    )
    allowed_hosts: tuple[str, ...] = declare(
        (),
        variable=ALLOWED_HOSTS_ENV,
        flag="--allowed-host",
        destination="allowed_hosts",
        many=True,
        metavar="HOST",
        parse=_host_header,
        shown_default="loopback names only",
        help="a Host header the MCP rail accepts besides loopback names, e.g. bank.example.com behind a reverse "
        "proxy (`name`, `name:port` or `name:*`)",
        example="a.example.com, b.example.com:*",
        example_value=("a.example.com", "b.example.com:*"),
    )
    metrics_token: str | None = declare(
        None,
        variable=METRICS_TOKEN_ENV,
        secret=True,
        shown_default="no /metrics",
        help="the bearer token /metrics requires",
        example="m3trics",
        example_value="m3trics",
    )


@attrs.frozen(kw_only=True)
class OAuthOptions:
    """The OAuth settings (consumed by `memorybank.oauth_settings`); None or empty: not configured."""

    public_url: str | None = declare(
        None,
        variable=PUBLIC_URL_ENV,
        flag="--public-url",
        aliases=("--url",),
        commands=("serve", "panel-link"),
        metavar="URL",
        parse=_public_url,
        shown_default="http://HOST:PORT on a loopback bind (panel-link: http://127.0.0.1:8000)",
        section=_OAUTH,
        help="the server's public base URL (https://bank.example.com); the OAuth resource is URL/mcp/agent",
        example="https://bank.example.com/",
        example_value="https://bank.example.com",
    )
    issuers: tuple[str, ...] = declare(
        (),
        variable=ISSUERS_ENV,
        flag="--oauth-issuer",
        many=True,
        metavar="URL",
        section=_OAUTH,
        help="trust access tokens from this issuer",
        example="https://a.example.com, https://b.example.com",
        example_value=("https://a.example.com", "https://b.example.com"),
    )
    audiences: tuple[str, ...] = declare(
        (),
        variable=AUDIENCES_ENV,
        flag="--oauth-audience",
        many=True,
        metavar="AUD",
        shown_default="the resource URL",
        section=_OAUTH,
        help="an accepted token audience",
        example="api://one api://two",
        example_value=("api://one", "api://two"),
    )
    scopes: tuple[str, ...] = declare(
        (),
        variable=SCOPES_ENV,
        flag="--oauth-scope",
        many=True,
        metavar="OURS=THEIRS",
        shown_default="the same names",
        section=_OAUTH,
        help="the issuer scope granting mcp:read, mcp:write or an org scope, e.g. mcp:read=memory.read",
        example="mcp:read=memory.read",
        example_value=("mcp:read=memory.read",),
    )
    user_claims: tuple[str, ...] = declare(
        (),
        variable=USER_CLAIM_ENV,
        flag="--oauth-user-claim",
        many=True,
        metavar="[ISSUER=]CLAIM",
        shown_default="sub",
        section=_OAUTH,
        help="the claim naming the person instead of sub (e.g. oid), at every issuer or at ISSUER; user ids stay "
        "derived from the issuer and the claim",
        example="oid",
        example_value=("oid",),
    )
    user_id_claims: tuple[str, ...] = declare(
        (),
        variable=USER_ID_CLAIM_ENV,
        flag="--oauth-user-id-claim",
        many=True,
        metavar="ISSUER=CLAIM",
        section=_OAUTH,
        help="ISSUER's CLAIM holds this server's usr_ id, used as is: trusts ISSUER with EVERY user id here",
        example=f"{_ISSUER}=memorybank_user",
        example_value=(f"{_ISSUER}=memorybank_user",),
    )
    org_claims: tuple[str, ...] = declare(
        (),
        variable=ORG_CLAIM_ENV,
        flag="--oauth-org-claim",
        many=True,
        metavar="[ISSUER=]CLAIM",
        section=_OAUTH,
        help="the claim naming the person's organization, at every issuer or at ISSUER; ISSUER=CLAIM also opens "
        "the organization's team bank to ISSUER's tokens that carry CLAIM (org ids then derived per issuer)",
        example=f"tid {_ISSUER}=org",
        example_value=("tid", f"{_ISSUER}=org"),
    )
    default_org: str | None = declare(
        None,
        variable=DEFAULT_ORG_ENV,
        flag="--oauth-default-org",
        metavar="org_…",
        section=_OAUTH,
        help="the organization of people whose token names none",
        example="org_env",
        example_value="org_env",
    )
    introspection_issuer: str | None = declare(
        None,
        variable=INTROSPECTION_ISSUER_ENV,
        flag="--oauth-introspection-issuer",
        metavar="URL",
        section=_OAUTH,
        help=f"check opaque tokens with this issuer's introspection endpoint, as the client ${CLIENT_ID_ENV} / "
        f"${CLIENT_SECRET_ENV}",
        example=_ISSUER,
        example_value=_ISSUER,
    )
    client_id: str | None = declare(
        None,
        variable=CLIENT_ID_ENV,
        help="the server's own client at the introspection issuer",
        example="bank",
        example_value="bank",
    )
    client_secret: str | None = declare(
        None,
        variable=CLIENT_SECRET_ENV,
        secret=True,
        help="that client's secret",
        example="s3cret",
        example_value="s3cret",
    )
    panel_client_id: str | None = declare(
        None,
        variable=PANEL_CLIENT_ID_ENV,
        flag="--oauth-panel-client-id",
        metavar="ID",
        section=_PANEL,
        help="the panel's client at the provider; offers 'Sign in with <provider>'; its redirect URI is "
        "PUBLIC_URL/panel/oidc/callback",
        example="panel",
        example_value="panel",
    )
    panel_issuer: str | None = declare(
        None,
        variable=PANEL_ISSUER_ENV,
        flag="--oauth-panel-issuer",
        metavar="URL",
        shown_default="the only --oauth-issuer",
        section=_PANEL,
        help="which --oauth-issuer the panel signs people in with",
        example=_ISSUER,
        example_value=_ISSUER,
    )
    panel_name: str | None = declare(
        None,
        variable=PANEL_NAME_ENV,
        flag="--oauth-panel-name",
        metavar="NAME",
        shown_default="the issuer's host",
        section=_PANEL,
        help="the provider's name on the button",
        example="Acme SSO",
        example_value="Acme SSO",
    )
    panel_client_secret_file: str | None = declare(
        None,
        variable=PANEL_CLIENT_SECRET_FILE_ENV,
        flag="--oauth-panel-client-secret-file",
        metavar="PATH",
        shown_default=f"${PANEL_CLIENT_SECRET_ENV}, else a public client",
        section=_PANEL,
        help="a file holding the panel client's secret (read where the panel's client is built); never the "
        "secret itself",
        example="/run/secrets/panel",
        example_value="/run/secrets/panel",
    )
    panel_client_secret: str | None = declare(
        None,
        variable=PANEL_CLIENT_SECRET_ENV,
        secret=True,
        shown_default="a public client (PKCE alone)",
        help="the panel client's secret, when no secret file is named",
        example="panel-s3cret",
        example_value="panel-s3cret",
    )


@attrs.frozen(kw_only=True)
class Settings:
    """Every setting of one memorybank process, resolved once (`resolve`); `memorybank.bootstrap.build` wires it.

    Each field is a group its consumer takes whole, or (`secret_screen`) a setting of its own.
    """

    database: DatabaseChoice
    keys: KeyRingChoice | None = None
    search: SearchChoice = attrs.field(factory=SearchChoice)
    secret_screen: str = declare(
        REFUSE,
        variable=SECRET_SCREEN_ENV,
        flag="--secret-screen",
        commands=("serve", "import"),
        choices=SECRET_SCREEN_CHOICES,
        parse=choice(*SECRET_SCREEN_CHOICES),
        shown_default=REFUSE,
        help="refuse saves holding what looks like a credential (API keys, tokens, private keys, passwords in "
        "URLs), or screen nothing; docs/security.md",
        example="OFF",
        example_value=OFF,
    )
    """`refuse` (screen every save for credentials) or `off` (consumed by `secret_settings.build_secret_screen`)."""
    bank: BankSettings = attrs.field(factory=BankSettings)
    """What the use cases take (`MemoryBank(settings=…)`): the default quota."""
    rate_limits: RateLimitChoice = attrs.field(factory=RateLimitChoice)
    oauth: OAuthOptions = attrs.field(factory=OAuthOptions)
    http: HttpSettings = attrs.field(factory=HttpSettings)

    @property
    def quota(self) -> Quota:
        """The deployment's default quota, where no operator set one (`bank.quota`)."""
        return self.bank.quota

    @classmethod
    def resolve(cls, flags: Flags = None, env: Mapping[str, str] | None = None) -> Settings:
        """Each declared setting from `flags` (a parsed command line, or a mapping of argparse destinations),
        else `env` (default: `os.environ`), else its default.

        Raises:
            InvalidInputError: naming the flag (or the variable, when the value came from it) of a malformed value.
        """
        environment: Mapping[str, str] = os.environ if env is None else env
        return _assemble({setting.name: setting.resolve(flags, environment) for setting in DECLARED}, environment)

    @classmethod
    def for_database(cls, url: str, **changes: Any) -> Settings:
        """The defaults over the database at `url` (no environment read): for tests and benchmarks."""
        return cls(database=DatabaseChoice(url=url, source="--db"), **changes)

    def to_json(self) -> str:
        """Everything but the secrets, for the environment of `serve --workers` processes (`for_worker`)."""
        shipped = {}
        for setting in DECLARED:
            if not setting.secret:
                value = setting.read(self)
                shipped[setting.name] = list(value) if isinstance(value, tuple) else value
        shipped["database.source"] = self.database.source
        shipped["database.embedded_path"] = self.database.embedded_path
        shipped["keys.source"] = self.keys.source if self.keys is not None else None
        shipped["search.explicit"] = self.search.explicit
        return json.dumps(shipped, default=str)

    @classmethod
    def from_json(cls, text: str, env: Mapping[str, str]) -> Settings:
        """What `to_json` wrote, with the secrets read again from `env` (the variables a worker inherits)."""
        shipped = json.loads(text)
        values: dict[str, Resolved] = {}
        for setting in DECLARED:
            if setting.secret:
                values[setting.name] = setting.resolve(None, env)
            else:
                values[setting.name] = Resolved(setting.decode(shipped[setting.name]), "shipped")
        if shipped["keys.source"] is not None and values["keys.path"].value is not None:
            values["keys.path"] = attrs.evolve(values["keys.path"], source=shipped["keys.source"])
        settings = _assemble(values, env)
        embedded = shipped["database.embedded_path"]
        database = attrs.evolve(
            settings.database,
            source=shipped["database.source"],
            embedded_path=Path(embedded) if embedded is not None else None,
        )
        search = attrs.evolve(settings.search, explicit=bool(shipped.get("search.explicit", True)))
        return attrs.evolve(settings, database=database, search=search)

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


#: Each group of `Settings` and the class that declares it (`secret_screen` is declared on `Settings` itself).
GROUPS: dict[str, type] = {
    "database": DatabaseChoice,
    "keys": KeyRingChoice,
    "search": SearchChoice,
    "bank": BankSettings,
    "rate_limits": RateLimitChoice,
    "oauth": OAuthOptions,
    "http": HttpSettings,
}


# --- The resolver ---

Flags = argparse.Namespace | Mapping[str, object] | None
"""A parsed command line, or a mapping of its destinations (`{"db": "sqlite:///…", "workers": 2}`)."""


@attrs.frozen
class Resolved:
    """One setting's value and where it came from: its flag, its variable, `default` (or `shipped` to a worker)."""

    value: Any
    source: str


@attrs.frozen
class Setting:
    """One declared field, seen from `Settings`: its name (`http.port`), its default and its declaration."""

    name: str
    """`group.field` (`http.port` is `settings.http.port`), or the field of `Settings` itself (`secret_screen`)."""
    default: Any
    spec: Declared

    @property
    def group(self) -> str:
        return self.name.partition(".")[0]

    @property
    def field(self) -> str:
        return self.name.partition(".")[2]

    # The declaration's fields, by their own names.
    variable = property(lambda self: self.spec.variable)
    flag = property(lambda self: self.spec.flag)
    many = property(lambda self: self.spec.many)
    secret = property(lambda self: self.spec.secret)
    parse = property(lambda self: self.spec.parse)
    choices = property(lambda self: self.spec.choices)
    commands = property(lambda self: self.spec.commands)
    example = property(lambda self: self.spec.example)
    example_value = property(lambda self: self.spec.example_value)
    shown_default = property(lambda self: self.spec.shown_default)

    @property
    def dest(self) -> str:
        """The argparse destination of the flag."""
        if self.spec.destination is not None:
            return self.spec.destination
        return (self.spec.flag or self.spec.variable).removeprefix("--").replace("-", "_").lower()

    def default_for(self, env: Mapping[str, str]) -> Any:
        """The default, computed from `env` when the declaration says so."""
        computed = self.spec.computed_default
        return computed(env) if computed is not None else self.default

    def resolve(self, flags: Flags, env: Mapping[str, str]) -> Resolved:
        """The flag, else the variable, else the default.

        Raises:
            InvalidInputError: the flag is blank, or the value is malformed (named by where it came from).
        """
        flag = self.spec.flag
        given = _flag(flags, self.dest) if flag is not None else None
        if flag is not None and given is not None and given != []:
            texts = [str(item).strip() for item in given] if isinstance(given, list | tuple) else [str(given).strip()]
            texts = [text for text in texts if text]
            if not texts:
                raise InvalidInputError(flag, "must not be blank")
            return Resolved(self._parsed(texts, flag), flag)
        raw = env.get(self.spec.variable, "").strip()
        if raw:
            texts = _split(raw) if self.spec.many else [raw]
            return Resolved(self._parsed(texts, f"${self.spec.variable}"), self.spec.variable)
        return Resolved(self.default_for(env), "default")

    def _parsed(self, texts: list[str], where: str) -> Any:
        values = []
        for text in texts:
            try:
                values.append(self.spec.parse(text))
            except ValueError as refused:
                raise InvalidInputError(where, f"{refused}, not {text!r}") from refused
        return tuple(values) if self.spec.many else values[0]

    def read(self, settings: Settings) -> Any:
        """This setting's value in resolved `settings`."""
        group = getattr(settings, self.group)
        return getattr(group, self.field) if group is not None and self.field else group

    def decode(self, shipped: Any) -> Any:
        """A value `to_json` wrote, as `read` returns it."""
        if shipped is None:
            return None
        if self.spec.many:
            return tuple(shipped)
        return Path(shipped) if self.spec.parse is Path else shipped

    def takes(self, command: str) -> bool:
        """Whether `command` (`serve`, `keys add`, or `OPENS_DATABASE`) has this setting's flag."""
        return self.spec.flag is not None and command in self.spec.commands

    def help_text(self) -> str:
        """The flag's `--help` line: what it does, and its variable and default."""
        spec = self.spec
        if spec.many:
            listed = f"${spec.variable}, comma-separated"
            text = f"{spec.help}; repeat for several (default: {listed}; else {spec.shown_default})"
        else:
            text = f"{spec.help} (default: ${spec.variable}, else {spec.shown_default})"
        return text.replace("%", "%%")  # argparse formats help with %


def _declared_in(group: str, cls: type) -> list[Setting]:
    found = []
    for field in attrs.fields(cls):
        spec = declared(field)
        if spec is not None:
            default = None if field.default is attrs.NOTHING else field.default
            found.append(Setting(f"{group}.{field.name}" if group else field.name, default, spec))
    return found


def _own(name: str) -> list[Setting]:
    """A setting declared on `Settings` itself (`secret_screen`), or nothing for a group without declarations."""
    return [setting for setting in _declared_in("", Settings) if setting.name == name]


#: Every setting, in `--help` and docs order: read from the groups' declared fields.
DECLARED: tuple[Setting, ...] = tuple(
    setting
    for field in attrs.fields(Settings)
    for setting in (
        _declared_in(field.name, GROUPS[field.name]) if field.name in GROUPS else _declared_in("", Settings)
    )
    if field.name in GROUPS or setting.name == field.name
)


def _split(raw: str) -> list[str]:
    return raw.replace(",", " ").split()


def _flag(flags: Flags, dest: str) -> Any:
    if flags is None:
        return None
    if isinstance(flags, argparse.Namespace):
        return getattr(flags, dest, None)
    return flags.get(dest)


# --- Building the groups from resolved values ---


def _assemble(values: Mapping[str, Resolved], env: Mapping[str, str]) -> Settings:
    """The groups from their resolved fields: each built whole, so a field added to a group needs nothing here."""

    def group(name: str) -> dict[str, Any]:
        prefix = name + "."
        return {key.removeprefix(prefix): found.value for key, found in values.items() if key.startswith(prefix)}

    plain = {name: cls(**group(name)) for name, cls in GROUPS.items() if name not in _DERIVED}
    plain["search"] = attrs.evolve(plain["search"], explicit=values["search.mode"].source != "default")
    own = {setting.name: values[setting.name].value for setting in DECLARED if not setting.field}
    return Settings(
        database=_database(values["database.url"], env),
        keys=_key_ring(values["keys.path"], values["keys.text"]),
        **plain,
        **own,
    )


#: The groups that are more than their declared fields: where the value came from decides part of them.
_DERIVED = frozenset({"database", "keys"})


def _database(url: Resolved, env: Mapping[str, str]) -> DatabaseChoice:
    if url.source == "default":
        return DatabaseChoice(url=url.value, source="default", embedded_path=default_database_path(env))
    return DatabaseChoice(url=url.value, source=url.source)


def _key_ring(path: Resolved, text: Resolved) -> KeyRingChoice | None:
    """`--key-file`, else `MEMORYBANK_KEY_FILE`, else `MEMORYBANK_KEYS`, else None (plaintext)."""
    if path.value is not None:
        return KeyRingChoice(source=path.source, path=path.value)
    if text.value is not None:
        return KeyRingChoice(source=KEYS_ENV, text=text.value)
    return None


# --- What the declaration feeds: argparse, error names, the docs table ---


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """The flags of every setting `command` takes (`serve`, `keys add`, or `OPENS_DATABASE`), as declared.

    No argparse default and no argparse type: `Settings.resolve` applies the one rule, so a flag and its
    variable are parsed, bounded and named in errors alike.
    """
    sections: dict[str, argparse._ArgumentGroup] = {}
    for setting in DECLARED:
        if not setting.takes(command):
            continue
        where: argparse.ArgumentParser | argparse._ArgumentGroup = parser
        if setting.spec.section is not None:
            title, _, description = setting.spec.section.partition(": ")
            where = sections.get(title) or sections.setdefault(title, parser.add_argument_group(title, description))
        assert setting.flag is not None  # noqa: S101 - `takes` says so
        where.add_argument(
            setting.flag,
            *setting.spec.aliases,
            dest=setting.dest,
            action="append" if setting.many else "store",
            metavar=setting.spec.metavar,
            choices=setting.choices,
            help=setting.help_text(),
        )


def option_names() -> dict[str, str]:
    """How the command line names the fields later checks report (`oauth-issuer`, `embedder-model`): the flag."""
    names: dict[str, str] = {}
    for setting in DECLARED:
        if setting.flag is not None:
            names[setting.flag.removeprefix("--")] = setting.flag
            names[setting.dest] = setting.flag
    return names


def settings_table() -> str:
    """docs/operations.md's table of every setting (tests/docs diffs the page against it)."""
    rows = ["| variable | flag | commands | default |", "|---|---|---|---|"]
    for setting in DECLARED:
        flag = f"`{setting.flag}`" if setting.flag else "(none: a secret stays out of argv)"
        if setting.flag is None and not setting.secret:
            flag = "(variable only)"
        commands = ", ".join(
            "every command that opens the database" if c == OPENS_DATABASE else f"`{c}`" for c in setting.commands
        )
        rows.append(f"| `{setting.variable}` | {flag} | {commands if setting.flag else ''} | {setting.shown_default} |")
    return "\n".join(rows) + "\n"


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
