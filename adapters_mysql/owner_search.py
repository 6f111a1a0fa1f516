"""`OwnerScopedSearch`: what both SQL engines do around their dialect's full-text SQL.

Fetch the owner's candidate rows, bound them, and rank them with `memorybank_search`
(the same code the in-memory reference engine ranks with).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from adapters_mysql import rewrite_fence
from adapters_mysql.compiled_reads import PlannedRead
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.schema import memory
from adapters_mysql.unit_of_work import keep_ahead, reading, take_ahead
from memorybank_core import SearchEngine, SearchHit, SearchHits
from memorybank_search import DEFAULT_CANDIDATE_LIMIT, Candidate, OwnerIndexer, rank_candidates

_log = logging.getLogger("memorybank.storage")

#: How often a search overlapping rewriting batches runs again (adapters_mysql.rewrite_fence). A
#: walk commits a batch every few milliseconds at most, so a rerun rarely overlaps another one.
FENCED_ATTEMPTS = 20

#: Under this key (with the owner and the query) a unit of work keeps a query's tokens for the search that follows.
_ANALYZED = "analyzed query"

CandidateRow = Any
"""A candidate as the engines' SQL returns it, read by attribute: id, search_terms, doc_length, owner_count,
owner_length (a SQLAlchemy row, or a `CompiledRead` row)."""


def select_candidates(owned: sa.ColumnElement[bool]) -> sa.Select[str, str | None, int, int, int]:
    """The candidate columns of `CandidateRow`, over the owner's rows `owned` selects; a dialect adds its match.

    The owner's totals are uncorrelated scalar subqueries: evaluated once per statement,
    index-only on the owner index.
    """
    owner_count = sa.select(sa.func.count()).select_from(memory).where(owned).scalar_subquery()
    owner_length = sa.select(sa.func.coalesce(sa.func.sum(memory.c.doc_length), 0)).where(owned).scalar_subquery()
    return sa.select(
        memory.c.id,
        memory.c.search_terms,
        memory.c.doc_length,
        owner_count.label("owner_count"),
        owner_length.label("owner_length"),
    ).where(owned)


class OwnerScopedSearch(SearchEngine):
    """What both owner-scoped engines do around their dialect's SQL: fetch, bound, rank per owner.

    A dialect supplies the owner's matching rows (each carrying the owner's document count and
    total length) and one token's matching-row count, and may choose which rows to keep when
    there are too many (by default, the order it fetched them in). At most `candidate_limit`
    rows are scored; past it, document frequencies are still counted over all the owner's rows,
    so the scores stay exact.
    """

    def __init__(
        self,
        engine: sa.Engine,
        indexer: OwnerIndexer,
        *,
        candidate_limit: int = DEFAULT_CANDIDATE_LIMIT,
        along: Callable[[str], Sequence[PlannedRead]] | None = None,
    ) -> None:
        """`along(user_id)`: reads that follow every search of the owner's (hybrid search's vectors), sent in
        the candidates' round trip where the connection allows it (`CompiledRead.all`)."""
        self._engine = engine
        self._indexer = indexer
        self._candidate_limit = candidate_limit
        self._along = along

    def reads_for(self, user_id: str, query: str) -> Sequence[PlannedRead]:
        """What a search of the owner's memories for `query` reads first, with what `along` adds, for a caller
        to send ahead in a round trip it makes anyway (a save's, for its `similar` look-up, ADR 0042); the
        search then takes those rows instead of reading them. Empty when a dialect has no such read, the query
        has no searchable word, or a rewrite is pending (its fence must be read around the candidates)."""
        if self._indexer.rewrite_pending:
            return ()
        analyzed = self._tokens(user_id, query)
        planned = self._candidate_read(user_id, analyzed[1], self._candidate_limit + 1) if analyzed[1] else None
        if planned is None:
            return ()
        # The search that takes these rows analyzes the same query: it takes the tokens too (512 Han characters
        # cost 10 ms to analyze). Kept in the unit of work, never across requests: a cache of queries shared by
        # users would time one user's search by another's.
        keep_ahead(self._engine, (_ANALYZED, user_id, query), analyzed)
        return [planned, *self._reads_along(user_id)]

    def _reads_along(self, user_id: str) -> Sequence[PlannedRead]:
        return self._along(user_id) if self._along is not None else ()

    def _candidate_read(self, user_id: str, tokens: Sequence[str], limit: int) -> PlannedRead | None:  # noqa: ARG002
        """`_candidates` as a read to send ahead, where the dialect runs it as one `CompiledRead`; None elsewhere."""
        return None

    def _tokens(self, user_id: str, query: str) -> tuple[list[tuple[str, ...]], list[str]]:
        analyzed: tuple[list[tuple[str, ...]], list[str]] | None = take_ahead(self._engine, (_ANALYZED, user_id, query))
        if analyzed is not None:
            return analyzed
        groups = self._indexer.query_token_groups(user_id, query)
        return groups, list(dict.fromkeys(token for group in groups for token in group))

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        groups, tokens = self._tokens(user_id, query)
        if not tokens:
            return SearchHits(candidate_count=0)
        with unavailable_on_driver_error("search"), reading(self._engine) as connection:
            if not self._indexer.rewrite_pending:
                rows, document_frequency = self._fetch(connection, user_id, tokens)
            else:
                for _attempt in range(FENCED_ATTEMPTS):
                    before = rewrite_fence.generation(connection)
                    rows, document_frequency = self._fetch(connection, user_id, tokens)
                    if rewrite_fence.generation(connection, wait_for_writers=True) == before:
                        break
                    # A rewriting batch overlapped: end this snapshot and look again.
                    connection.rollback()
                else:
                    # Batches kept landing: answer with the last look, which may lack rows being rewritten.
                    _log.warning("search gave up on the rewrite fence after %d attempts", FENCED_ATTEMPTS)
        if not rows:
            return SearchHits(candidate_count=0)
        return rank_candidates(
            tokens,
            [Candidate(row.id, row.search_terms or "", row.doc_length) for row in rows],
            document_count=int(rows[0].owner_count),
            total_length=int(rows[0].owner_length),
            document_frequency=document_frequency,
            limit=limit,
            groups=groups,
        )

    def _fetch(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str]
    ) -> tuple[Sequence[CandidateRow], dict[str, int] | None]:
        """The candidates to rank, and the document frequencies when they had to be bounded."""
        rows = self._candidates(connection, user_id, tokens, self._candidate_limit + 1)
        if len(rows) <= self._candidate_limit:
            return rows, None
        rows = self._best_candidates(connection, user_id, tokens, rows)[: self._candidate_limit]
        return rows, {token: self._matching_count(connection, user_id, token) for token in tokens}

    @abstractmethod
    def _candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        """Up to `limit` owner rows matching any token: id, search_terms, doc_length, owner_count, owner_length."""

    def _best_candidates(
        self,
        connection: sa.Connection,  # noqa: ARG002 - a dialect that re-queries needs it
        user_id: str,  # noqa: ARG002
        tokens: Sequence[str],  # noqa: ARG002
        rows: Sequence[CandidateRow],
    ) -> Sequence[CandidateRow]:
        """The candidates to keep when `rows` overflowed the bound, best first: by default `rows` as fetched."""
        return rows

    @abstractmethod
    def _matching_count(self, connection: sa.Connection, user_id: str, token: str) -> int:
        """How many of the owner's rows hold `token`."""
