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
from harness.served import REPO_ROOT, served
from tests.rail_users import RailUser, create_database, new_user, sse_data

#: Real processes (stdio and HTTP): the serve_processes tier, so the README's test command stays quick.
pytestmark = [pytest.mark.anyio, pytest.mark.serve_processes]

FACT = "The production deploy target is a Daytona sandbox in eu-west"
SNIPPET = "we ship prod to the Daytona sandbox, eu-west region"
QUESTION = "where do we deploy production?"

Connect = Callable[[], AbstractAsyncContextManager[ClientSession]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("eval")


@pytest.fixture(scope="module")
def db_url(log_dir: Path) -> str:
    return create_database(log_dir)


@pytest.fixture(scope="module")
def base_url(db_url: str, log_dir: Path) -> Iterator[str]:
    """A real `memorybank serve` on the eval database."""
    with served(db_url, log=log_dir / "serve.log") as url:
        yield url


@pytest.fixture
def bank(db_url: str) -> RailUser:
    return new_user(db_url)


@pytest.fixture
def http_sessions(bank: RailUser, base_url: str) -> Connect:
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
def stdio_sessions(bank: RailUser, log_dir: Path) -> Connect:
    """Fresh `memorybank mcp` processes, started the way an MCP client starts them (short environment)."""
    command, *args = bank.stdio_command()
    parameters = StdioServerParameters(command=command, args=args, cwd=REPO_ROOT)

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        with (log_dir / "mcp-stdio.log").open("a") as errlog:
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


async def test_a_one_shot_tools_call_without_initialize_over_a_real_server(bank: RailUser, base_url: str) -> None:
    # The reference host's own eval talks to /mcp/agent this way, and reads the SSE `data:` line.
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
    assert response.headers["content-type"].startswith("text/event-stream")
    assert sse_data(response.text)["result"]["structuredContent"]["matches"][0]["name"] == "postMemory"


def test_the_stdio_server_exits_cleanly_when_the_client_closes_stdin_and_prints_nothing_else(bank: RailUser) -> None:
    result = subprocess.run(  # noqa: S603 - our own command, no shell
        bank.stdio_command(),
        cwd=REPO_ROOT,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
