"""The secret screen through the rail: a save holding a credential comes back as a tool error that tells the agent
what to do instead, without the secret; ordinary memories are saved as before."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from adapters_mcp import EXECUTE_TOOL, MEMORY_BANK_PROMPT, CapabilityRail
from benchmarks.adversarial import filling
from harness.secret_cases import Case, harmless, secrets
from tests.conftest import User

pytestmark = pytest.mark.anyio


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def _save(rail: CapabilityRail, user: User, body: object) -> types.CallToolResult:
    return await rail.call(EXECUTE_TOOL, {"name": "postMemory", "body": body}, user)


@pytest.mark.parametrize("case", secrets(), ids=[case.name for case in secrets()])
async def test_a_credential_is_a_tool_error_that_says_to_save_a_pointer(
    rail: CapabilityRail, alice: User, case: Case
) -> None:
    result = await _save(rail, alice, {"content": case.text})

    assert result.is_error
    text = _text(result)
    body_line, advice = text.split("\n", 1)
    body = json.loads(body_line)
    assert body["error"] == "secret_detected"
    assert case.kind in {detail["kind"] for detail in body["details"]}
    assert "NOT saved" in advice
    assert "1Password under 'ci-deploy'" in advice
    assert case.secret not in text
    assert case.secret not in json.dumps(result.structured_content)
    listed = await rail.call(EXECUTE_TOOL, {"name": "getMemory"}, alice)
    assert json.loads(_text(listed))["memories"] == []


@pytest.mark.parametrize("case", harmless(), ids=[case.name for case in harmless()])
async def test_a_memory_that_only_sounds_secret_is_saved(rail: CapabilityRail, alice: User, case: Case) -> None:
    result = await _save(rail, alice, {"content": case.text})

    assert not result.is_error, _text(result)
    assert json.loads(_text(result))["memory"]["content"] == case.text


def test_the_prompt_says_in_one_line_that_credentials_are_refused_and_what_to_save_instead() -> None:
    lines = [line for line in MEMORY_BANK_PROMPT.splitlines() if "secret_detected" in line]

    assert len(lines) == 1
    assert "save a pointer" in lines[0]
    assert "1Password under 'ci-deploy'" in lines[0]


@pytest.mark.parametrize("unit", ["pwd=`", "pwd=``"], ids=["one backtick", "two backticks"])
async def test_issue_27s_costly_save_is_a_tool_error_saying_it_was_not_saved(
    rail: CapabilityRail, alice: User, unit: str
) -> None:
    result = await _save(rail, alice, filling(unit, unit).body())

    assert result.is_error
    body_line, advice = _text(result).split("\n", 1)
    assert json.loads(body_line)["error"] == "screen_budget_exceeded"
    assert "NOT saved" in advice
    listed = await rail.call(EXECUTE_TOOL, {"name": "getMemory"}, alice)
    assert json.loads(_text(listed))["memories"] == []
