"""Entities rebuilt from storage rows (`restore`) equal the validated ones they were saved from."""

from __future__ import annotations

from datetime import UTC, datetime

from memorybank_core import Citation, Memory, MemoryContext, Origin, Scope, Source

AT = datetime(2026, 7, 2, 12, 0, 0, 1000, tzinfo=UTC)


def test_a_restored_memory_equals_the_validated_memory_with_the_same_fields() -> None:
    citation = Citation(conversation_id="conv-1", message_id=None)
    context = MemoryContext(
        id="mctx_1",
        memory_id="mem_1",
        snippet="said in chat",
        citation=citation,
        origin=Origin.ACTIVE_CONVERSATION,
        created_at=AT,
    )
    validated = Memory(
        id="mem_1",
        user_id="usr_1",
        org_id="org_1",
        scope=Scope.USER,
        content="Deploys go to eu-west-1",
        source=Source.CHAT,
        tags=["infra"],
        created_at=AT,
        updated_at=AT,
        contexts=[context],
    )

    restored = Memory.restore(
        id="mem_1",
        user_id="usr_1",
        org_id="org_1",
        scope=Scope.USER,
        content="Deploys go to eu-west-1",
        source=Source.CHAT,
        tags=("infra",),
        created_at=AT,
        updated_at=AT,
        contexts=(
            MemoryContext.restore(
                id="mctx_1",
                memory_id="mem_1",
                snippet="said in chat",
                citation=Citation.restore(conversation_id="conv-1", message_id=None),
                origin=Origin.ACTIVE_CONVERSATION,
                created_at=AT,
            ),
        ),
    )

    assert restored == validated
    assert hash(restored) == hash(validated)
    assert restored.contexts[0].citation == citation
