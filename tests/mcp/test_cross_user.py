"""Merge gate (seed §8), through the rail: no capability ever reveals or touches another user's memory."""

from __future__ import annotations

from typing import Any

from memorybank_core.ids import MEMORY_PREFIX, new_id
from tests.mcp.conftest import RpcCaller, text_json


def saved_id(caller: RpcCaller, content: str, **body: Any) -> str:
    result = caller.execute("postMemory", body={"content": content, **body})
    assert result["isError"] is False, result
    memory_id: str = result["structuredContent"]["body"]["memory"]["id"]
    return memory_id


def listed_ids(caller: RpcCaller) -> set[str]:
    result = caller.execute("getMemory", query={"limit": 100})
    return {m["id"] for m in result["structuredContent"]["body"]["memories"]}


def found_ids(caller: RpcCaller, q: str) -> set[str]:
    result = caller.execute("getMemorySearch", query={"q": q, "limit": 50})
    return {r["id"] for r in result["structuredContent"]["body"]["results"]}


def test_no_capability_reveals_or_touches_another_users_memory(rpc_alice: RpcCaller, rpc_bob: RpcCaller) -> None:
    alice_ids = {
        saved_id(rpc_alice, "Alice banks with Zephyrbank", tags=["finance"], contexts=[{"snippet": "zephyr memo"}]),
        saved_id(rpc_alice, "Alice shared deploy notes"),
    }
    bob_ids = {saved_id(rpc_bob, "Bob shared deploy notes")}

    # list: each sees exactly their own
    assert listed_ids(rpc_bob) == bob_ids
    assert listed_ids(rpc_alice) == alice_ids
    # search: a word only Alice used finds nothing for Bob; a shared word finds only one's own
    assert found_ids(rpc_bob, "zephyrbank") == set()
    assert found_ids(rpc_bob, "zephyr memo finance") == set()
    assert found_ids(rpc_bob, "shared deploy notes") == bob_ids
    assert found_ids(rpc_alice, "shared deploy notes") <= alice_ids
    # delete: Bob cannot delete Alice's memories, and they survive his attempts
    for memory_id in alice_ids:
        refused = rpc_bob.execute("deleteMemoryById", path={"id": memory_id})
        assert refused["isError"] is True
        assert refused["structuredContent"]["status"] == 404
    assert listed_ids(rpc_alice) == alice_ids
    assert found_ids(rpc_alice, "zephyrbank") <= alice_ids
    assert found_ids(rpc_alice, "zephyrbank")
    # and the other way round
    for memory_id in bob_ids:
        assert rpc_alice.execute("deleteMemoryById", path={"id": memory_id})["structuredContent"]["status"] == 404
    assert listed_ids(rpc_bob) == bob_ids


def test_someone_elses_id_gets_the_same_404_as_an_id_that_never_existed(
    rpc_alice: RpcCaller, rpc_bob: RpcCaller
) -> None:
    alices = saved_id(rpc_alice, "Alice's secret plan")
    deleted = saved_id(rpc_bob, "deleted one")
    rpc_bob.execute("deleteMemoryById", path={"id": deleted})
    probes = {
        "someone else's": alices,
        "never existed": new_id(MEMORY_PREFIX),
        "already deleted": deleted,
        "malformed": "not-an-id",
        "traversal": f"../{alices}",
    }

    results = {name: rpc_bob.execute("deleteMemoryById", path={"id": probe}) for name, probe in probes.items()}

    reference = results["never existed"]
    assert reference["isError"] is True
    assert text_json(reference) == {"error": "memory_not_found", "message": "No memory with this id."}
    for name, result in results.items():
        assert (name, result) == (name, reference)
    assert listed_ids(rpc_alice) == {alices}


def test_a_list_cursor_from_one_user_never_reveals_the_other_users_memories(
    rpc_alice: RpcCaller, rpc_bob: RpcCaller
) -> None:
    for i in range(3):
        saved_id(rpc_alice, f"alice memory {i}")
        saved_id(rpc_bob, f"bob memory {i}")
    alice_cursor = rpc_alice.execute("getMemory", query={"limit": 1})["structuredContent"]["body"]["next_cursor"]

    page = rpc_bob.execute("getMemory", query={"limit": 100, "cursor": alice_cursor})["structuredContent"]["body"]

    assert all(m["content"].startswith("bob") for m in page["memories"])
