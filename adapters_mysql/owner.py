"""The owner predicate: the one place that says which `memory` rows belong to whom.

Every statement on `memory` filters through here: a user's own memories are `user_id = :owner AND
scope = 'user'` (a later scope, such as an organization's shared memories, must not leak into any of
them), and an organization's are its members' personal memories (`org_id = :org AND scope = 'user'`).
`owner` is a value (bound as a parameter) or a bind parameter of a statement built once.
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


def owned_memories(owner: str | sa.BindParameter[Any]) -> sa.ColumnElement[bool]:
    """`memory.user_id = :owner AND memory.scope = 'user'`: the user's own, personal memories only."""
    return sa.and_(memory.c.user_id == owner, _personal())


def owned_vectors(owner: str | sa.BindParameter[Any]) -> sa.ColumnElement[bool]:
    """`memory_vector.user_id = :owner`: the vectors of the user's memories (hybrid search), keyed by owner first."""
    return memory_vector.c.user_id == owner


def organization_memories(org: str | sa.BindParameter[Any]) -> sa.ColumnElement[bool]:
    """`memory.org_id = :org AND memory.scope = 'user'`: the personal memories saved under an organization."""
    return sa.and_(memory.c.org_id == org, _personal())


def _personal() -> sa.ColumnElement[bool]:
    return memory.c.scope == Scope.USER.value
