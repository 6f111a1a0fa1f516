"""`Settings.resolve`: each setting is its flag, else its variable, else its default; read in one place (ADR 0027)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from memorybank import settings as settings_module
from memorybank.settings import Settings
from memorybank_core import InvalidInputError, Quota, limits
from memorybank_search.fusion import MIN_SIMILARITY

REPOSITORY = Path(__file__).resolve().parents[2]

Read = Callable[[Settings], object]


@attrs.frozen
class Case:
    """One variable: a value for it, the flag that beats it and that flag's value, and where the setting lands."""

    variable: str
    env_value: str
    read: Read
    expected_from_env: object
    default: object
    flag: tuple[str, object] | None = None
    expected_from_flag: object = None


ISSUER = "https://login.example.com"

CASES = [
    Case(
        "MEMORYBANK_DATABASE_URL",
        "sqlite:///from-env.sqlite3",
        lambda s: s.database.url,
        "sqlite:///from-env.sqlite3",
        "sqlite:////home/u/.local/share/memorybank/memorybank.sqlite3",
        ("db", "sqlite:///flag.sqlite3"),
        "sqlite:///flag.sqlite3",
    ),
    Case(
        "MEMORYBANK_KEY_FILE",
        "/keys/env.json",
        lambda s: s.keys and s.keys.path,
        Path("/keys/env.json"),
        None,
        ("key_file", Path("/keys/flag.json")),
        Path("/keys/flag.json"),
    ),
    Case(
        "MEMORYBANK_KEYS",
        '{"keys": []}',
        lambda s: s.keys and s.keys.text,
        '{"keys": []}',
        None,
        ("key_file", Path("/keys/flag.json")),
        None,
    ),
    Case(
        "MEMORYBANK_ALLOWED_HOSTS",
        "a.example.com, b.example.com:*",
        lambda s: s.http.allowed_hosts,
        ("a.example.com", "b.example.com:*"),
        (),
        ("allowed_hosts", ["flag.example.com"]),
        ("flag.example.com",),
    ),
    Case(
        "MEMORYBANK_QUOTA_MEMORIES",
        "5_000",
        lambda s: s.quota.max_memories,
        5000,
        limits.QUOTA_MEMORIES_DEFAULT,
        ("quota_memories", "7"),
        7,
    ),
    Case(
        "MEMORYBANK_QUOTA_CHARACTERS",
        "900",
        lambda s: s.quota.max_characters,
        900,
        limits.QUOTA_CHARACTERS_DEFAULT,
        ("quota_characters", "8"),
        8,
    ),
    Case(
        "MEMORYBANK_RATE_LIMIT_STORAGE",
        "redis://cache:6379/0",
        lambda s: s.rate_limits.storage_url,
        "redis://cache:6379/0",
        "memory://",
        ("rate_limit_storage", "redis://flag:6379/1"),
        "redis://flag:6379/1",
    ),
    Case(
        "MEMORYBANK_RATE_LIMITS",
        "search=300/minute, save=off",
        lambda s: s.rate_limits.rules,
        ("search=300/minute", "save=off"),
        (),
        ("rate_limits", ["list=10/second"]),
        ("list=10/second",),
    ),
    Case(
        "MEMORYBANK_SECRET_SCREEN",
        "OFF",
        lambda s: s.secret_screen,
        "off",
        "refuse",
        ("secret_screen", "refuse"),
        "refuse",
    ),
    Case("MEMORYBANK_SEARCH", "hybrid", lambda s: s.search.mode, "hybrid", "lexical", ("search", "lexical"), "lexical"),
    Case(
        "MEMORYBANK_EMBEDDER_MODEL",
        "/models/env",
        lambda s: s.search.embedder_model,
        "/models/env",
        None,
        ("embedder_model", "/models/flag"),
        "/models/flag",
    ),
    Case(
        "MEMORYBANK_HYBRID_MIN_SIMILARITY",
        "0.4",
        lambda s: s.search.min_similarity,
        0.4,
        MIN_SIMILARITY,
        ("hybrid_min_similarity", "0"),
        0.0,
    ),
    Case("MEMORYBANK_METRICS_TOKEN", "m3trics", lambda s: s.http.metrics_token, "m3trics", None),
    Case(
        "MEMORYBANK_PUBLIC_URL",
        "https://bank.example.com/",
        lambda s: s.oauth.public_url,
        "https://bank.example.com",
        None,
        ("public_url", "https://flag.example.com"),
        "https://flag.example.com",
    ),
    Case(
        "MEMORYBANK_OAUTH_ISSUERS",
        "https://a.example.com, https://b.example.com",
        lambda s: s.oauth.issuers,
        ("https://a.example.com", "https://b.example.com"),
        (),
        ("oauth_issuer", [ISSUER]),
        (ISSUER,),
    ),
    Case(
        "MEMORYBANK_OAUTH_AUDIENCES",
        "api://one api://two",
        lambda s: s.oauth.audiences,
        ("api://one", "api://two"),
        (),
        ("oauth_audience", ["api://flag"]),
        ("api://flag",),
    ),
    Case(
        "MEMORYBANK_OAUTH_SCOPES",
        "mcp:read=memory.read",
        lambda s: s.oauth.scopes,
        ("mcp:read=memory.read",),
        (),
        ("oauth_scope", ["mcp:write=w"]),
        ("mcp:write=w",),
    ),
    Case(
        "MEMORYBANK_OAUTH_USER_CLAIM",
        "oid",
        lambda s: s.oauth.user_claims,
        ("oid",),
        (),
        ("oauth_user_claim", ["uid"]),
        ("uid",),
    ),
    Case(
        "MEMORYBANK_OAUTH_USER_ID_CLAIM",
        f"{ISSUER}=memorybank_user",
        lambda s: s.oauth.user_id_claims,
        (f"{ISSUER}=memorybank_user",),
        (),
        ("oauth_user_id_claim", [f"{ISSUER}=u"]),
        (f"{ISSUER}=u",),
    ),
    Case(
        "MEMORYBANK_OAUTH_ORG_CLAIM",
        "tid",
        lambda s: s.oauth.org_claim,
        "tid",
        None,
        ("oauth_org_claim", "org"),
        "org",
    ),
    Case(
        "MEMORYBANK_OAUTH_DEFAULT_ORG",
        "org_env",
        lambda s: s.oauth.default_org,
        "org_env",
        None,
        ("oauth_default_org", "org_flag"),
        "org_flag",
    ),
    Case(
        "MEMORYBANK_OAUTH_INTROSPECTION_ISSUER",
        ISSUER,
        lambda s: s.oauth.introspection_issuer,
        ISSUER,
        None,
        ("oauth_introspection_issuer", "https://flag.example.com"),
        "https://flag.example.com",
    ),
    Case("MEMORYBANK_OAUTH_CLIENT_ID", "bank", lambda s: s.oauth.client_id, "bank", None),
    Case("MEMORYBANK_OAUTH_CLIENT_SECRET", "s3cret", lambda s: s.oauth.client_secret, "s3cret", None),
    Case(
        "MEMORYBANK_OAUTH_PANEL_CLIENT_ID",
        "panel",
        lambda s: s.oauth.panel_client_id,
        "panel",
        None,
        ("oauth_panel_client_id", "flag-panel"),
        "flag-panel",
    ),
    Case(
        "MEMORYBANK_OAUTH_PANEL_ISSUER",
        ISSUER,
        lambda s: s.oauth.panel_issuer,
        ISSUER,
        None,
        ("oauth_panel_issuer", "https://flag.example.com"),
        "https://flag.example.com",
    ),
    Case(
        "MEMORYBANK_OAUTH_PANEL_NAME",
        "Acme SSO",
        lambda s: s.oauth.panel_name,
        "Acme SSO",
        None,
        ("oauth_panel_name", "Flag SSO"),
        "Flag SSO",
    ),
    Case(
        "MEMORYBANK_OAUTH_PANEL_CLIENT_SECRET",
        "panel-s3cret",
        lambda s: s.oauth.panel_client_secret,
        "panel-s3cret",
        None,
    ),
    Case(
        "MEMORYBANK_OAUTH_PANEL_CLIENT_SECRET_FILE",
        "/run/secrets/panel",
        lambda s: s.oauth.panel_client_secret_file,
        "/run/secrets/panel",
        None,
        ("oauth_panel_client_secret_file", "/run/secrets/flag"),
        "/run/secrets/flag",
    ),
]

HOME = {"HOME": "/home/u"}


def variables_named_in(module: object) -> set[str]:
    return {
        value
        for name, value in vars(module).items()
        if name.endswith("_ENV") and isinstance(value, str) and value.startswith("MEMORYBANK_")
    }


def test_every_variable_the_resolver_names_has_a_case() -> None:
    # The workers' own variable is covered by the round trip below.
    assert {case.variable for case in CASES} == variables_named_in(settings_module) - {
        settings_module.SERVE_SETTINGS_ENV
    }


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.variable)
def test_each_variable_sets_its_setting_over_the_default(case: Case) -> None:
    assert case.read(Settings.resolve({}, HOME)) == case.default
    assert case.read(Settings.resolve({}, {**HOME, case.variable: case.env_value})) == (case.expected_from_env)


@pytest.mark.parametrize("case", [case for case in CASES if case.flag is not None], ids=lambda case: case.variable)
def test_a_flag_beats_its_variable(case: Case) -> None:
    assert case.flag is not None
    dest, value = case.flag
    resolved = Settings.resolve({dest: value}, {**HOME, case.variable: case.env_value})

    assert case.read(resolved) == case.expected_from_flag


def test_the_settings_cross_to_workers_without_their_secrets() -> None:
    env = {
        **HOME,
        "MEMORYBANK_KEYS": '{"ring": "k3y"}',
        "MEMORYBANK_METRICS_TOKEN": "m3trics",
        "MEMORYBANK_OAUTH_CLIENT_SECRET": "s3cret",
        "MEMORYBANK_OAUTH_PANEL_CLIENT_SECRET": "panel-from-variable",
        "MEMORYBANK_DATABASE_URL": "mysql://bank@db:3306/bank",
    }
    flags = {
        "workers": 4,
        "port": 8123,
        "allowed_hosts": ["bank.example.com"],
        "rate_limits": ["search=5/second"],
        "hybrid_min_similarity": "0.25",
        "oauth_issuer": [ISSUER],
        "quota_memories": "12",
    }
    resolved = Settings.resolve(flags, env)

    shipped = resolved.worker_environment()

    assert list(shipped) == [settings_module.SERVE_SETTINGS_ENV]
    for secret in ("k3y", "m3trics", "s3cret", "panel-from-variable"):
        assert secret not in shipped[settings_module.SERVE_SETTINGS_ENV]
        assert secret not in repr(resolved)
    # A worker inherits the same variables and reads its secrets again.
    assert Settings.for_worker({**env, **shipped}) == resolved


def test_a_worker_without_the_variables_has_no_secrets() -> None:
    resolved = Settings.resolve({}, {**HOME, "MEMORYBANK_METRICS_TOKEN": "m3trics"})

    worker = Settings.from_json(resolved.to_json(), {})

    assert worker.http.metrics_token is None
    assert attrs.evolve(worker, http=attrs.evolve(worker.http, metrics_token="m3trics")) == resolved


def test_nothing_given_is_the_documented_default() -> None:
    resolved = Settings.resolve({}, HOME)

    assert resolved.quota == Quota()
    assert resolved.search.min_similarity == MIN_SIMILARITY == 0.15
    assert (resolved.http.host, resolved.http.port, resolved.http.workers) == ("127.0.0.1", 8000, 1)
    assert resolved.keys is None
    assert resolved.database.source == "default"


@pytest.mark.parametrize(
    ("flags", "env", "path", "message"),
    [
        ({"hybrid_min_similarity": "1.5"}, {}, "--hybrid-min-similarity", "must be a number from 0 to 1"),
        ({}, {"MEMORYBANK_HYBRID_MIN_SIMILARITY": "high"}, "--hybrid-min-similarity", "not 'high'"),
        ({}, {"MEMORYBANK_HYBRID_MIN_SIMILARITY": "nan"}, "--hybrid-min-similarity", "from 0 to 1"),
        ({"hybrid_min_similarity": "-0.1"}, {}, "--hybrid-min-similarity", "$MEMORYBANK_HYBRID_MIN_SIMILARITY"),
        ({"port": 70000}, {}, "--port", "must be from 0 to 65535"),
        ({"workers": 0}, {}, "--workers", "must be from 1 to 64"),
        ({"shutdown_timeout": 4000}, {}, "--shutdown-timeout", "must be from 0 to 3600 seconds"),
        ({}, {"MEMORYBANK_SECRET_SCREEN": "maybe"}, "secret-screen", "must be refuse or off"),
        ({}, {"MEMORYBANK_SEARCH": "vector"}, "search", "must be lexical or hybrid"),
        ({}, {"MEMORYBANK_QUOTA_MEMORIES": "-1"}, "quota-memories", "must be a whole number"),
        ({}, {"MEMORYBANK_ALLOWED_HOSTS": "https://x"}, "allowed_host", "must be a Host header"),
        ({"public_url": "ftp://x"}, {}, "public-url", "must be an http(s) URL"),
    ],
)
def test_a_malformed_setting_is_one_clear_error(
    flags: dict[str, object], env: dict[str, str], path: str, message: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        Settings.resolve(flags, {**HOME, **env})

    problem = refused.value.problems[0]
    assert problem.path == path
    assert message in problem.message


# --- Only the resolver reads MEMORYBANK_* ---

SHIPPED_PACKAGES = sorted(
    path.name
    for path in REPOSITORY.iterdir()
    if (path / "__init__.py").is_file() and path.name not in {"tests", "benchmarks"}
)
RESOLVER = REPOSITORY / "memorybank" / "settings.py"


def _reads_of_memorybank_variables(path: Path, names: set[str]) -> list[str]:
    """`env.get(X)`, `os.environ[X]`, `os.getenv(X)`... where X is a MEMORYBANK_ variable or the name of one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def names_a_variable(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value.startswith("MEMORYBANK_")
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Attribute):
            return node.attr in names
        return False

    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args:
            callee = node.func
            called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            if called in {"get", "getenv", "pop", "setdefault", "__getitem__"}:
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            key = node.left
        if key is not None and names_a_variable(key):
            found.append(f"{path.relative_to(REPOSITORY)}:{getattr(node, 'lineno', 0)}")
    return found


def test_only_the_settings_resolver_reads_memorybank_variables() -> None:
    names = {name for name in vars(settings_module) if name.endswith("_ENV")}
    modules = [path for package in SHIPPED_PACKAGES for path in (REPOSITORY / package).rglob("*.py")]
    assert RESOLVER in modules  # the walk sees the shipped packages

    reads = [read for path in modules if path != RESOLVER for read in _reads_of_memorybank_variables(path, names)]

    assert reads == []
    # And the check finds a read where there is one.
    assert _reads_of_memorybank_variables(RESOLVER, names)
