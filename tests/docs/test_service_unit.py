"""docs/operations.md's systemd unit and environment file work with this memorybank (issue 28, finding 8).

systemd cannot run here, so the unit is checked as systemd reads it: each `ExecStart*` command line
must parse with memorybank's own argument parser, and every variable of the environment file must be
a declared setting (a misspelt one would be silently ignored by the server).
"""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

from harness.served import REPO_ROOT
from memorybank.cli import build_parser
from memorybank.settings import DECLARED, Settings

PAGE = REPO_ROOT / "docs" / "operations.md"


def _block(mark: str, language: str) -> str:
    found = re.search(rf"<!-- docs-test: {mark} -->\n```{language}\n(.*?)^```", PAGE.read_text(), re.S | re.M)
    assert found is not None, f"docs/operations.md lost its {mark} block"
    return found.group(1)


def _unit() -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    unit.read_string(_block("systemd unit", "ini"))
    return unit


def _environment() -> dict[str, str]:
    lines = [line for line in _block("environment file", "sh").splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_each_command_of_the_unit_parses_as_a_memorybank_command() -> None:
    service = _unit()["Service"]
    commands = [service[key] for key in ("ExecStartPre", "ExecStart")]

    for command_line in commands:
        program, *argv = shlex.split(command_line)
        assert Path(program).name == "memorybank"
        parsed = build_parser({}).parse_args(argv)  # exits (a failed test) on an unknown flag
        Settings.resolve(parsed, {"HOME": "/var/lib/memorybank", **_environment()})
    assert commands[1].split()[1] == "serve"


def test_the_environment_file_names_only_declared_settings_and_they_resolve() -> None:
    environment = _environment()
    declared = {setting.variable for setting in DECLARED}

    assert set(environment) <= declared, set(environment) - declared
    resolved = Settings.resolve({}, environment)
    assert (resolved.http.host, resolved.http.port) == ("127.0.0.1", 8000)
    assert resolved.oauth.public_url == "https://bank.example.com"


def test_systemd_waits_longer_than_the_graceful_shutdown() -> None:
    service = _unit()["Service"]
    parsed = build_parser({}).parse_args(shlex.split(service["ExecStart"])[1:])
    shutdown = Settings.resolve(parsed, {"HOME": "/x"}).http.shutdown_timeout

    assert int(service["TimeoutStopSec"]) > shutdown
    assert service["Restart"] == "on-failure"
    assert service["User"] != "root"
