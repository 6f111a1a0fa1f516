"""The MCP Inspector commands docs/mcp.md shows, run exactly as written (only the port differs).

Run from tests/interop with npm offline, so `npx -y @modelcontextprotocol/inspector@2.12.0`
resolves to the pinned install there; a reader's npx fetches the same version.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from harness.served import REPO_ROOT, run_shell
from tests.interop.conftest import CLIENT_TIMEOUT_SECONDS, INTEROP_DIR
from tests.rail_users import RailUser

pytestmark = pytest.mark.interop

MCP_DOC = REPO_ROOT / "docs" / "mcp.md"
DOCUMENTED_BASE_URL = "http://127.0.0.1:8000"


def documented_inspector_commands() -> list[str]:
    """Every `npx …inspector…` command in docs/mcp.md's sh blocks, continuation lines joined."""
    blocks = re.findall(r"```sh\n(.*?)```", MCP_DOC.read_text(), flags=re.DOTALL)
    commands = []
    for block in blocks:
        for command in block.replace("\\\n", " ").splitlines():
            if command.startswith("npx ") and "@modelcontextprotocol/inspector" in command:
                commands.append(command)
    return commands


def test_the_docs_pin_the_inspector_the_interop_tests_install() -> None:
    commands = documented_inspector_commands()
    lock = (INTEROP_DIR / "package-lock.json").read_text()
    pinned = re.search(r'"node_modules/@modelcontextprotocol/inspector": \{\s*"version": "([^"]+)"', lock)

    assert pinned
    assert len(commands) == 2
    assert all(f"@modelcontextprotocol/inspector@{pinned.group(1)} " in command for command in commands)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_each_documented_inspector_command_works_as_written(
    node: str, home: Path, base_url: str, user: RailUser, transport: str
) -> None:
    (command,) = [c for c in documented_inspector_commands() if ("--transport http" in c) == (transport == "http")]
    environment = {
        **os.environ,
        "HOME": str(home),
        "NO_COLOR": "1",
        "npm_config_offline": "true",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "MEMORYBANK_TOKEN": user.secret,
        "MEMORYBANK_USER": user.user_id,
        "MEMORYBANK_ORG": user.org_id,
        "MEMORYBANK_DATABASE_URL": user.db_url,
    }

    completed = run_shell(
        command.replace(DOCUMENTED_BASE_URL, base_url), cwd=INTEROP_DIR, env=environment, timeout=CLIENT_TIMEOUT_SECONDS
    )

    assert completed.returncode == 0, (completed.stdout, completed.stderr)
    expected = "postMemory" if transport == "http" else "getMemorySearch"
    assert expected in completed.stdout
