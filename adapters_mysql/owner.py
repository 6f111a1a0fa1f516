"""The owner predicate: the one place that says which `memory` rows belong to whom.

Every statement on `memory` that picks rows filters through here: a user's own memories are
`user_id = :owner AND scope = 'user'` (an organization's shared memories never leak into any of them),
an organization bank's are `user_id = :bank AND scope = 'org'` (the bank is an owner of its own,
`memorybank_core.org_bank_owner`, which no person's id can be), and, for a purge, an organization's
members' personal memories are `org_id = :org AND scope = 'user'`. Maintenance that rewrites or
locks a row it has already read (reindex, the usage backfill, the embedding backfill) and a join to a
row's children address the row by its owner and id, whatever its scope (`memory_row`): the row was
chosen by the statement that read it. `owner` is a value (bound as a parameter), a bind parameter of a
statement built once (with `owner_scope_parameter()`), or a column to join on.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from adapters_mysql.schema import memory, memory_vector
from memorybank_core import Scope, owner_scope

OWNER = "owner"
"""The name of the owner's bind parameter in statements built once (`owner_parameter()`)."""


OWNER_SCOPE = "owner_scope"
"""The name of the owner's scope's bind parameter in statements built once (`owner_scope_parameter()`)."""


def owner_parameter() -> sa.BindParameter[str]:
    """`:owner`, for a statement built once and executed with `owner_values(user_id)`."""
    return sa.bindparam(OWNER, type_=sa.String)


def owner_scope_parameter() -> sa.BindParameter[str]:
    """`:owner_scope`, the scope of `:owner`'s rows, for a statement built once (`owner_values`)."""
    return sa.bindparam(OWNER_SCOPE, type_=sa.String)


def owner_values(owner: str) -> dict[str, str]:
    """`{"owner": owner, "owner_scope": ...}`: the values of `owner_parameter()` and `owner_scope_parameter()`."""
    return {OWNER: owner, OWNER_SCOPE: owner_scope(owner).value}


def owned_memories(
    owner: str | sa.ColumnElement[Any], scope: sa.ColumnElement[Any] | None = None
) -> sa.ColumnElement[bool]:
    """`memory.user_id = :owner AND memory.scope = <the owner's>`: a person's personal memories only, or an
    organization bank's org memories only (`memorybank_core.owner_scope`).

    An owner given as a value decides the scope itself; a statement built once passes `owner_scope_parameter()`.
    Any other expression (a purge's bound person) reads personal memories.
    """
    if isinstance(owner, str):
        return sa.and_(memory.c.user_id == owner, memory.c.scope == owner_scope(owner).value)
    if scope is None:
        return sa.and_(memory.c.user_id == owner, personal_memories())
    return sa.and_(memory.c.user_id == owner, memory.c.scope == scope)


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
