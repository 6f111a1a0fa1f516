"""Building entities directly, for tests that talk to the store without the use cases."""

from __future__ import annotations

from datetime import UTC, datetime

from memorybank_core import Citation, Memory, MemoryContext, Origin, Scope, Source
from memorybank_core.ids import CONTEXT_PREFIX, MEMORY_PREFIX, ORGANIZATION_PREFIX, USER_PREFIX, new_id

SAVED_AT = datetime(2026, 7, 2, 12, 0, 0, 123456, tzinfo=UTC)


def new_user() -> str:
    """A fresh user id."""
    return new_id(USER_PREFIX)


def make_memory(
    user_id: str,
    content: str = "remember the lighthouse keeper",
    *,
    snippets: tuple[str, ...] = ("a snippet",),
    scope: Scope = Scope.USER,
    tags: tuple[str, ...] = ("tag",),
    created_at: datetime = SAVED_AT,
    memory_id: str | None = None,
) -> Memory:
    """A memory with one context per snippet; the first context carries a full citation."""
    memory_id = memory_id or new_id(MEMORY_PREFIX)
    contexts = tuple(
        MemoryContext(
            id=new_id(CONTEXT_PREFIX),
            memory_id=memory_id,
            snippet=snippet,
            citation=Citation(conversation_id="conv-1", message_id="msg-1") if index == 0 else None,
            origin=Origin.ACTIVE_CONVERSATION if index == 0 else None,
            created_at=created_at,
        )
        for index, snippet in enumerate(snippets)
    )
    return Memory(
        id=memory_id,
        user_id=user_id,
        org_id=new_id(ORGANIZATION_PREFIX),
        scope=scope,
        content=content,
        source=Source.CHAT,
        tags=tags,
        created_at=created_at,
        updated_at=created_at,
        contexts=contexts,
    )
