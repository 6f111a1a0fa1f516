"""`SpiderMemoryStore`: the SQL store behind a Spider head, where a DELETE does not count its rows.

MariaDB 10.11's Spider pushes a `DELETE` down to the data node whole and then reports 0 affected
rows, whether it removed one or none (an `UPDATE` counts correctly). The plain store decides
"deleted or not found" from that count, so here the memory is looked up first, owner-scoped and
locked (`FOR UPDATE`, on the one data node that holds the user), in the same transaction.
"""

from __future__ import annotations

import sqlalchemy as sa

from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.memory_store import SqlMemoryStore, delete_dependents
from adapters_mysql.owner import owned_memories
from adapters_mysql.schema import memory
from adapters_mysql.unit_of_work import writing
from adapters_mysql.usage import credit


class SpiderMemoryStore(SqlMemoryStore):
    """`SqlMemoryStore` whose delete reads before it writes (see the module), the usage ledger included."""

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        mine = sa.and_(owned_memories(user_id), memory.c.id == memory_id)
        with unavailable_on_driver_error("delete"), writing(self._engine) as connection:
            found = connection.execute(sa.select(memory.c.characters).where(mine).with_for_update()).first()
            if found is None:
                return False
            credit(connection, user_id=user_id, characters=found.characters or 0)
            # Contexts and vector first, as the plain store does; every statement stays on the user's data node.
            delete_dependents(connection, user_id, memory_id)
            connection.execute(memory.delete().where(mine))
            return True
