"""`memorybank --help` and `memorybank prompt` answer without loading the server stack.

Checked by what a fresh interpreter has imported, not by timing: the MCP SDK, Starlette and
SQLAlchemy take one to two seconds to import, and neither command needs any of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.served import REPO_ROOT
from memorybank_core import ids

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


def _probe(argv: list[str]) -> dict[str, Any]:
    """What `memorybank ARGV` returned and which top-level packages it loaded, in a fresh interpreter."""
    result = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", _PROBE.format(argv=argv)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    probe: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return probe


@pytest.mark.parametrize("argv", [["--help"], ["prompt"], ["token", "--help"], ["serve", "--help"]])
def test_the_command_answers_without_importing_the_server_stack(argv: list[str]) -> None:
    probe = _probe(argv)

    assert probe["status"] in (0, None)
    assert sorted(set(HEAVY) & set(probe["loaded"])) == []


def test_every_public_name_of_the_mcp_facade_resolves() -> None:
    import adapters_mcp

    missing = [name for name in adapters_mcp.__all__ if getattr(adapters_mcp, name, None) is None]

    assert missing == []


#: What an admin command on SQLite does without: the web stack, the MCP SDK, alembic, OAuth, the cipher and
#: the stemmer (it writes a token, not a memory).
ADMIN_NEVER = (*HEAVY[:2], "starlette", "alembic", "uvicorn", "pydantic", "anyio", "jsonschema", "jwt", "httpx2")
ADMIN_NEVER_EITHER = ("limits", "cryptography", "prometheus_client", "snowballstemmer")


def test_token_create_loads_only_the_database_stack(tmp_path: Path) -> None:
    argv = ["token", "create", "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"]
    probe = _probe(argv)

    assert probe["status"] in (0, None)
    assert "sqlalchemy" in probe["loaded"]
    assert sorted({*ADMIN_NEVER, *ADMIN_NEVER_EITHER} & set(probe["loaded"])) == []


_RAIL_PROBE = """
import json, sys
from memorybank.entry import main
try:
    main({argv!r})
finally:
    loaded = {{name.partition(".")[0] for name in sys.modules}}
    loaded |= {{name for name in sys.modules if name.startswith("adapters_mcp.")}}
    with open({out!r}, "w") as out:
        json.dump(sorted(loaded), out)
"""

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def test_the_stdio_rail_answers_initialize_without_our_http_transport_or_jsonschema(tmp_path: Path) -> None:
    out = tmp_path / "loaded.json"
    argv = ["mcp", "--user", ids.new_id("usr"), "--org", ids.new_id("org"), "--db", f"sqlite:///{tmp_path / 'b.db'}"]
    result = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", _RAIL_PROBE.format(argv=argv, out=str(out))],
        cwd=REPO_ROOT,
        input=json.dumps(_INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer = json.loads(result.stdout.splitlines()[0])
    loaded = set(json.loads(out.read_text()))

    assert answer["id"] == 1
    assert answer["result"]["serverInfo"]["name"]
    assert "mcp" in loaded
    # The SDK loads its own HTTP transport whatever we do; ours, and the argument validator, wait.
    assert sorted({"adapters_mcp.http_transport", "jsonschema"} & loaded) == []
