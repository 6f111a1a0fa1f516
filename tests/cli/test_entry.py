"""The console-script entry point without the server extras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.served import REPO_ROOT
from memorybank.entry import main
from memorybank_core.distribution import install_command

# A fresh interpreter where `import <name>` fails as if the package were not installed.
_WITHOUT = (
    "import sys; sys.modules[{name!r}] = None; from memorybank.entry import main; raise SystemExit(main({argv!r}))"
)


def _without(missing: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", _WITHOUT.format(name=missing, argv=argv)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("missing", "argv"),
    [("uvicorn", ["serve", "--port", "0"]), ("starlette", ["serve", "--port", "0"]), ("sqlalchemy", ["token", "list"])],
)
def test_a_missing_extra_is_one_line_naming_what_to_install(missing: str, argv: list[str], tmp_path: Path) -> None:
    result = _without(missing, [*argv, "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"])

    assert result.returncode == 1
    assert result.stdout == ""
    # memorybank is on no index: the hint installs the extra from where this copy came from.
    hint = install_command("server")
    assert hint != "pip install 'memorybank[server]'"
    assert result.stderr == f"memorybank: error: the command needs {missing}, which is not installed: {hint}\n"


@pytest.mark.parametrize("missing", ["starlette", "mcp", "cryptography", "jwt"])
def test_the_admin_commands_need_only_the_sql_extra(missing: str, tmp_path: Path) -> None:
    result = _without(missing, ["token", "list", "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"])

    assert (result.returncode, result.stdout, result.stderr) == (0, "no tokens\n", "")


@pytest.mark.parametrize("missing", ["uvicorn", "starlette", "sqlalchemy", "mcp"])
def test_help_needs_none_of_the_extras(missing: str) -> None:
    result = _without(missing, ["--help"])

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: memorybank")


def test_with_everything_installed_the_entry_point_runs_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])

    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: memorybank")
