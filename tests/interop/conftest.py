"""Fixtures for the interop tier: the pinned node clients, and a real server with a user on it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from harness.served import served
from tests.node_packages import require_node
from tests.rail_users import RailUser, create_database, new_user

INTEROP_DIR = Path(__file__).resolve().parent
NODE_MODULES = INTEROP_DIR / "node_modules"
INSPECTOR = NODE_MODULES / ".bin" / "mcp-inspector"
TS_CLIENT = INTEROP_DIR / "ts_client.mjs"
TS_SDK = NODE_MODULES / "@modelcontextprotocol" / "sdk" / "package.json"
CLIENT_TIMEOUT_SECONDS = 120


@pytest.fixture(scope="session")
def node() -> str:
    """The node executable, with the pinned clients installed; fails under CI=true, else skips, when absent."""
    return require_node(
        tier="INTEROP", installed=[INSPECTOR, TS_SDK], where=NODE_MODULES, install="tests/interop/install.sh"
    )


@pytest.fixture(scope="module")
def rail_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("interop")


@pytest.fixture(scope="module")
def db_url(rail_dir: Path) -> str:
    return create_database(rail_dir)


@pytest.fixture(scope="module")
def base_url(db_url: str, rail_dir: Path) -> Iterator[str]:
    """A real `memorybank serve`."""
    with served(db_url, log=rail_dir / "serve.log") as url:
        yield url


@pytest.fixture
def user(db_url: str) -> RailUser:
    return new_user(db_url)


@attrs.frozen
class Answer:
    """What a node client printed and how it exited."""

    status: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """The one JSON document on stdout."""
        return json.loads(self.stdout)


def run_node_client(argv: list[str], home: Path) -> Answer:
    """Run a node client to completion with `HOME` in `home` (the Inspector writes ~/.mcp-inspector there)."""
    completed = subprocess.run(  # noqa: S603 - our pinned clients, no shell
        argv,
        cwd=INTEROP_DIR,
        env={**os.environ, "HOME": str(home), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_SECONDS,
        check=False,
    )
    return Answer(status=completed.returncode, stdout=completed.stdout, stderr=completed.stderr)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path
