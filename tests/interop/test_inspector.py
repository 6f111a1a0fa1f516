"""The MCP Inspector CLI (a client nobody here wrote) against the rail, over streamable HTTP and stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.served import REPO_ROOT
from tests.interop.conftest import INSPECTOR, Answer, run_node_client
from tests.rail_users import RailUser

pytestmark = pytest.mark.interop

#: The Inspector's exit codes.
OK, TOOL_ERROR, AUTH_REQUIRED = 0, 5, 3


def inspector(home: Path, target: list[str], method: str, tool: str | None = None, args: Any = None) -> Answer:
    argv = [str(INSPECTOR), "--cli", "--format", "json", "--method", method]
    if tool is not None:
        argv += ["--tool-name", tool, "--tool-args-json", json.dumps(args or {})]
    # The target goes last: for stdio it ends with `-- command args`, and everything after `--` is the server's.
    return run_node_client([*argv, *target], home)


def http_target(base_url: str, secret: str | None) -> list[str]:
    target = ["--transport", "http", "--server-url", f"{base_url}/mcp/agent", "--stored-auth-only"]
    return target + (["--header", f"Authorization: Bearer {secret}"] if secret else [])


def stdio_target(user: RailUser) -> list[str]:
    return ["--cwd", str(REPO_ROOT), "--", *user.stdio_command()]


def result(answer: Answer, status: int = OK) -> Any:
    assert answer.status == status, (answer.stdout, answer.stderr)
    return answer.json()["result"]


def test_it_lists_exactly_the_two_tools_and_finds_no_portability_problem_over_http(
    node: str, home: Path, base_url: str, user: RailUser
) -> None:
    answer = inspector(home, [*http_target(base_url, user.secret), "--strict"], "tools/list")

    tools = result(answer)["tools"]
    assert [tool["name"] for tool in tools] == ["search_capabilities", "execute_capability"]
    assert "Warning" not in answer.stderr
    assert "error" not in answer.stderr.lower()


def test_it_discovers_saves_and_searches_over_http(node: str, home: Path, base_url: str, user: RailUser) -> None:
    target = http_target(base_url, user.secret)

    found = result(inspector(home, target, "tools/call", "search_capabilities", {"query": "save a memory"}))
    name = found["structuredContent"]["matches"][0]["name"]
    saved = result(
        inspector(
            home,
            target,
            "tools/call",
            "execute_capability",
            {"name": name, "body": {"content": "Inspector saw the harbour lights"}},
        )
    )
    searched = result(
        inspector(
            home, target, "tools/call", "execute_capability", {"name": "getMemorySearch", "query": {"q": "harbour"}}
        )
    )

    assert name == "postMemory"
    assert saved["isError"] is False
    assert saved["structuredContent"]["status"] == 201
    memory_id = saved["structuredContent"]["body"]["memory"]["id"]
    assert [r["id"] for r in searched["structuredContent"]["body"]["results"]] == [memory_id]
    assert json.loads(searched["content"][0]["text"]) == searched["structuredContent"]["body"]


def test_a_rail_error_reaches_it_as_a_tool_error(node: str, home: Path, base_url: str, user: RailUser) -> None:
    answer = inspector(
        home, http_target(base_url, user.secret), "tools/call", "execute_capability", {"name": "memory_save"}
    )

    assert answer.status == TOOL_ERROR, (answer.stdout, answer.stderr)


@pytest.mark.parametrize("secret", [None, "mbk_not-a-real-token"])
def test_without_a_valid_token_it_is_told_to_authenticate(
    node: str, home: Path, base_url: str, secret: str | None
) -> None:
    answer = inspector(home, http_target(base_url, secret), "tools/list")

    assert answer.status == AUTH_REQUIRED, (answer.stdout, answer.stderr)
    expected = "missing_mcp_token" if secret is None else "invalid_mcp_token"
    assert expected in answer.stdout + answer.stderr


def test_it_lists_saves_and_searches_over_stdio(node: str, home: Path, user: RailUser) -> None:
    target = stdio_target(user)

    listed = result(inspector(home, target, "tools/list"))
    saved = result(
        inspector(
            home,
            target,
            "tools/call",
            "execute_capability",
            {"name": "postMemory", "body": {"content": "Stdio remembers the lighthouse"}},
        )
    )
    searched = result(
        inspector(
            home, target, "tools/call", "execute_capability", {"name": "getMemorySearch", "query": {"q": "lighthouse"}}
        )
    )

    assert [tool["name"] for tool in listed["tools"]] == ["search_capabilities", "execute_capability"]
    memory_id = saved["structuredContent"]["body"]["memory"]["id"]
    assert [r["id"] for r in searched["structuredContent"]["body"]["results"]] == [memory_id]
