"""`OwnerScopedSearch`: what both SQL engines do around their dialect's full-text SQL.

Fetch the owner's candidate rows, bound them, and rank them with `memorybank_search`
(the same code the in-memory reference engine ranks with).

Ranking counts each candidate's stored terms, so a search's work follows how many terms its candidates hold, not
only how many candidates there are: twenty memories of Han text at the bounds are 400,000 terms, 40 ms of counting.
Two bounds keep it in check (ADR 0044): the candidates (`DEFAULT_CANDIDATE_LIMIT` rows) and the terms read
(`DEFAULT_TERMS_BUDGET`). The candidates' statement carries the terms of short memories only (`INLINE_TERMS_MAX`);
a longer one's are read next, by id, once the candidates are known to fit the budget or the best of them are chosen.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

import sqlalchemy as sa

from adapters_mysql import rewrite_fence
from adapters_mysql.compiled_reads import CompiledRead, PlannedRead
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.owner import owned_memories, owner_parameter, owner_scope_parameter, owner_values
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

#: The candidates' statement carries the stored terms of a memory holding at most this many (about 1,500 characters
#: of prose: a memory and a few snippets, an ordinary bank's every memory, so its search stays one statement). A
#: longer memory's terms are read after, only if it is kept: the first statement brings at most 256,000 terms (a
#: thousand candidates), of which the budget's are counted.
INLINE_TERMS_MAX = 256

#: The stored terms a search reads and counts at most, over all its candidates: about five memories at the index
#: bound (`limits.INDEXED_TERMS_MAX`), 5-10 ms of counting. Past it, the best candidates that fit are kept (for a
#: long query, the newest).
DEFAULT_TERMS_BUDGET = 100_000

#: Past a bound, a query of at most this many tokens (what people type) has its document frequencies counted over all
#: the owner's rows (one full-text look-up each, in one statement); a longer one's (a save's `similar` look-up, a
#: pasted paragraph) are estimated from the candidates read.
EXACT_FREQUENCIES_MAX = 8

#: A save's `similar` look-up reads at most this many of the owner's memories, those the full-text index ranks highest
#: for the new memory's words (ADR 0048): a look-up asks with every word of the memory, which most of a bank shares,
#: so reading every match made each save rank the whole bank.
DEFAULT_LIKE_CANDIDATES = 64


class _Fetched(NamedTuple):
    """What a search read: its candidates, the stored terms of those read after them by id, and, when they were
    bounded, either the owner's document frequencies or how many matching rows were left unread."""

    rows: Sequence[CandidateRow]
    terms: dict[str, str]
    document_frequency: dict[str, int] | None
    unread: int


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
        # A long memory's terms are read only once it is kept (`OwnerScopedSearch._fetch`).
        sa.case((memory.c.doc_length <= INLINE_TERMS_MAX, memory.c.search_terms), else_=sa.null()).label(
            "search_terms"
        ),
        memory.c.doc_length,
        owner_count.label("owner_count"),
        owner_length.label("owner_length"),
    ).where(owned)


class OwnerScopedSearch(SearchEngine):
    """What both owner-scoped engines do around their dialect's SQL: fetch, bound, rank per owner.

    A dialect supplies the owner's matching rows (each carrying the owner's document count and
    total length) and the read counting one token's matching rows, and may choose which rows to keep when
    there are too many (by default, the order it fetched them in). At most `candidate_limit`
    rows holding at most `terms_budget` stored terms in all are scored (ADR 0044). Past either, a
    query of at most `EXACT_FREQUENCIES_MAX` tokens still has its document frequencies counted
    over all the owner's rows, so its scores stay exact for the rows kept; a longer query's are
    estimated from the rows read.
    """

    def __init__(
        self,
        engine: sa.Engine,
        indexer: OwnerIndexer,
        *,
        candidate_limit: int = DEFAULT_CANDIDATE_LIMIT,
        terms_budget: int = DEFAULT_TERMS_BUDGET,
        along: Callable[[str], Sequence[PlannedRead]] | None = None,
        like_candidates: int = DEFAULT_LIKE_CANDIDATES,
    ) -> None:
        """`along(user_id)`: reads that follow every search of the owner's (hybrid search's vectors), sent in
        the candidates' round trip where the connection allows it (`CompiledRead.all`). `like_candidates`: what
        `search_like` reads at most."""
        self._engine = engine
        self._indexer = indexer
        self._candidate_limit = candidate_limit
        self._terms_budget = terms_budget
        self._along = along
        self._like_limit = like_candidates

    def reads_for(self, user_id: str, query: str) -> Sequence[PlannedRead]:
        """What `search_like` of the owner's memories for `query` reads first, with what `along` adds, for a caller
        to send ahead in a round trip it makes anyway (a save's, for its `similar` look-up, ADR 0042); the look-up
        then takes those rows instead of reading them. Empty when a dialect has no such read, the query has no
        searchable word, or a rewrite is pending (its fence must be read around the candidates)."""
        if self._indexer.rewrite_pending or not self.reads_ahead:
            # Nothing to send ahead: the query is analyzed by the search itself, not inside the caller's round trip
            # (a save's write transaction; SQLite's write lock).
            return ()
        analyzed = self._tokens(user_id, query)
        planned = self._like_read(user_id, analyzed[1], self._like_limit) if analyzed[1] else None
        if planned is None:
            return ()
        # The search that takes these rows analyzes the same query: it takes the tokens too (512 Han characters
        # cost 10 ms to analyze). Kept in the unit of work, never across requests: a cache of queries shared by
        # users would time one user's search by another's.
        keep_ahead(self._engine, (_ANALYZED, user_id, query), analyzed)
        return [planned, *self._reads_along(user_id)]

    def _reads_along(self, user_id: str) -> Sequence[PlannedRead]:
        return self._along(user_id) if self._along is not None else ()

    reads_ahead = False
    """Whether the dialect's look-up candidates can be read ahead in another statement's round trip (`_like_read`)."""

    def _like_read(self, user_id: str, tokens: Sequence[str], limit: int) -> PlannedRead | None:  # noqa: ARG002
        """`_like_candidates` as a read to send ahead, where the dialect runs it as one `CompiledRead`
        (`reads_ahead`); None elsewhere."""
        return None

    def _tokens(self, user_id: str, query: str) -> tuple[list[tuple[str, ...]], list[str]]:
        analyzed: tuple[list[tuple[str, ...]], list[str]] | None = take_ahead(self._engine, (_ANALYZED, user_id, query))
        if analyzed is not None:
            return analyzed
        groups = self._indexer.query_token_groups(user_id, query)
        return groups, list(dict.fromkeys(token for group in groups for token in group))

    def search_like(self, *, user_id: str, memory_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        """`search`, over the `like_candidates` memories the full-text index ranks highest for `query` (ADR 0048).

        A save's `similar` look-up asks with every word of the new memory: most of a bank holds one of them, so
        reading every match made each save count the whole bank's terms. Which of them resemble the new memory is
        still decided by BM25 over the owner's statistics, its document frequencies estimated from the memories
        read (as a long query's are past the bounds). While a rewrite is pending (its fence is read around a
        search's candidates), `search`."""
        if self._indexer.rewrite_pending:
            return self.search(user_id=user_id, query=query, limit=limit)
        groups, tokens = self._tokens(user_id, query)
        if not tokens:
            return SearchHits(candidate_count=0)
        with unavailable_on_driver_error("search"), reading(self._engine) as connection:
            fetched = self._fetch_like(connection, user_id, memory_id, tokens)
        return self._rank(tokens, groups, fetched, limit)

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        groups, tokens = self._tokens(user_id, query)
        if not tokens:
            return SearchHits(candidate_count=0)
        with unavailable_on_driver_error("search"), reading(self._engine) as connection:
            if not self._indexer.rewrite_pending:
                fetched = self._fetch(connection, user_id, tokens)
            else:
                for _attempt in range(FENCED_ATTEMPTS):
                    before = rewrite_fence.generation(connection)
                    fetched = self._fetch(connection, user_id, tokens)
                    if rewrite_fence.generation(connection, wait_for_writers=True) == before:
                        break
                    # A rewriting batch overlapped: end this snapshot and look again.
                    connection.rollback()
                else:
                    # Batches kept landing: answer with the last look, which may lack rows being rewritten.
                    _log.warning("search gave up on the rewrite fence after %d attempts", FENCED_ATTEMPTS)
        return self._rank(tokens, groups, fetched, limit)

    def _rank(self, tokens: list[str], groups: list[tuple[str, ...]], fetched: _Fetched, limit: int) -> SearchHits:
        rows, terms = fetched.rows, fetched.terms
        if not rows:
            return SearchHits(candidate_count=0)
        return rank_candidates(
            tokens,
            [Candidate(row.id, terms.get(row.id, row.search_terms) or "", row.doc_length) for row in rows],
            document_count=int(rows[0].owner_count),
            total_length=int(rows[0].owner_length),
            document_frequency=fetched.document_frequency,
            unread=fetched.unread,
            limit=limit,
            groups=groups,
        )

    def _fetch(self, connection: sa.Connection, user_id: str, tokens: Sequence[str]) -> _Fetched:
        """The candidates to rank, with the stored terms of those read without them, and, when they had to be
        bounded, the document frequencies or how many matching rows were left unread."""
        rows = self._candidates(connection, user_id, tokens, self._candidate_limit + 1)
        if len(rows) > self._candidate_limit:
            rows = self._best_candidates(connection, user_id, tokens, rows)
        elif sum(row.doc_length for row in rows) > self._terms_budget:
            # Every candidate is at hand: a short query's are ordered by the dialect, a long one's newest first (ids
            # are time-ordered), as the dialect's order would cost another full-text query of hundreds of tokens
            # (InnoDB: 30-50 ms for a Han paragraph).
            long_query = len(tokens) > EXACT_FREQUENCIES_MAX
            rows = (
                sorted(rows, key=attrgetter("id"), reverse=True)
                if long_query
                else self._best_candidates(connection, user_id, tokens, rows)
            )
        kept, terms = self._kept(connection, user_id, rows)
        unread = len(rows) - len(kept)
        if not unread:
            return _Fetched(kept, terms, None, 0)
        if len(tokens) <= EXACT_FREQUENCIES_MAX:
            return _Fetched(kept, terms, self._matching_counts(connection, user_id, tokens), 0)
        # A long query's frequencies over all the owner's rows would cost a full-text look-up per token (a Han
        # query is hundreds; InnoDB takes about a millisecond each): those of the candidates read stand for all.
        return _Fetched(kept, terms, None, unread)

    def _fetch_like(self, connection: sa.Connection, user_id: str, memory_id: str, tokens: Sequence[str]) -> _Fetched:
        """A `search_like`'s candidates: the best `like_candidates` of the owner's matching memories, within the
        terms budget, and how many more matched, for the frequencies' estimate.

        The memory `memory_id` (the new one, whose words are the query) is always among them: InnoDB shows a
        committed memory's words moments later (ADR 0046), so the look-up right after its save may not find it by
        them, and without its own score nothing would be named. It is then read by its id, which shows it at once.
        """
        rows = list(self._like_candidates(connection, user_id, tokens, self._like_limit))
        matching = int(rows[0].matching) if rows else 0
        if not any(row.id == memory_id for row in rows):
            # Nothing when it is gone (deleted since): the look-up answers as before.
            itself = _ITSELF.all(connection, {**owner_values(user_id), "memory_id": memory_id})
            rows = [*itself, *rows]
            matching += len(itself)
        kept, terms = self._kept(connection, user_id, rows)
        return _Fetched(kept, terms, None, max(matching - len(kept), 0))

    def _kept(
        self, connection: sa.Connection, user_id: str, best_first: Sequence[CandidateRow]
    ) -> tuple[list[CandidateRow], dict[str, str]]:
        """The candidates within both bounds, and the stored terms of the long ones among them, read by id."""
        kept = self._within_bounds(best_first)
        long_ids = [row.id for row in kept if row.search_terms is None and row.doc_length > INLINE_TERMS_MAX]
        terms: dict[str, str] = {}
        if long_ids:
            terms = {found.id: found.search_terms for found in _TERMS.all(connection, _ids(user_id, long_ids))}
        # A long memory deleted since the candidates were read (a save's look-up reads them in the save's own round
        # trip, ADR 0042) is no candidate.
        return [row for row in kept if row.search_terms is not None or row.id in terms or not row.doc_length], terms

    def _within_bounds(self, best_first: Sequence[CandidateRow]) -> list[CandidateRow]:
        """The best candidates, as many as both bounds allow: at most `candidate_limit`, and terms within the
        budget (the first always: one memory holds at most `limits.INDEXED_TERMS_MAX`)."""
        kept: list[CandidateRow] = []
        read = 0
        for row in best_first[: self._candidate_limit]:
            read += row.doc_length
            if kept and read > self._terms_budget:
                break
            kept.append(row)
        return kept

    def _matching_counts(self, connection: sa.Connection, user_id: str, tokens: Sequence[str]) -> dict[str, int]:
        """How many of the owner's rows hold each token, in one statement: the dialect's count of one token's rows
        (`_matching_read`) as a scalar subquery per token. A Han query is hundreds of bigrams: a statement each
        cost a round trip each, or 50 µs of binding each when sent together."""
        parts = [
            planned.read.bind(connection.dialect, planned.parameters)
            for planned in (self._matching_read(user_id, token) for token in tokens)
        ]
        # The subqueries' SQL is the dialect's compiled statement, with no value in it: every token is bound.
        statement = "SELECT " + ", ".join(f"({sql})" for sql, _ in parts)
        values = tuple(value for _, bound in parts for value in bound)
        counts = connection.exec_driver_sql(statement, values).one()
        return {token: int(count) for token, count in zip(tokens, counts, strict=True)}

    @abstractmethod
    def _candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        """Up to `limit` owner rows matching any token: id, search_terms, doc_length, owner_count, owner_length."""

    @abstractmethod
    def _like_candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        """Up to `limit` owner rows matching any token, best first by the full-text index's relevance, each with
        `matching`: how many of the owner's rows matched in all."""

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
    def _matching_read(self, user_id: str, token: str) -> PlannedRead:
        """The count of the owner's rows holding `token`: one row, one column."""


def _ids(user_id: str, memory_ids: Sequence[str]) -> dict[str, object]:
    return {**owner_values(user_id), "ids": list(memory_ids)}


#: One memory of the owner's as a candidate, by its id: a look-up's new memory the full-text index does not show yet.
_ITSELF = CompiledRead(
    select_candidates(owned_memories(owner_parameter(), owner_scope_parameter())).where(
        memory.c.id == sa.bindparam("memory_id", type_=memory.c.id.type)
    )
)

#: The stored terms of candidates read without them (longer than `INLINE_TERMS_MAX`), by id, the owner's only.
_TERMS = CompiledRead(
    sa.select(memory.c.id, memory.c.search_terms).where(
        owned_memories(owner_parameter(), owner_scope_parameter()),
        memory.c.id.in_(sa.bindparam("ids", expanding=True)),
    ),
    expanding="ids",
)
