"""The rail while memory is switched off: no capability, no `## Memory Bank` instructions, 403s passed on plainly.

And a full quota passed on with words an agent can relay.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from adapters_mcp import MEMORY_BANK_PROMPT
from memorybank_core import MemoryControls, SubjectKind, TokenService
from tests.conftest import User
from tests.mcp.conftest import RpcCaller, rpc_caller, text_json

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}


def _instructions(caller: RpcCaller) -> object:
    return caller.post("initialize", INITIALIZE)["result"].get("instructions")


def _found(caller: RpcCaller) -> list[str]:
    answer = text_json(caller.call("search_capabilities", {"query": "save a memory"}))
    return [match["name"] for match in answer["matches"]]


@pytest.mark.parametrize("switch", [SubjectKind.USER, SubjectKind.ORG, SubjectKind.ALL])
def test_a_switched_off_caller_gets_no_memory_capability_and_no_memory_instructions(
    rpc_alice: RpcCaller, rpc_bob: RpcCaller, controls: MemoryControls, switch: SubjectKind
) -> None:
    alice = rpc_alice.user
    assert _instructions(rpc_alice) == MEMORY_BANK_PROMPT
    assert "postMemory" in _found(rpc_alice)

    subject = {SubjectKind.USER: alice.user_id, SubjectKind.ORG: alice.organization_id, SubjectKind.ALL: None}
    controls.set_gate(switch, subject[switch], enabled=False)

    assert _instructions(rpc_alice) is None
    off = text_json(rpc_alice.call("search_capabilities", {"query": "save a memory"}))
    assert off["matches"] == []
    assert "switched off" in off["hint"]
    assert rpc_alice.post("prompts/list")["result"]["prompts"] == []
    executed = rpc_alice.execute("postMemory", body={"content": "refused"})
    assert executed["isError"] is True
    assert executed["structuredContent"]["status"] == 403
    assert executed["structuredContent"]["body"]["error"] == "memory_disabled"
    assert "switched off" in executed["content"][0]["text"].split("\n", 1)[1]
    # Bob is someone else in another organization: only the kill switch reaches him.
    assert (_instructions(rpc_bob) is None) is (switch is SubjectKind.ALL)

    controls.set_gate(switch, subject[switch], enabled=True)
    assert _instructions(rpc_alice) == MEMORY_BANK_PROMPT
    assert "postMemory" in _found(rpc_alice)


def test_a_full_quota_reaches_the_agent_with_the_numbers_and_what_to_tell_the_person(
    client: TestClient, tokens: TokenService, controls: MemoryControls
) -> None:
    caller = rpc_caller(client, tokens, User())
    controls.set_quota(SubjectKind.USER, caller.user.user_id, max_memories=1)
    assert caller.execute("postMemory", body={"content": "the first"})["isError"] is False

    refused = caller.execute("postMemory", body={"content": "the second"})

    assert refused["isError"] is True
    body = refused["structuredContent"]["body"]
    assert body["error"] == "quota_exceeded"
    assert body["details"][0]["limit"] == 1
    assert body["details"][0]["used"] == 1
    text = refused["content"][0]["text"]
    assert "NOT saved" in text
    assert "delete" in text
