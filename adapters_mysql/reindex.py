"""Bringing rows up to date, online: re-index, seal (`memorybank encrypt`) and re-seal (`memorybank keys rotate`).

A row is stale when an older tokenization scheme wrote its search document
(`memory.search_version` is not `memorybank_search.SEARCH_VERSION`) or when its `seal_state` is not the
one the storage now writes (plaintext before `encrypt`; an old sealing or index key before
`keys rotate`). One walk fixes both: it reads stale rows by primary key in batches, opens each
memory (with any ring key), writes it back sealed under the primary key with a search document
under the current index key, and updates each row only if nobody changed it meanwhile (same
seal state and version). One transaction per batch, so the walk can be stopped and resumed at any
point, and a server keeps serving beside it: every row is readable before and after its update,
and each batch bumps the rewrite fence first, so searches overlapping it run again rather than
miss its rows (adapters_mysql.rewrite_fence). A row that does not open, or whose search tokens
are not its own, is logged by id, left as it is and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import sqlalchemy as sa

from adapters_mysql import rewrite_fence
from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.owner import memory_row
from adapters_mysql.schema import memory, memory_context
from adapters_mysql.sealed_rows import RowCodec, SealState
from memorybank_core import BrokenSealError
from memorybank_search import SEARCH_VERSION, OwnerIndexer

DEFAULT_BATCH_SIZE = 1000
_log = logging.getLogger("memorybank.storage")


@attrs.frozen
class ReindexReport:
    """What a walk did: rows rewritten, and rows left as they were because they do not open.

    `broken_vectors`: hybrid search's vectors that did not open to be re-sealed (`Maintenance.reindex`), and
    `broken_revisions` the kept earlier versions of memories.
    """

    rewritten: int
    broken: int
    broken_vectors: int = 0
    broken_revisions: int = 0


def _stale(codec: RowCodec, everything: bool) -> sa.ColumnElement[bool]:
    if everything:
        return sa.true()
    return sa.or_(memory.c.search_version != SEARCH_VERSION, memory.c.seal_state.is_distinct_from(codec.state))


def count_to_reindex(engine: sa.Engine, codec: RowCodec, *, everything: bool = False) -> int:
    """How many rows `reindex` would rewrite."""
    with unavailable_on_driver_error("reindex"), engine.connect() as connection:
        count = sa.select(sa.func.count()).select_from(memory).where(_stale(codec, everything))
        return int(connection.execute(count).scalar_one())


_UNCHANGED_ROW = sa.and_(
    memory_row(sa.bindparam("b_user_id"), sa.bindparam("b_id")),
    # Untouched since we read it: a concurrent delete makes this update a no-op.
    memory.c.seal_state.is_not_distinct_from(sa.bindparam("b_old_state")),
    memory.c.search_version == sa.bindparam("b_old_version"),
)
_SEAL_VALUES: dict[str, Any] = {
    "content": sa.bindparam("b_content"),
    "tags": sa.bindparam("b_tags"),
    "seal_state": sa.bindparam("b_seal_state"),
}
#: Re-sealing under a new key with the same index key leaves the search columns alone: InnoDB's
#: FULLTEXT index then never sees the row change, so concurrent searches miss nothing.
_SEAL_UPDATE = sa.update(memory).where(_UNCHANGED_ROW).values(_SEAL_VALUES)
_MEMORY_UPDATE = (
    sa.update(memory)
    .where(_UNCHANGED_ROW)
    .values(
        {
            **_SEAL_VALUES,
            "search_terms": sa.bindparam("b_search_terms"),
            "doc_length": sa.bindparam("b_doc_length"),
            "search_version": sa.bindparam("b_search_version"),
            "search_mac": sa.bindparam("b_search_mac"),
        }
    )
)
_CONTEXT_UPDATE = (
    sa.update(memory_context)
    .where(memory_context.c.id == sa.bindparam("b_id"), memory_context.c.user_id == sa.bindparam("b_user_id"))
    .values(snippet=sa.bindparam("b_snippet"), citation=sa.bindparam("b_citation"))
)


def reindex(
    engine: sa.Engine,
    indexer: OwnerIndexer,
    codec: RowCodec,
    *,
    everything: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
) -> ReindexReport:
    """Rewrite stale rows (all rows if `everything`) under the current scheme and keys.

    `progress` is called with the number of rows each committed batch covered.

    Raises:
        UnavailableError: the database cannot be reached; committed batches stay done.
    """
    writer = for_writing(engine)
    after = ""
    rewritten = broken = 0
    while True:
        with unavailable_on_driver_error("reindex"), writer.begin() as connection:
            rewrite_fence.bump(connection)
            rows = connection.execute(
                sa.select(memory)
                .where(memory.c.id > after, _stale(codec, everything))
                .order_by(memory.c.id)
                .limit(batch_size)
            ).all()
            if not rows:
                return ReindexReport(rewritten=rewritten, broken=broken)
            for row, contexts in _with_contexts(connection, rows):
                try:
                    current = codec.memory(row, contexts)
                except BrokenSealError as error:
                    _log.warning("memory %s does not open (%s): not re-sealed", row.id, error)
                    broken += 1
                    continue
                rewritten += _rewrite(connection, indexer, codec, row, current, everything)
        after = rows[-1].id
        if progress is not None:
            progress(len(rows))


def _same_index(row: Any, codec: RowCodec, everything: bool) -> bool:
    """True when the row's search tokens are already the current ones (same index key, format and scheme)."""
    target = codec.seal_state
    if everything or row.search_version != SEARCH_VERSION or row.seal_state is None or target is None:
        return False
    state = SealState.parse(row.seal_state)  # it opened, so it parses
    return (state.index_key, state.token_format) == (target.index_key, target.token_format)


def _rewrite(
    connection: sa.Connection, indexer: OwnerIndexer, codec: RowCodec, row: Any, current: Any, everything: bool
) -> int:
    document = indexer.document(current)
    values = codec.memory_row(current, document)
    parameters = {
        "b_id": row.id,
        "b_user_id": row.user_id,
        "b_old_state": row.seal_state,
        "b_old_version": row.search_version,
        "b_content": values["content"],
        "b_tags": values["tags"],
        "b_seal_state": values["seal_state"],
    }
    if _same_index(row, codec, everything):
        updated = connection.execute(_SEAL_UPDATE, parameters).rowcount
    else:
        parameters.update(
            b_search_terms=values["search_terms"],
            b_doc_length=values["doc_length"],
            b_search_version=values["search_version"],
            b_search_mac=values["search_mac"],
        )
        updated = connection.execute(_MEMORY_UPDATE, parameters).rowcount
    if updated != 1:
        return 0
    contexts = [codec.context_row(context, current.user_id) for context in current.contexts]
    if contexts:
        connection.execute(
            _CONTEXT_UPDATE,
            [
                {"b_id": c["id"], "b_user_id": c["user_id"], "b_snippet": c["snippet"], "b_citation": c["citation"]}
                for c in contexts
            ],
        )
    return 1


def _with_contexts(connection: sa.Connection, rows: Sequence[sa.Row[Any]]) -> list[tuple[sa.Row[Any], list[Any]]]:
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
