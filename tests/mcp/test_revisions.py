"""Memories that change, through the rail: an agent edits with the body's `revision` (it cannot send If-Match),
reads the history, saves with `supersedes`, sees `similar`, and is told what to do after a conflict."""

from __future__ import annotations

import mcp_types as types
import pytest

from adapters_mcp import CapabilityRail
from tests.conftest import User
from tests.mcp.test_tools import execute, payload, saved_id

pytestmark = pytest.mark.anyio


async def test_an_agent_edits_with_the_revision_it_read_and_a_stale_one_changes_nothing(
    rail: CapabilityRail, alice: User
) -> None:
    memory_id = await saved_id(rail, alice, "the standup is at nine")

    edited = await execute(
        rail, alice, "patchMemoryById", path={"id": memory_id}, body={"content": "the standup is at ten", "revision": 1}
    )
    stale = await execute(
        rail, alice, "patchMemoryById", path={"id": memory_id}, body={"content": "lost", "revision": 1}
    )

    assert not edited.is_error
    assert payload(edited)["memory"]["revision"] == 2
    assert stale.is_error
    assert stale.structured_content is not None
    assert stale.structured_content["status"] == 412
    (block,) = stale.content
    assert isinstance(block, types.TextContent)
    assert "revision_conflict" in block.text
    assert "NOT changed" in block.text  # the advice the agent acts on
    assert stale.structured_content["body"]["memory"]["content"] == "the standup is at ten"


async def test_an_agent_reads_the_history_and_each_version_says_it_came_through_mcp(
    rail: CapabilityRail, alice: User
) -> None:
    memory_id = await saved_id(rail, alice, "version one")
    await execute(rail, alice, "patchMemoryById", path={"id": memory_id}, body={"content": "version two"})

    result = await execute(rail, alice, "getMemoryRevisions", path={"memoryId": memory_id}, query={"limit": 5})

    assert not result.is_error
    versions = payload(result)["revisions"]
    assert [(v["content"], v["door"]) for v in versions] == [("version two", "mcp"), ("version one", "mcp")]


async def test_a_save_answers_similar_and_supersedes_replaces_in_one_call(rail: CapabilityRail, alice: User) -> None:
    old = await saved_id(rail, alice, "my dentist appointment is on tuesday at nine")

    first = payload(
        await execute(rail, alice, "postMemory", body={"content": "my dentist appointment is now on tuesday at ten"})
    )
    assert [s["id"] for s in first["similar"]] == [old]
    await execute(rail, alice, "deleteMemoryById", path={"id": first["memory"]["id"]})
    replaced = payload(
        await execute(
            rail,
            alice,
            "postMemory",
            body={"content": "my dentist appointment is now on tuesday at ten", "supersedes": [old]},
        )
    )

    listed = payload(await execute(rail, alice, "getMemory"))["memories"]
    assert [m["id"] for m in listed] == [replaced["memory"]["id"]]
    assert replaced["similar"] == []
