"""The owner predicate: the one place that says which `memory` rows belong to whom.

Every statement on `memory` that picks rows filters through here: a user's own memories are
`user_id = :owner AND scope = 'user'` (a later scope, such as an organization's shared memories, must
not leak into any of them), and an organization's are its members' personal memories (`org_id = :org
AND scope = 'user'`). Maintenance that rewrites or locks a row it has already read (reindex, the usage
backfill, the embedding backfill) and a join to a row's children address the row by its owner and id,
whatever its scope (`memory_row`): the row was chosen by the statement that read it. `owner` is a value
(bound as a parameter), a bind parameter of a statement built once, or a column to join on.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from adapters_mysql.schema import memory, memory_vector
from memorybank_core import Scope

OWNER = "owner"
"""The name of the owner's bind parameter in statements built once (`owner_parameter()`)."""


def owner_parameter() -> sa.BindParameter[str]:
    """`:owner`, for a statement built once and executed with `{"owner": user_id}`."""
    return sa.bindparam(OWNER, type_=sa.String)


def owned_memories(owner: str | sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """`memory.user_id = :owner AND memory.scope = 'user'`: the user's own, personal memories only."""
    return sa.and_(memory.c.user_id == owner, personal_memories())


def memory_row(owner: str | sa.ColumnElement[Any], memory_id: str | sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """`memory.user_id = :owner AND memory.id = :id`: one row, any scope, for a statement that already chose it."""
    return sa.and_(memory.c.user_id == owner, memory.c.id == memory_id)


def personal_memories() -> sa.ColumnElement[bool]:
    """`memory.scope = 'user'`: every owner's personal memories, for a maintenance walk across owners."""
    return memory.c.scope == Scope.USER.value


def owned_vectors(owner: str | sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """`memory_vector.user_id = :owner`: the vectors of the user's memories (hybrid search), keyed by owner first."""
    return memory_vector.c.user_id == owner


def vector_row(owner: str | sa.ColumnElement[Any], memory_id: str | sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """`memory_vector.user_id = :owner AND memory_vector.memory_id = :id`: one memory's vector."""
    return sa.and_(owned_vectors(owner), memory_vector.c.memory_id == memory_id)


def vectors_after(owner: str, memory_id: str) -> sa.ColumnElement[bool]:
    """The vectors after `(owner, memory_id)` in a maintenance walk across owners, in key order (owner, memory)."""
    return sa.or_(memory_vector.c.user_id > owner, sa.and_(owned_vectors(owner), memory_vector.c.memory_id > memory_id))


def organization_memories(org: str | sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """`memory.org_id = :org AND memory.scope = 'user'`: the personal memories saved under an organization."""
    return sa.and_(memory.c.org_id == org, personal_memories())
