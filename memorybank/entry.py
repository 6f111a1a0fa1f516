"""The console-script entry point: the command, or one line naming the extras when they are missing.

The commands import the server stack (Starlette, uvicorn, SQLAlchemy) when they run; after a
bare `pip install memorybank` those are absent, and a newcomer should read what to install,
not a traceback. `--help` and `prompt` need none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: The extra that brings everything the commands import.
SERVER_EXTRA = "server"
_OUR_PACKAGES = frozenset(
    {"memorybank", "memorybank_core", "adapters_http", "adapters_mcp", "adapters_mysql", "migrations"}
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `memorybank`; exit status 1 with a one-line hint if an optional dependency is missing."""
    from memorybank.cli import main as run

    try:
        return run(argv)
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if not missing or missing in _OUR_PACKAGES:
            raise  # our own module missing is a broken install or a bug, not a missing extra
        from memorybank_core.distribution import install_command  # only on this failure: `--help` stays light

        hint = install_command(SERVER_EXTRA)
        sys.stderr.write(f"memorybank: error: the command needs {missing}, which is not installed: {hint}\n")
        return 1
