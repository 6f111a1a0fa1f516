"""The usage ledger behind storage quotas: one `memory_usage` row per user, kept in step with their memories.

Every save charges the ledger and every delete credits it, in the transaction that writes the
memory, so the ledger never disagrees with the rows. A quota-checked save is one conditional
statement, `UPDATE … SET memories = memories + 1, characters = characters + :n WHERE user_id =
:owner AND memories + 1 <= :max AND characters + :n <= :max_characters`: the row lock makes
concurrent saves of one user queue, and each re-checks the condition against the committed
count, so 20 saves racing for the last slot store exactly one (tests/sql/test_quotas.py).

A user without a ledger row (new, or from before revision 0010) gets one built from their
memories (`COUNT`, `SUM(characters)`) the first time they save; `INSERT IGNORE` lets two first
saves race safely. Rows from before 0010 have no character count until `backfill_characters`
(run by `memorybank migrate`) measures them through the key ring.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

import sqlalchemy as sa

from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.owner import memory_row, owned_memories
from adapters_mysql.schema import memory, memory_usage
from adapters_mysql.unit_of_work import reading
from memorybank_core import Memory, Quota, Usage, charged_characters, check_quota

_log = logging.getLogger("memorybank.storage")


def _create_if_missing(connection: sa.Connection, user_id: str) -> None:
    """Build the user's ledger row from their memories, unless it exists (then nothing happens)."""
    counted = sa.select(
        sa.literal(user_id, type_=memory_usage.c.user_id.type),
        sa.func.count(),
        sa.func.coalesce(sa.func.sum(memory.c.characters), 0),
    ).where(owned_memories(user_id))
    connection.execute(
        memory_usage.insert()
        .from_select(["user_id", "memories", "characters"], counted)
        .prefix_with("IGNORE", dialect="mysql")
        .prefix_with("OR IGNORE", dialect="sqlite")
    )


def _read(connection: sa.Connection, user_id: str) -> Usage | None:
    # A locking read: the committed row now, not the transaction's snapshot (InnoDB repeatable read).
    row = connection.execute(
        sa.select(memory_usage.c.memories, memory_usage.c.characters)
        .where(memory_usage.c.user_id == user_id)
        .with_for_update()
    ).first()
    return None if row is None else Usage(memories=int(row.memories), characters=int(row.characters))


#: A save's charge, built once (every save runs it; building the expression cost more than sending it): one more
#: memory of `:characters`, for the owner `:owner`; `_CHARGE_WITHIN` only while it fits `:max_memories` and
#: `:max_characters` (the whole quota check is this WHERE, evaluated under the row lock against the committed count).
_CHARGE = memory_usage.update().values(
    memories=memory_usage.c.memories + 1, characters=memory_usage.c.characters + sa.bindparam("characters")
)
_CHARGE_ANY = _CHARGE.where(memory_usage.c.user_id == sa.bindparam("owner"))
_CHARGE_WITHIN = _CHARGE.where(
    memory_usage.c.user_id == sa.bindparam("owner"),
    memory_usage.c.memories + 1 <= sa.bindparam("max_memories"),
    memory_usage.c.characters + sa.bindparam("characters") <= sa.bindparam("max_characters"),
)


def charge(connection: sa.Connection, memory_added: Memory, quota: Quota | None) -> None:
    """Count one more memory of its owner, within `quota` if given; run in the transaction that inserts it.

    Raises:
        QuotaExceededError: it does not fit; the caller's transaction must roll back (nothing written).
    """
    user_id, characters = memory_added.user_id, charged_characters(memory_added)
    values: dict[str, object] = {"owner": user_id, "characters": characters}
    if quota is None:
        _apply(connection, _CHARGE_ANY, user_id, None, values)
        return
    values.update(max_memories=quota.max_memories, max_characters=quota.max_characters)
    _apply(connection, _CHARGE_WITHIN, user_id, lambda usage: check_quota(quota, usage, characters), values)


def recharge(connection: sa.Connection, *, user_id: str, characters: int, quota: Quota | None) -> None:
    """Count `characters` more (fewer, when negative) for an existing memory of `user_id` (an edit), within
    `quota` if it grows; run in the transaction that changes the memory, before its row changes.

    Raises:
        QuotaExceededError: it does not fit; the caller's transaction must roll back (nothing written).
    """
    if characters == 0:
        return
    change = memory_usage.update().values(characters=memory_usage.c.characters + characters)
    mine = memory_usage.c.user_id == user_id
    if quota is not None and characters > 0:
        change = change.where(mine, memory_usage.c.characters + characters <= quota.max_characters)
    else:
        change = change.where(mine)
    _apply(
        connection,
        change,
        user_id,
        None if quota is None else lambda usage: check_quota(quota, usage, characters, new_memory=False),
    )


def _apply(
    connection: sa.Connection,
    change: sa.Update,
    user_id: str,
    check: Callable[[Usage], None] | None,
    values: Mapping[str, object] | None = None,
) -> None:
    """Run `change` (with its bound `values`) on `user_id`'s ledger row (its WHERE holds the quota), creating the
    row when missing.

    When it changes nothing, `check` raises if the quota is the reason; if it fits now, a delete landed
    meanwhile: try again.
    """
    for _ in range(3):
        if connection.execute(change, dict(values or {})).rowcount == 1:
            return
        usage = _read(connection, user_id)
        if usage is None:
            _create_if_missing(connection, user_id)
        elif check is not None:
            check(usage)
    raise RuntimeError(f"the usage ledger of {user_id} cannot be charged")  # pragma: no cover - a bug


def charge_many(connection: sa.Connection, memories: Iterable[Memory]) -> None:
    """Count memories of any owners without a quota (bulk import, an operator's act)."""
    by_owner: dict[str, list[Memory]] = {}
    for item in memories:
        by_owner.setdefault(item.user_id, []).append(item)
    for user_id, owned in sorted(by_owner.items()):
        _create_if_missing(connection, user_id)
        connection.execute(
            memory_usage.update()
            .where(memory_usage.c.user_id == user_id)
            .values(
                memories=memory_usage.c.memories + len(owned),
                characters=memory_usage.c.characters + sum(charged_characters(m) for m in owned),
            )
        )


def credit(connection: sa.Connection, *, user_id: str, characters: sa.ColumnElement[int] | int) -> None:
    """Count one memory fewer of `user_id`, of `characters` (a value or the deleted row's column as a subquery).

    Run in the transaction that deletes it. A user without a ledger row needs nothing: the row
    is built from the remaining memories on their next save.
    """
    connection.execute(
        memory_usage.update()
        .where(memory_usage.c.user_id == user_id)
        .values(
            memories=memory_usage.c.memories - 1,
            characters=memory_usage.c.characters - sa.func.coalesce(characters, 0),
        )
    )


def forget_usage(connection: sa.Connection, user_id: str) -> None:
    """Drop the user's ledger row, in a transaction that removed some of their memories by other means.

    For bulk removals (an offboarding purge): the row is rebuilt from whatever memories remain on
    the user's next save, and a purged user leaves no row behind.
    """
    connection.execute(memory_usage.delete().where(memory_usage.c.user_id == user_id))


def read_usage(engine: sa.Engine, user_id: str) -> Usage:
    """The user's use: their ledger row, else counted from their memories (as the ledger would be built).

    Raises:
        UnavailableError: the database cannot be reached.
    """
    with unavailable_on_driver_error("usage"), reading(engine) as connection:
        found = _read(connection, user_id)
        if found is not None:
            return found
        row = connection.execute(
            sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(memory.c.characters), 0)).where(
                owned_memories(user_id)
            )
        ).one()
    return Usage(memories=int(row[0]), characters=int(row[1]))


#: Rows measured per transaction by `backfill_characters`.
BACKFILL_BATCH = 500


def backfill_characters(
    engine: sa.Engine,
    load: Callable[[str, list[str]], Mapping[str, Memory]],
    *,
    batch_size: int = BACKFILL_BATCH,
) -> int:
    """Measure rows saved before revision 0010 (`characters` NULL); how many were measured.

    `load(user_id, ids)` opens memories (through the key ring when sealed). A row that does not
    open counts 0 characters (and is logged by id). Each batch drops its users' ledger rows in the
    transaction that measures their memories, so a ledger built meanwhile (or before a crash) from
    rows still unmeasured is rebuilt on the user's next save. Resumable: a rerun picks up the rows
    still NULL.

    Raises:
        UnavailableError: the database cannot be reached; measured batches stay measured.
    """
    measured = 0
    while True:
        with unavailable_on_driver_error("usage backfill"), engine.connect() as connection:
            rows = connection.execute(
                sa.select(memory.c.user_id, memory.c.id)
                .where(memory.c.characters.is_(None))
                .order_by(memory.c.id)
                .limit(batch_size)
            ).all()
        if not rows:
            break
        by_owner: dict[str, list[str]] = {}
        for row in rows:
            by_owner.setdefault(row.user_id, []).append(row.id)
        counts: list[tuple[str, str, int]] = []
        for user_id, ids in by_owner.items():
            opened = load(user_id, ids)
            for memory_id in ids:
                found = opened.get(memory_id)
                if found is None:
                    _log.warning("memory %s does not open: counted as 0 characters", memory_id)
                counts.append((user_id, memory_id, charged_characters(found) if found is not None else 0))
        with unavailable_on_driver_error("usage backfill"), for_writing(engine).begin() as connection:
            for user_id, memory_id, characters in counts:
                connection.execute(memory.update().where(memory_row(user_id, memory_id)).values(characters=characters))
            for user_id in sorted(by_owner):
                forget_usage(connection, user_id)
        measured += len(rows)
    return measured
