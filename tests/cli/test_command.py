"""The command as a whole: database choice, --help, and one-line failures without tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.served import run_memorybank
from memorybank.settings import DATABASE_URL_ENV, Settings, default_database_path, redacted
from memorybank_core.distribution import install_command
from tests.cli.conftest import Run


@pytest.mark.parametrize(
    "argv",
    [[], ["serve"], ["migrate"], ["token"], ["token", "create"], ["token", "list"], ["token", "revoke"]],
)
def test_every_command_has_help(run: Run, argv: list[str]) -> None:
    outcome = run(*argv, "--help")

    assert outcome.status == 0
    assert outcome.out.startswith("usage: memorybank")
    if argv and argv != ["token"]:
        assert "--db URL" in outcome.out


@pytest.mark.parametrize(
    ("argv", "status", "reason"),
    [
        (["token", "list", "--db", "nonsense"], 2, "--db is not a database URL"),
        (["token", "list", "--db", "postgres://u@h/db"], 2, "--db uses the unsupported scheme"),
        (["token", "list", "--db", "mysql+pymysql://root@127.0.0.1:9/x"], 1, "cannot connect to the database"),
        (["migrate", "--db", "mysql://root@127.0.0.1:9"], 2, "--db must name the database"),
        (["token", "list", "--user", "alice"], 2, "--user must be a TypeID"),
        (["serve", "--port", "http"], 2, "--port must be a whole number from 0 to 65535, not 'http'"),
        (["serve", "--port", "70000"], 2, "--port must be a whole number from 0 to 65535"),
        (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
        ([], 2, "the following arguments are required: COMMAND"),
    ],
)
def test_bad_input_fails_with_one_line(run: Run, argv: list[str], status: int, reason: str) -> None:
    outcome = run(*argv)

    assert outcome.status == status
    assert outcome.out == ""
    assert outcome.err.count("\n") == 1, outcome.err
    assert outcome.err.startswith("memorybank: error: ")
    assert reason in outcome.err


def test_the_real_command_prints_help_and_fails_bad_input_without_a_traceback(tmp_path: Path) -> None:
    helped = run_memorybank(["--help"])
    failed = run_memorybank(
        ["token", "list", "--db", "mysql+pymysql://root:hunter2@127.0.0.1:9/x"], env={"HOME": str(tmp_path)}
    )

    assert helped.returncode == 0
    assert "serve" in helped.stdout
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.count("\n") == 1
    assert "cannot connect to the database" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert "hunter2" not in failed.stderr


def test_without_db_or_env_the_embedded_database_is_created_under_the_data_home(run: Run, env: dict[str, str]) -> None:
    assert run("token", "create").status == 0

    assert (Path(env["HOME"]) / ".local/share/memorybank/memorybank.sqlite3").is_file()


def test_the_environment_variable_names_the_database_when_db_is_absent(
    run: Run, env: dict[str, str], db_url: str
) -> None:
    env[DATABASE_URL_ENV] = db_url
    secret = run("token", "create").last_line

    listed = run("token", "list", "--db", db_url)

    assert secret.startswith("mbk_")
    assert len(listed.out.strip().split("\n")) == 2
    assert not (Path(env["HOME"]) / ".local/share/memorybank").exists()


def test_db_wins_over_the_environment_variable() -> None:
    choice = Settings.resolve({"db": "sqlite:///a.sqlite3"}, {DATABASE_URL_ENV: "sqlite:///b.sqlite3"}).database

    assert (choice.url, choice.source) == ("sqlite:///a.sqlite3", "--db")


def test_the_default_database_follows_xdg_data_home() -> None:
    assert default_database_path({"XDG_DATA_HOME": "/data", "HOME": "/home/u"}) == Path(
        "/data/memorybank/memorybank.sqlite3"
    )
    assert default_database_path({"XDG_DATA_HOME": "relative", "HOME": "/home/u"}) == Path(
        "/home/u/.local/share/memorybank/memorybank.sqlite3"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("mysql://root:pw@db:3306/bank", "mysql://root:***@db:3306/bank"),
        ("mysql://root@db/bank", "mysql://root@db/bank"),
        ("sqlite:////tmp/x.sqlite3", "sqlite:////tmp/x.sqlite3"),
    ],
)
def test_redacted_hides_only_the_password(url: str, shown: str) -> None:
    assert redacted(url) == shown


def test_migrate_says_what_it_did_and_then_that_there_is_nothing_to_do(run: Run, db_url: str) -> None:
    first = run("migrate", "--db", db_url)
    second = run("migrate", "--db", db_url)

    assert (first.status, second.status) == (0, 0), first.err + second.err
    assert first.out.startswith(f"memorybank: migrated {db_url} to revision ")
    assert "applied revisions 0001, 0002" in first.out
    assert second.out.startswith(f"memorybank: {db_url} is already up to date (revision ")
    assert "nothing to do" in second.out
    assert first.out != second.out


def test_version_prints_the_installed_version(run: Run) -> None:
    from importlib.metadata import version

    outcome = run("--version")

    assert (outcome.status, outcome.out) == (0, f"memorybank {version('memorybank')}\n")


@pytest.mark.parametrize(
    ("argv", "meant"), [(["serv"], "serve"), (["token", "creat"], "create"), (["panel-link-"], "panel-link")]
)
def test_a_mistyped_command_gets_a_did_you_mean(run: Run, argv: list[str], meant: str) -> None:
    outcome = run(*argv)

    assert outcome.status == 2
    assert f"did you mean '{meant}'?" in outcome.err
    assert outcome.err.count("\n") == 1


def test_a_command_nothing_like_any_gets_no_guess(run: Run) -> None:
    outcome = run("zzzz")

    assert outcome.status == 2
    assert "did you mean" not in outcome.err


def test_the_serve_banner_names_the_rail_only_when_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from memorybank import composition
    from memorybank.commands import serve

    assert serve._rail_at("http://127.0.0.1:8000") == "MCP: http://127.0.0.1:8000/mcp/agent"

    def without_the_sdk(**_: object) -> None:
        raise composition.McpUnavailableError("the MCP SDK is not installed")

    monkeypatch.setattr(composition, "require_mcp", without_the_sdk)
    assert serve._rail_at("http://127.0.0.1:8000") == f"MCP rail off: {install_command(composition.MCP_EXTRA)}"
