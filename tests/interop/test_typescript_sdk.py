"""The official TypeScript SDK's client (ts_client.mjs) against the rail, over streamable HTTP and stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters_mcp import MEMORY_BANK_PROMPT
from harness.served import REPO_ROOT
from tests.interop.conftest import TS_CLIENT, run_node_client
from tests.rail_users import RailUser

pytestmark = pytest.mark.interop


def ts_client(node: str, home: Path, config: dict[str, Any]) -> Any:
    answer = run_node_client([node, str(TS_CLIENT), json.dumps(config)], home)
    assert answer.status == 0, answer.stderr
    return answer.json()


def check_flow(report: dict[str, Any], content: str) -> None:
    assert [tool["name"] for tool in report["tools"]] == ["search_capabilities", "execute_capability"]
    annotations = {tool["name"]: tool["annotations"] for tool in report["tools"]}
    assert annotations["search_capabilities"]["readOnlyHint"] is True
    assert annotations["execute_capability"]["destructiveHint"] is True
    assert report["instructions"] == MEMORY_BANK_PROMPT
    assert report["prompts"] == ["memory_bank"]
    assert (report["saveName"], report["saveStatus"]) == ("postMemory", 201)
    assert report["searchName"] == "getMemorySearch"
    assert report["recalled"] == [{"id": report["savedId"], "content": content}]
    assert (report["deleteName"], report["deleteStatus"]) == ("deleteMemoryById", 204)
    assert report["unknown"]["isError"] is True
    assert report["unknown"]["body"]["error"] == "unknown_capability"


def test_the_typescript_client_saves_recalls_and_deletes_over_http(
    node: str, home: Path, base_url: str, user: RailUser
) -> None:
    content = "The TypeScript team meets on Thursdays in room Basalt"
    config = {
        "transport": "http",
        "url": f"{base_url}/mcp/agent",
        "token": user.secret,
        "content": content,
        "query": "when does the typescript team meet",
    }

    check_flow(ts_client(node, home, config), content)


def test_the_typescript_client_saves_recalls_and_deletes_over_stdio(node: str, home: Path, user: RailUser) -> None:
    command, *args = user.stdio_command()
    content = "The stdio client keeps its notes in the Obsidian vault"
    config = {
        "transport": "stdio",
        "command": command,
        "args": args,
        "cwd": str(REPO_ROOT),
        "content": content,
        "query": "where are the notes kept",
    }

    check_flow(ts_client(node, home, config), content)
