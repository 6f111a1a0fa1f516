"""Re-indexing: rewrite the owner-scoped search document of rows written by an older scheme.

`memory.search_version` records the scheme (`memorybank_search.SEARCH_VERSION`) that wrote a row's
`search_terms`; rows migrated from revision 0001 hold 0. Re-indexing walks the table by primary
key in batches, one transaction per batch, so it can be stopped and resumed at any point, and it
runs beside a live server (a row saved meanwhile is already current).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.memory_store import memory_from_rows
from adapters_mysql.schema import memory, memory_context
from memorybank_search import SEARCH_VERSION, OwnerIndexer

DEFAULT_BATCH_SIZE = 1000


def _stale(everything: bool) -> sa.ColumnElement[bool]:
    return sa.true() if everything else memory.c.search_version != SEARCH_VERSION


def count_to_reindex(engine: sa.Engine, *, everything: bool = False) -> int:
    """How many rows `reindex` would rewrite."""
    with unavailable_on_driver_error("reindex"), engine.connect() as connection:
        count = sa.select(sa.func.count()).select_from(memory).where(_stale(everything))
        return int(connection.execute(count).scalar_one())


def reindex(
    engine: sa.Engine,
    indexer: OwnerIndexer,
    *,
    everything: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Recompute `search_terms`, `doc_length` and `search_version` of stale rows (all rows if `everything`).

    `progress` is called with the number of rows each committed batch rewrote. Returns the total.

    Raises:
        UnavailableError: the database cannot be reached; committed batches stay done.
    """
    writer = for_writing(engine)
    after = ""
    done = 0
    update = (
        sa.update(memory)
        .where(memory.c.id == sa.bindparam("b_id"), memory.c.user_id == sa.bindparam("b_user_id"))
        .values(
            search_terms=sa.bindparam("b_search_terms"),
            doc_length=sa.bindparam("b_doc_length"),
            search_version=sa.bindparam("b_search_version"),
        )
    )
    while True:
        with unavailable_on_driver_error("reindex"), writer.begin() as connection:
            rows = connection.execute(
                sa.select(memory).where(memory.c.id > after, _stale(everything)).order_by(memory.c.id).limit(batch_size)
            ).all()
            if not rows:
                return done
            parameters = [_update_parameters(indexer, found) for found in _with_snippets(connection, rows)]
            connection.execute(update, parameters)
        after = rows[-1].id
        done += len(rows)
        if progress is not None:
            progress(len(rows))


def _with_snippets(connection: sa.Connection, rows: Sequence[sa.Row[Any]]) -> list[tuple[sa.Row[Any], list[Any]]]:
    contexts: dict[str, list[Any]] = {row.id: [] for row in rows}
    found = connection.execute(
        sa.select(memory_context)
        .where(
            memory_context.c.user_id.in_({row.user_id for row in rows}),
            memory_context.c.memory_id.in_(list(contexts)),
        )
        .order_by(memory_context.c.created_at, memory_context.c.id)
    ).all()
    for context in found:
        if context.memory_id in contexts:
            contexts[context.memory_id].append(context)
    return [(row, contexts[row.id]) for row in rows]


def _update_parameters(indexer: OwnerIndexer, found: tuple[sa.Row[Any], list[Any]]) -> dict[str, Any]:
    row, contexts = found
    document = indexer.document(memory_from_rows(row, contexts))
    return {
        "b_id": row.id,
        "b_user_id": row.user_id,
        "b_search_terms": document.search_terms,
        "b_doc_length": document.doc_length,
        "b_search_version": document.search_version,
    }
