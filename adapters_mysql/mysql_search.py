"""`MysqlOwnerScopedSearch`: owner-scoped InnoDB FULLTEXT over tagged tokens, ranked exactly per owner.

InnoDB decodes a query word's whole posting list and only then filters `user_id`, so the seed's
`MATCH(content)` costs time in proportion to *everyone's* data (and its whole-table statistics
leak other users' words into a user's scores). Here the FULLTEXT index is on
`memory.search_terms`, whose words carry the owner's tag (`memorybank_search.indexer`): each
posting list holds one owner's rows, and a search reads only the searcher's. `user_id = :owner`
stays in every query as the correctness guard. The candidates are then ranked in the app with
BM25 over the owner's own statistics, so other users' data never changes a user's ranking.

All of the MySQL-specific SQL lives here: the engine's statements and the index's DDL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import match

from adapters_mysql.compiled_reads import CompiledRead, PlannedRead
from adapters_mysql.errors import driver_error_code
from adapters_mysql.owner import owned_memories, owner_parameter, owner_scope_parameter, owner_values
from adapters_mysql.owner_search import CandidateRow, OwnerScopedSearch, select_candidates
from adapters_mysql.schema import memory

#: Created by `adapters_mysql.readiness.ensure_search_index` (and by revision 0002).
OWNER_FULLTEXT_INDEX_NAME = "memory_search_terms_fulltext"

#: MySQL's "Duplicate key name": a concurrent creator won the race.
_DUPLICATE_KEY_NAME = 1061

# Static DDL with no input in it, hence text().
_CREATE_FULLTEXT = f"CREATE FULLTEXT INDEX {OWNER_FULLTEXT_INDEX_NAME} ON {memory.name} (search_terms)"


class MysqlOwnerScopedSearch(OwnerScopedSearch):
    """The `SearchEngine` port over the owner-tagged FULLTEXT index, with exact per-owner BM25.

    At most `candidate_limit` matching rows are scored: past it, the rows InnoDB ranks highest
    are kept (its relevance also favours rare and repeated words), while document frequencies
    are still counted over all the owner's rows.
    """

    def _candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        # One round trip: every candidate, each carrying the owner's totals (computed once), and what follows
        # every search (hybrid search's vectors); or none, when a save read them ahead (ADR 0042).
        return _CANDIDATES.all(connection, _parameters(user_id, tokens, limit), along=self._reads_along(user_id))

    reads_ahead = True

    def _like_candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        # Taken from the save's last round trip when it read them ahead (ADR 0042), with what follows (hybrid: vectors).
        return _LIKE_CANDIDATES.all(connection, _parameters(user_id, tokens, limit), along=self._reads_along(user_id))

    def _like_read(self, user_id: str, tokens: Sequence[str], limit: int) -> PlannedRead:
        return PlannedRead(_LIKE_CANDIDATES, _parameters(user_id, tokens, limit))

    def _best_candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], rows: Sequence[CandidateRow]
    ) -> Sequence[CandidateRow]:
        # Past the bound, keep the candidates InnoDB ranks highest.
        return _BEST_CANDIDATES.all(connection, _parameters(user_id, tokens, len(rows)))

    def _matching_read(self, user_id: str, token: str) -> PlannedRead:
        return PlannedRead(_OWNER_MATCHES, {**owner_values(user_id), "token": token})


def _parameters(user_id: str, tokens: Sequence[str], limit: int) -> dict[str, object]:
    return {**owner_values(user_id), "tokens": " ".join(tokens), "limit": limit}


def _relevance(tokens: sa.BindParameter[str]) -> sa.ColumnElement[float]:
    # Natural-language mode: any token matches, and its parser never rejects input (ours is
    # `[0-9a-z_ ]` anyway). The whole token string is one bound parameter.
    return match(memory.c.search_terms, against=tokens).in_natural_language_mode()


def _candidates_statement() -> sa.Select[str, str | None, int, int, int]:
    relevance = _relevance(sa.bindparam("tokens", type_=sa.Text))
    return (
        select_candidates(owned_memories(owner_parameter(), owner_scope_parameter()))
        .where(relevance > 0)
        .limit(sa.bindparam("limit", type_=sa.Integer))
    )


def _best_candidates_statement(*, counted: bool) -> sa.Select[str, str | None, int, int, int]:
    """The `limit` matches InnoDB ranks highest, best first; `counted`: each carries how many matched in all.

    A deferred join: the ranking sorts the matches' ids and relevance only, and the chosen few are joined back for
    their stored terms. Sorting the terms with every match cost a save's look-up about a third of its statement
    time in a bank of 600 memories where 511 matched (a one-off probe of the statement, 2026-12-07).
    """
    relevance = _relevance(sa.bindparam("tokens", type_=sa.Text))
    ranked = [memory.c.id.label("id"), relevance.label("relevance")]
    if counted:
        # A window over every match, counted before the limit.
        ranked.append(sa.func.count().over().label("matching"))
    best = (
        sa.select(*ranked)
        .where(owned_memories(owner_parameter(), owner_scope_parameter()), relevance > 0)
        .order_by(sa.desc("relevance"), memory.c.id.desc())
        .limit(sa.bindparam("limit", type_=sa.Integer))
        .subquery("best")
    )
    statement = (
        select_candidates(owned_memories(owner_parameter(), owner_scope_parameter()))
        .join_from(memory, best, memory.c.id == best.c.id)
        .order_by(best.c.relevance.desc(), best.c.id.desc())
    )
    return statement.add_columns(best.c.matching) if counted else statement


# Built once: the statements are constant, only their bound values change; every search runs the
# first, so both take the DBAPI cursor (adapters_mysql.compiled_reads).
_CANDIDATES = CompiledRead(_candidates_statement())
#: Past the bound, the best (ordering costs a sort of every match: only worth it then).
_BEST_CANDIDATES = CompiledRead(_best_candidates_statement(counted=False))
#: A `search_like`'s: the best, with how many matched in all.
_LIKE_CANDIDATES = CompiledRead(_best_candidates_statement(counted=True))


#: How many of the owner's rows hold one token (a document frequency, read when the candidates were bounded).
_OWNER_MATCHES = CompiledRead(
    sa.select(sa.func.count().label("matching")).where(
        owned_memories(owner_parameter(), owner_scope_parameter()), _relevance(sa.bindparam("token", type_=sa.Text)) > 0
    )
)


_statistics = sa.table(
    "STATISTICS",
    sa.column("TABLE_SCHEMA", sa.String),
    sa.column("TABLE_NAME", sa.String),
    sa.column("INDEX_NAME", sa.String),
    sa.column("INDEX_TYPE", sa.String),
    schema="information_schema",
)


def owner_fulltext_index_exists(connection: sa.Connection) -> bool:
    """True when `memory` in the connection's current database has the owner-scoped FULLTEXT index."""
    found = connection.execute(
        sa.select(sa.func.count())
        .select_from(_statistics)
        .filter_by(
            TABLE_SCHEMA=sa.func.database(),
            TABLE_NAME=memory.name,
            INDEX_NAME=OWNER_FULLTEXT_INDEX_NAME,
            INDEX_TYPE="FULLTEXT",
        )
    ).scalar_one()
    return bool(found)


def ensure_owner_fulltext_index(connection: sa.Connection) -> bool:
    """Create the FULLTEXT index on `memory.search_terms` if missing; True if this call created it.

    Building it blocks writes to `memory` (about a minute per million rows). A concurrent
    creator winning the race (duplicate key name) counts as "already there".
    """
    if owner_fulltext_index_exists(connection):
        return False
    try:
        connection.execute(sa.text(_CREATE_FULLTEXT))
    except (sa.exc.OperationalError, sa.exc.ProgrammingError) as error:
        if driver_error_code(error) == _DUPLICATE_KEY_NAME:
            return False
        raise
    return True
