"""`SqlMemoryStore`: memories and their contexts in SQL, every statement scoped to one owner.

Dialect-neutral: the same statements run on MySQL/MariaDB and SQLite. Every statement
that touches `memory` or `memory_context` carries `user_id = :owner` (reads and deletes
of memories also `scope = 'user'`), so each one routes to a single Vitess shard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.schema import memory as memory_table
from adapters_mysql.schema import memory_context
from memorybank_core import Citation, ListPosition, Memory, MemoryContext, MemoryStore, Origin, Scope, Source


def owned_memories(user_id: str) -> sa.ColumnElement[bool]:
    """The owner predicate on `memory`: the user's own, personal memories only."""
    return sa.and_(memory_table.c.user_id == user_id, memory_table.c.scope == Scope.USER.value)


class SqlMemoryStore(MemoryStore):
    """The `MemoryStore` port over SQLAlchemy Core; see `adapters_mysql.open_storage`."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self._writer = for_writing(engine)

    def add(self, *, user_id: str, memory: Memory) -> None:
        if memory.user_id != user_id:
            raise ValueError("a memory is added by its own owner")
        with unavailable_on_driver_error("save"), self._writer.begin() as connection:
            connection.execute(memory_table.insert(), [_memory_row(memory)])
            if memory.contexts:
                connection.execute(
                    memory_context.insert(), [_context_row(context, user_id) for context in memory.contexts]
                )

    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        wanted = list(dict.fromkeys(memory_ids))
        if not wanted:
            return {}
        with unavailable_on_driver_error("load"), self._engine.connect() as connection:
            rows = connection.execute(
                sa.select(memory_table).where(owned_memories(user_id), memory_table.c.id.in_(wanted))
            ).all()
            memories = _with_contexts(connection, user_id, rows)
        return {found.id: found for found in memories}

    def list(self, *, user_id: str, limit: int, after: ListPosition | None) -> Sequence[Memory]:
        query = sa.select(memory_table).where(owned_memories(user_id))
        if after is not None:
            # Expanded rather than a row comparison, so MySQL can range-scan the
            # (user_id, created_at, id) index.
            query = query.where(
                sa.or_(
                    memory_table.c.created_at < after.created_at,
                    sa.and_(memory_table.c.created_at == after.created_at, memory_table.c.id < after.memory_id),
                )
            )
        query = query.order_by(memory_table.c.created_at.desc(), memory_table.c.id.desc()).limit(limit)
        with unavailable_on_driver_error("list"), self._engine.connect() as connection:
            return _with_contexts(connection, user_id, connection.execute(query).all())

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        with unavailable_on_driver_error("delete"), self._writer.connect() as connection:
            transaction = connection.begin()
            # Contexts first, as the reference host does. No read before the writes: the
            # memory delete's row count says whether the owner had such a memory.
            connection.execute(
                memory_context.delete().where(
                    memory_context.c.user_id == user_id, memory_context.c.memory_id == memory_id
                )
            )
            deleted = connection.execute(
                memory_table.delete().where(owned_memories(user_id), memory_table.c.id == memory_id)
            ).rowcount
            if deleted != 1:
                # Not the owner's personal memory: undo the context delete, report "none such".
                transaction.rollback()
                return False
            transaction.commit()
            return True


def _memory_row(saved: Memory) -> dict[str, Any]:
    return {
        "id": saved.id,
        "user_id": saved.user_id,
        "org_id": saved.org_id,
        "scope": saved.scope.value,
        "content": saved.content,
        "source": saved.source.value,
        "tags": list(saved.tags) if saved.tags else None,
        "created_at": saved.created_at,
        "updated_at": saved.updated_at,
    }


def _context_row(context: MemoryContext, user_id: str) -> dict[str, Any]:
    citation = context.citation
    return {
        "id": context.id,
        "memory_id": context.memory_id,
        "user_id": user_id,
        "citation": _citation_json(citation) if citation is not None else None,
        "snippet": context.snippet,
        "origin": context.origin.value if context.origin is not None else None,
        "created_at": context.created_at,
    }


def _citation_json(citation: Citation) -> dict[str, str] | None:
    fields = {"conversation_id": citation.conversation_id, "message_id": citation.message_id}
    present = {key: value for key, value in fields.items() if value is not None}
    return present or None


def _with_contexts(connection: sa.Connection, user_id: str, rows: Sequence[sa.Row[Any]]) -> list[Memory]:
    """Map memory rows to entities, loading all their contexts in one more query (no N+1)."""
    if not rows:
        return []
    context_rows = connection.execute(
        sa.select(memory_context)
        .where(memory_context.c.user_id == user_id, memory_context.c.memory_id.in_([row.id for row in rows]))
        # Contexts of one memory share created_at; ids are time-ordered TypeIDs minted in save order.
        .order_by(memory_context.c.created_at, memory_context.c.id)
    ).all()
    contexts: dict[str, list[MemoryContext]] = {}
    for row in context_rows:
        contexts.setdefault(row.memory_id, []).append(_context(row))
    return [_memory(row, contexts.get(row.id, [])) for row in rows]


def _memory(row: sa.Row[Any], contexts: list[MemoryContext]) -> Memory:
    return Memory(
        id=row.id,
        user_id=row.user_id,
        org_id=row.org_id,
        scope=Scope(row.scope),
        content=row.content,
        source=Source(row.source),
        tags=tuple(row.tags or ()),
        created_at=row.created_at,
        updated_at=row.updated_at,
        contexts=tuple(contexts),
    )


def _context(row: sa.Row[Any]) -> MemoryContext:
    citation = row.citation
    return MemoryContext(
        id=row.id,
        memory_id=row.memory_id,
        snippet=row.snippet,
        citation=(
            Citation(conversation_id=citation.get("conversation_id"), message_id=citation.get("message_id"))
            if citation
            else None
        ),
        origin=Origin(row.origin) if row.origin is not None else None,
        created_at=row.created_at,
    )
