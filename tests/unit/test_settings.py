"""`Settings.resolve`: each declared setting is its flag, else its variable, else its default (ADR 0027, 0032).

The cases are the declaration's own (`memorybank.settings.DECLARED`): a setting added there is tested here.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import attrs
import pytest

from memorybank import settings as settings_module
from memorybank.cli import build_parser
from memorybank.settings import DECLARED, OPENS_DATABASE, KeyRingChoice, Setting, Settings
from memorybank_core import InvalidInputError, Quota
from memorybank_search.fusion import MIN_SIMILARITY

REPOSITORY = Path(__file__).resolve().parents[2]

HOME = {"HOME": "/home/u"}


def _default(setting: Setting) -> object:
    return setting.default_for(HOME)


def _other_example(setting: Setting) -> tuple[str, object]:
    """A second valid value, unlike the example, for the flag that must beat the variable."""
    if setting.choices is not None:
        other = next(choice for choice in setting.choices if choice != str(setting.example_value))
        return other, other
    if setting.parse is Path:
        return "/from/flag", Path("/from/flag")
    value = setting.parse(setting.example.split(",")[0].split()[0].strip()) if setting.many else None
    if setting.many:
        return setting.example.split(",")[0].split()[0].strip(), (value,)
    if isinstance(setting.example_value, int | float):
        parsed = setting.parse("1")
        return "1", parsed
    return setting.example + "-flag", setting.parse(setting.example + "-flag")


def test_the_cases_below_are_every_declared_setting_and_every_variable_the_module_names() -> None:
    named = {
        value
        for name, value in vars(settings_module).items()
        if name.endswith("_ENV") and isinstance(value, str) and value.startswith("MEMORYBANK_")
    }
    assert named - {settings_module.SERVE_SETTINGS_ENV} <= {setting.variable for setting in DECLARED}
    assert len({setting.variable for setting in DECLARED}) == len(DECLARED)
    # Every group field is declared once, and every declared setting lands in a field.
    resolved = Settings.resolve({}, HOME)
    for setting in DECLARED:
        setting.read(resolved)


@pytest.mark.parametrize("setting", DECLARED, ids=lambda setting: setting.variable)
def test_each_variable_sets_its_setting_over_the_default(setting: Setting) -> None:
    assert setting.read(Settings.resolve({}, HOME)) == _default(setting)
    assert setting.read(Settings.resolve({}, {**HOME, setting.variable: setting.example})) == setting.example_value


@pytest.mark.parametrize("setting", [s for s in DECLARED if s.flag], ids=lambda setting: setting.variable)
def test_a_flag_beats_its_variable(setting: Setting) -> None:
    text, expected = _other_example(setting)
    given: object = [text] if setting.many else text
    resolved = Settings.resolve({setting.dest: given}, {**HOME, setting.variable: setting.example})

    assert setting.read(resolved) == expected


@pytest.mark.parametrize("setting", DECLARED, ids=lambda setting: setting.variable)
def test_a_blank_variable_is_unset(setting: Setting) -> None:
    assert setting.read(Settings.resolve({}, {**HOME, setting.variable: "  "})) == _default(setting)


@pytest.mark.parametrize("setting", [s for s in DECLARED if s.flag], ids=lambda setting: setting.variable)
def test_a_blank_flag_is_refused_naming_the_flag(setting: Setting) -> None:
    with pytest.raises(InvalidInputError) as refused:
        Settings.resolve({setting.dest: [" "] if setting.many else " "}, {**HOME, setting.variable: setting.example})

    assert (refused.value.problems[0].path, refused.value.problems[0].message) == (setting.flag, "must not be blank")


def test_the_key_file_beats_the_ring_in_the_environment() -> None:
    resolved = Settings.resolve({"key_file": "/keys/flag.json"}, {**HOME, "MEMORYBANK_KEYS": '{"keys": []}'})

    assert resolved.keys == KeyRingChoice(source="--key-file", path=Path("/keys/flag.json"))


def test_the_settings_cross_to_workers_without_their_secrets() -> None:
    env = {
        **HOME,
        **{setting.variable: setting.example for setting in DECLARED if setting.secret},
        "MEMORYBANK_KEYS": '{"ring": "k3y"}',
        "MEMORYBANK_DATABASE_URL": "mysql://bank@db:3306/bank",
    }
    flags = {setting.dest: _given(setting) for setting in DECLARED if setting.flag}
    flags.pop("db")
    resolved = Settings.resolve(flags, env)

    shipped = resolved.worker_environment()

    assert list(shipped) == [settings_module.SERVE_SETTINGS_ENV]
    for setting in DECLARED:
        if setting.secret:
            assert str(env[setting.variable]) not in shipped[settings_module.SERVE_SETTINGS_ENV], setting.variable
            assert str(env[setting.variable]) not in repr(resolved), setting.variable
    # A worker inherits the same variables and reads its secrets again.
    assert Settings.for_worker({**env, **shipped}) == resolved


def _given(setting: Setting) -> object:
    """The example as the command line gives it: a list flag repeats."""
    return setting.example.replace(",", " ").split() if setting.many else setting.example


def test_the_embedded_default_crosses_to_workers_as_the_default() -> None:
    resolved = Settings.resolve({"key_file": "/k.json"}, HOME)

    assert Settings.for_worker({**HOME, **resolved.worker_environment()}) == resolved


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
        ({}, {"MEMORYBANK_HYBRID_MIN_SIMILARITY": "high"}, "$MEMORYBANK_HYBRID_MIN_SIMILARITY", "not 'high'"),
        ({}, {"MEMORYBANK_HYBRID_MIN_SIMILARITY": "nan"}, "$MEMORYBANK_HYBRID_MIN_SIMILARITY", "from 0 to 1"),
        ({"port": 70000}, {}, "--port", "must be a whole number from 0 to 65535, not '70000'"),
        ({}, {"MEMORYBANK_PORT": "http"}, "$MEMORYBANK_PORT", "must be a whole number from 0 to 65535"),
        ({"workers": 0}, {}, "--workers", "must be a whole number from 1 to 64"),
        ({"shutdown_timeout": 4000}, {}, "--shutdown-timeout", "from 0 to 3600 seconds"),
        ({}, {"MEMORYBANK_LOG_FORMAT": "xml"}, "$MEMORYBANK_LOG_FORMAT", "must be text or json, not 'xml'"),
        ({}, {"MEMORYBANK_SECRET_SCREEN": "maybe"}, "$MEMORYBANK_SECRET_SCREEN", "must be refuse or off"),
        ({}, {"MEMORYBANK_SEARCH": "vector"}, "$MEMORYBANK_SEARCH", "must be lexical or hybrid"),
        ({}, {"MEMORYBANK_QUOTA_MEMORIES": "-1"}, "$MEMORYBANK_QUOTA_MEMORIES", "must be a whole number"),
        ({}, {"MEMORYBANK_ALLOWED_HOSTS": "ok.example.com,https://x"}, "$MEMORYBANK_ALLOWED_HOSTS", "'https://x'"),
        ({"public_url": "ftp://x"}, {}, "--public-url", "must be an http(s) URL"),
    ],
)
def test_a_malformed_setting_is_one_clear_error_naming_where_it_came_from(
    flags: dict[str, object], env: dict[str, str], path: str, message: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        Settings.resolve(flags, {**HOME, **env})

    problem = refused.value.problems[0]
    assert problem.path == path
    assert message in problem.message


def test_each_flag_is_taken_by_the_commands_its_declaration_names_and_no_other() -> None:
    parser = build_parser(HOME)
    taken = _flags_by_command(parser)
    for setting in DECLARED:
        if setting.flag is None:
            continue
        expected = {
            command
            for command, flags in taken.items()
            if setting.takes(command) or (OPENS_DATABASE in setting.commands and "--db" in flags)
        }
        assert {command for command, flags in taken.items() if setting.flag in flags} == expected, setting.name
        assert expected, f"{setting.name} is taken by no command"


def _flags_by_command(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_flags_by_command(sub, f"{prefix} {name}".strip()))
    if prefix and not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
        found[prefix] = {option for action in parser._actions for option in action.option_strings}
    return found


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
