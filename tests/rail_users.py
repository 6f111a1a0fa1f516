"""Users with tokens on a real (SQLite) database, for tests that drive `memorybank serve` and `memorybank mcp`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from harness.served import memorybank_command
from memorybank import bootstrap
from memorybank.settings import Settings
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id


@attrs.frozen
class RailUser:
    """One user on a database: the ids the stdio rail is started with, and a bearer token for HTTP."""

    db_url: str
    user_id: str
    org_id: str
    secret: str

    def stdio_command(self) -> list[str]:
        """The argv an MCP client runs to reach this user's bank over stdio."""
        return memorybank_command("mcp", "--db", self.db_url, "--user", self.user_id, "--org", self.org_id)


def create_database(directory: Path) -> str:
    """A fresh SQLite database in `directory`, initialized as `memorybank` does on first use."""
    db_url = f"sqlite:///{directory / 'bank.sqlite3'}"
    bootstrap.build(Settings.for_database(db_url)).close()
    return db_url


def new_user(db_url: str) -> RailUser:
    """A new user with a token holding both scopes (issued in-process: `token create` has its own tests)."""
    user_id, org_id = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    with bootstrap.build(Settings.for_database(db_url)) as runtime:
        secret = runtime.services.tokens.issue(user_id=user_id, org_id=org_id).secret
    return RailUser(db_url=db_url, user_id=user_id, org_id=org_id, secret=secret)


def sse_data(stream: str) -> Any:
    """The JSON of the single `data:` line of a one-event SSE answer, as the reference host's eval reads it."""
    (data,) = [line.removeprefix("data:").strip() for line in stream.splitlines() if line.startswith("data:")]
    return json.loads(data)
