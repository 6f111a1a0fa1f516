"""`memorybank --help` and `memorybank prompt` answer without loading the server stack.

Checked by what a fresh interpreter has imported, not by timing: the MCP SDK, Starlette and
SQLAlchemy take one to two seconds to import, and neither command needs any of them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.served import REPO_ROOT

#: Top-level packages these commands must not import.
HEAVY = ("mcp", "mcp_types", "starlette", "sqlalchemy", "alembic", "uvicorn", "pydantic", "anyio")

_PROBE = """
import contextlib, io, json, sys
from memorybank.entry import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        status = main({argv!r})
    except SystemExit as exit_:
        status = exit_.code
loaded = sorted({{name.partition(".")[0] for name in sys.modules}})
print(json.dumps({{"status": status, "loaded": loaded}}))
"""


@pytest.mark.parametrize("argv", [["--help"], ["prompt"], ["token", "--help"], ["serve", "--help"]])
def test_the_command_answers_without_importing_the_server_stack(argv: list[str]) -> None:
    result = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", _PROBE.format(argv=argv)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    probe = json.loads(result.stdout)

    assert probe["status"] in (0, None)
    assert sorted(set(HEAVY) & set(probe["loaded"])) == []


def test_every_public_name_of_the_mcp_facade_resolves() -> None:
    import adapters_mcp

    missing = [name for name in adapters_mcp.__all__ if getattr(adapters_mcp, name, None) is None]

    assert missing == []
