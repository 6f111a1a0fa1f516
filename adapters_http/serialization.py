"""Core entities to wire JSON: snake_case keys, ISO-8601 UTC timestamps (see `schemas`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memorybank_core.entities import Citation, Memory, MemoryContext, MemoryPage, SearchResult

Json = dict[str, Any]
"""A JSON object as Python data."""


def timestamp(value: datetime) -> str:
    """`2026-07-02T12:00:00.001Z`: UTC, millisecond precision (what every backend stores)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def citation_json(citation: Citation | None) -> Json | None:
    """A citation with only the ids that were given, or None when there is none."""
    if citation is None:
        return None
    fields = {"conversation_id": citation.conversation_id, "message_id": citation.message_id}
    return {key: value for key, value in fields.items() if value is not None}


def context_json(context: MemoryContext) -> Json:
    """One context of a memory."""
    return {
        "id": context.id,
        "snippet": context.snippet,
        "citation": citation_json(context.citation),
        "origin": context.origin.value if context.origin is not None else None,
        "created_at": timestamp(context.created_at),
    }


def memory_json(memory: Memory) -> Json:
    """A memory with its contexts. The owner's ids stay out: the caller is the owner."""
    return {
        "id": memory.id,
        "content": memory.content,
        "tags": list(memory.tags),
        "source": memory.source.value,
        "scope": memory.scope.value,
        "created_at": timestamp(memory.created_at),
        "updated_at": timestamp(memory.updated_at),
        "contexts": [context_json(context) for context in memory.contexts],
    }


def search_results_json(results: list[SearchResult]) -> Json:
    """The body of a search: each memory flattened with its score."""
    return {"results": [{**memory_json(result.memory), "score": result.score} for result in results]}


def memory_page_json(page: MemoryPage) -> Json:
    """The body of a list: one page and the cursor of the next."""
    return {"memories": [memory_json(memory) for memory in page.memories], "next_cursor": page.next_cursor}
