"""Fixtures for the command line: an isolated environment and an embedded database in tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from starlette.testclient import TestClient

from adapters_http.panel import PANEL_HEADER, SESSION_COOKIE
from memorybank.cli import main


@attrs.frozen
class Outcome:
    """What one in-process run of the command printed and returned."""

    status: int
    out: str
    err: str

    @property
    def last_line(self) -> str:
        return self.out.rstrip("\n").split("\n")[-1]


Run = Callable[..., Outcome]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment with its own home and no database variable."""
    return {"HOME": str(tmp_path / "home")}


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'bank.sqlite3'}"


@pytest.fixture
def run(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Run:
    """Run `memorybank ARGS...` in-process with the test environment."""

    def invoke(*argv: str) -> Outcome:
        try:
            status = main(list(argv), env=env)
        except SystemExit as exit_:  # argparse: --help and usage errors
            status = int(exit_.code or 0)
        captured = capsys.readouterr()
        return Outcome(status=status, out=captured.out, err=captured.err)

    return invoke


def panel_session_from_token(client: TestClient, secret: str) -> dict[str, str]:
    """Paste `secret` into the panel's sign-in, as a person would: the headers of the panel's calls after it."""
    same_origin = {PANEL_HEADER: "1", "Origin": str(client.base_url)}
    response = client.post("/panel/session", json={"token": secret}, headers=same_origin)
    assert response.status_code == 200, response.text
    session = response.cookies[SESSION_COOKIE]
    client.cookies.clear()
    return {**same_origin, "Cookie": f"{SESSION_COOKIE}={session}"}
