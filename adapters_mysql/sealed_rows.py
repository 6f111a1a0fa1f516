"""Memory rows in and out of SQL, sealed at rest when a key ring is configured.

`RowCodec` is the one place a `Memory` becomes table rows and rows become a `Memory`. Without a
`Sealer` the user texts are stored as they are. With one, each stored user text — `content`,
the `tags` list, each context's `snippet` and its citation ids — is sealed and bound to its
place (table, column, row id, owner; a context also to its memory), and `memory.seal_state`
records the keys that wrote the row ("<sealing key>:<index key>"; NULL: plaintext).

Reading fails closed: a value that does not open (flipped byte, moved from another row or
another user's row, a key the ring lacks, a plaintext row in a database that no longer allows
them) raises `BrokenSealError`; the store then treats that memory as unavailable and logs its
id, and the other memories keep working.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memorybank_core import (
    BrokenSealError,
    Citation,
    Memory,
    MemoryContext,
    Origin,
    Scope,
    SealBinding,
    Sealer,
    Source,
)
from memorybank_core.entities import charged_characters
from memorybank_core.wire import citation_ids

MEMORY_TABLE = "memory"
CONTEXT_TABLE = "memory_context"


def seal_state(sealer: Sealer, index_key_id: str) -> str:
    """What `memory.seal_state` holds for a row sealed by `sealer` and indexed under `index_key_id`."""
    return f"{sealer.primary_key_id}:{index_key_id}"


class RowCodec:
    """Builds `memory` / `memory_context` rows from entities and entities from rows, sealing when keyed."""

    def __init__(self, sealer: Sealer | None = None, *, index_key_id: str | None = None) -> None:
        self._sealer = sealer
        self._state = seal_state(sealer, index_key_id or sealer.primary_key_id) if sealer is not None else None
        #: Whether a plaintext row may be read: True until every row is sealed (`SqlStorage` decides).
        self.plaintext_allowed = True

    @property
    def state(self) -> str | None:
        """The `seal_state` this codec writes (None: plaintext)."""
        return self._state

    def memory_row(self, saved: Memory) -> dict[str, Any]:
        """The `memory` row of `saved`, without its search columns."""
        tags: Any = list(saved.tags) if saved.tags else None
        content = saved.content
        if self._sealer is not None:
            content = self._seal(content, MEMORY_TABLE, "content", saved.id, saved.user_id)
            if tags is not None:
                tags = self._seal(json.dumps(tags), MEMORY_TABLE, "tags", saved.id, saved.user_id)
        return {
            "id": saved.id,
            "user_id": saved.user_id,
            "org_id": saved.org_id,
            "scope": saved.scope.value,
            "content": content,
            "source": saved.source.value,
            "tags": tags,
            "created_at": saved.created_at,
            "updated_at": saved.updated_at,
            "seal_state": self._state,
            "characters": charged_characters(saved),
        }

    def context_row(self, context: MemoryContext, user_id: str) -> dict[str, Any]:
        """The `memory_context` row of `context`, owned by `user_id`."""
        citation: Any = citation_ids(context.citation) or None
        snippet = context.snippet
        if self._sealer is not None:
            row_id = _context_row_id(context.memory_id, context.id)
            snippet = self._seal(snippet, CONTEXT_TABLE, "snippet", row_id, user_id)
            if citation is not None:
                citation = self._seal(json.dumps(citation), CONTEXT_TABLE, "citation", row_id, user_id)
        return {
            "id": context.id,
            "memory_id": context.memory_id,
            "user_id": user_id,
            "citation": citation,
            "snippet": snippet,
            "origin": context.origin.value if context.origin is not None else None,
            "created_at": context.created_at,
        }

    def memory(self, row: Any, context_rows: Sequence[Any]) -> Memory:
        """The entity for a `memory` row and its `memory_context` rows.

        Raises:
            BrokenSealError: a sealed value does not open here, or the row's state is not allowed.
        """
        sealed = row.seal_state is not None
        if sealed and self._sealer is None:
            raise BrokenSealError("the row is sealed and no key ring is configured")
        if not sealed and not self.plaintext_allowed:
            raise BrokenSealError("a plaintext row in a database whose rows are all sealed")
        content = row.content
        tags = row.tags
        if sealed:
            content = self._open(content, MEMORY_TABLE, "content", row.id, row.user_id)
            if tags is not None:
                tags = _json_list(self._open(tags, MEMORY_TABLE, "tags", row.id, row.user_id))
        # Our own rows: built without re-running the input validators (`Memory.restore`).
        return Memory.restore(
            id=row.id,
            user_id=row.user_id,
            org_id=row.org_id,
            scope=Scope(row.scope),
            content=content,
            source=Source(row.source),
            tags=tuple(tags or ()),
            created_at=row.created_at,
            updated_at=row.updated_at,
            contexts=tuple([self._context(context, sealed, row.user_id) for context in context_rows]),
        )

    def _context(self, row: Any, sealed: bool, user_id: str) -> MemoryContext:
        snippet = row.snippet
        citation = row.citation
        if sealed:
            row_id = _context_row_id(row.memory_id, row.id)
            snippet = self._open(snippet, CONTEXT_TABLE, "snippet", row_id, user_id)
            if citation is not None:
                citation = _json_object(self._open(citation, CONTEXT_TABLE, "citation", row_id, user_id))
        return MemoryContext.restore(
            id=row.id,
            memory_id=row.memory_id,
            snippet=snippet,
            citation=(
                Citation.restore(conversation_id=citation.get("conversation_id"), message_id=citation.get("message_id"))
                if citation
                else None
            ),
            origin=Origin(row.origin) if row.origin is not None else None,
            created_at=row.created_at,
        )

    def _seal(self, text: str, table: str, column: str, row_id: str, user_id: str) -> str:
        assert self._sealer is not None  # noqa: S101 - only called when sealing
        return self._sealer.seal(text, SealBinding(table=table, column=column, row_id=row_id, user_id=user_id))

    def _open(self, value: object, table: str, column: str, row_id: str, user_id: str) -> str:
        assert self._sealer is not None  # noqa: S101 - only called for sealed rows, checked above
        if not isinstance(value, str):
            raise BrokenSealError(f"{table}.{column} is not a sealed value")
        return self._sealer.open(value, SealBinding(table=table, column=column, row_id=row_id, user_id=user_id))


def _context_row_id(memory_id: str, context_id: str) -> str:
    # A context is bound to its memory too: moved under another memory of the same owner, it does not open.
    return f"{memory_id}/{context_id}"


def _json_list(text: str) -> list[str]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BrokenSealError("sealed tags are not a list of strings")
    return value


def _json_object(text: str) -> dict[str, str]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise BrokenSealError("a sealed citation is not an object")
    return value
