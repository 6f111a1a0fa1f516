"""Eval (seed §12 stage 3, the reference host's memory-save-recall flow) with the MCP SDK's own client.

A real `memorybank serve` (streamable HTTP) and real `memorybank mcp` processes (stdio),
each on a fresh SQLite database. The agent's moves: discover the save capability
search-first, save a human-verified memory; then, in a separate fresh session, recall it
with a natural-language question, list it, delete it, and confirm it is gone.

Set MEMORYBANK_EVAL_TRANSCRIPT=path to write the HTTP run's tool calls as Markdown
(docs/mcp.md quotes one).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from adapters_mcp import MEMORY_BANK_PROMPT
from memorybank import bootstrap
from memorybank.settings import choose_database
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.served import REPO_ROOT, memorybank_command, served

pytestmark = pytest.mark.anyio

FACT = "The production deploy target is a Daytona sandbox in eu-west"
SNIPPET = "we ship prod to the Daytona sandbox, eu-west region"
QUESTION = "where do we deploy production?"

Connect = Callable[[], AbstractAsyncContextManager[ClientSession]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@attrs.frozen
class Bank:
    """One user on the eval database, with a token."""

    db_url: str
    user_id: str
    org_id: str
    secret: str
    log_dir: Path


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One SQLite database for the module, created the way `memorybank` creates it."""
    log_dir = tmp_path_factory.mktemp("eval")
    db_url = f"sqlite:///{log_dir / 'eval.sqlite3'}"
    bootstrap.open_ready_storage(choose_database(db_url, {})).close()
    return db_url, log_dir


@pytest.fixture(scope="module")
def base_url(database: tuple[str, Path]) -> Iterator[str]:
    """A real `memorybank serve` on the eval database."""
    db_url, log_dir = database
    with served(db_url, log=log_dir / "serve.log") as url:
        yield url


@pytest.fixture
def bank(database: tuple[str, Path]) -> Bank:
    """A new user with a token (issued in-process: `memorybank token create` has its own tests)."""
    db_url, log_dir = database
    user_id, org_id = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    storage = bootstrap.open_ready_storage(choose_database(db_url, {}))
    try:
        secret = bootstrap.build_services(storage).tokens.issue(user_id=user_id, org_id=org_id).secret
    finally:
        storage.close()
    return Bank(db_url=db_url, user_id=user_id, org_id=org_id, secret=secret, log_dir=log_dir)


@pytest.fixture
def http_sessions(bank: Bank, base_url: str) -> Connect:
    """Fresh sessions to the real `memorybank serve`, authenticated with the user's token."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {bank.secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{base_url}/mcp/agent", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session

    return connect


@pytest.fixture
def stdio_sessions(bank: Bank) -> Connect:
    """Fresh `memorybank mcp` processes, started the way an MCP client starts them (short environment)."""
    command, *args = memorybank_command("mcp", "--db", bank.db_url, "--user", bank.user_id, "--org", bank.org_id)
    parameters = StdioServerParameters(command=command, args=args, cwd=REPO_ROOT)

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        with (bank.log_dir / "mcp-stdio.log").open("a") as errlog:
            async with stdio_client(parameters, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                yield session

    return connect


@attrs.define
class Agent:
    """Drives one session the way an agent would, noting every tool call for the transcript."""

    session: ClientSession
    transcript: list[str]

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        result = await self.session.call_tool(tool, arguments)
        (block,) = result.content
        assert isinstance(block, types.TextContent)
        self.transcript.append(
            f"→ {tool} {json.dumps(arguments)}\n← {'error ' if result.is_error else ''}{_shorten(block.text)}"
        )
        return result

    async def find(self, query: str) -> str:
        found = await self.call("search_capabilities", {"query": query, "limit": 3})
        assert not found.is_error
        name: str = (found.structured_content or {})["matches"][0]["name"]
        return name

    async def execute(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call("execute_capability", {"name": name, **arguments})
        assert not result.is_error, result.content
        structured: dict[str, Any] | None = result.structured_content
        assert structured is not None
        return structured


def _shorten(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


async def save_then_recall(connect: Connect) -> list[str]:
    """The flow; returns the transcript."""
    transcript: list[str] = []

    # Session 1: the human confirmed the drafted memory; the agent discovers how to save it.
    async with connect() as session:
        init = await session.initialize()
        assert init.instructions == MEMORY_BANK_PROMPT
        assert [t.name for t in (await session.list_tools()).tools] == ["search_capabilities", "execute_capability"]
        agent = Agent(session, transcript)
        save = await agent.find("save a memory")
        assert save == "postMemory"
        saved = await agent.execute(
            save, body={"content": FACT, "tags": ["deploy"], "contexts": [{"snippet": SNIPPET}]}
        )
        assert saved["status"] == 201
        memory_id = saved["body"]["memory"]["id"]

    transcript.append("(a new session)")
    # Session 2, fresh: the person asks; the agent recalls, lists, deletes after confirmation.
    async with connect() as session:
        await session.initialize()
        agent = Agent(session, transcript)
        search = await agent.find("search my memories")
        assert search == "getMemorySearch"
        recalled = await agent.execute(search, query={"q": QUESTION})
        results = recalled["body"]["results"]
        assert [r["id"] for r in results] == [memory_id]
        assert results[0]["content"] == FACT
        assert results[0]["contexts"][0]["snippet"] == SNIPPET

        listing = await agent.find("list my memories")
        assert listing == "getMemory"
        listed = await agent.execute(listing, query={"limit": 10})
        assert [m["id"] for m in listed["body"]["memories"]] == [memory_id]

        delete = await agent.find("delete a memory")
        assert delete == "deleteMemoryById"
        deleted = await agent.execute(delete, path={"id": memory_id})
        assert deleted == {"status": 204, "body": None}

        gone = await agent.execute(search, query={"q": QUESTION})
        assert gone["body"] == {"results": []}
        empty = await agent.execute(listing)
        assert empty["body"]["memories"] == []
    return transcript


async def test_save_then_recall_over_streamable_http(http_sessions: Connect) -> None:
    transcript = await save_then_recall(http_sessions)

    target = os.environ.get("MEMORYBANK_EVAL_TRANSCRIPT")
    if target:
        Path(target).write_text("\n\n".join(transcript) + "\n")


async def test_save_then_recall_over_stdio(stdio_sessions: Connect) -> None:
    await save_then_recall(stdio_sessions)


async def test_a_one_shot_tools_call_without_initialize_over_a_real_server(bank: Bank, base_url: str) -> None:
    # The reference host's own eval talks to /mcp/agent this way.
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(
            f"{base_url}/mcp/agent",
            headers={"Authorization": f"Bearer {bank.secret}", "Accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "search_capabilities", "arguments": {"query": "save a memory"}},
            },
        )

    assert response.status_code == 200, response.text
    assert response.json()["result"]["structuredContent"]["matches"][0]["name"] == "postMemory"


def test_the_stdio_server_exits_cleanly_when_the_client_closes_stdin_and_prints_nothing_else(bank: Bank) -> None:
    result = subprocess.run(  # noqa: S603 - our own command, no shell
        memorybank_command("mcp", "--db", bank.db_url, "--user", bank.user_id, "--org", bank.org_id),
        cwd=REPO_ROOT,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
