"""`SqliteOwnerScopedSearch`: the owner-scoped engine on SQLite, so embedded and MySQL rank alike.

An external-content FTS5 table indexes `memory.search_terms` (the owner-tagged tokens of
`memorybank_search.indexer`), kept in step by triggers in the same transaction as every write.
`detail=none` stores only which rows hold a token: term frequencies come from the stored tokens
and ranking is the same per-owner BM25 as on MySQL. All of the SQLite-specific SQL lives here:
the engine's statements and the FTS5 table's DDL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from adapters_mysql.compiled_reads import CompiledRead, PlannedRead
from adapters_mysql.engines import for_writing
from adapters_mysql.owner import owned_memories, owner_parameter, owner_scope_parameter, owner_values
from adapters_mysql.owner_search import CandidateRow, OwnerScopedSearch, select_candidates
from adapters_mysql.schema import memory

TERMS_FTS_TABLE_NAME = "memory_terms_fts"
TERMS_FTS_TRIGGER_NAMES = (
    "memory_terms_fts_after_insert",
    "memory_terms_fts_after_delete",
    "memory_terms_fts_after_update",
)

# Tokens are `[0-9a-z_]`: unicode61 with `_` as a token character keeps each one whole.
# Static DDL, no input in it: hence text().
_CREATE_STATEMENTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms_fts USING fts5(search_terms, content='memory', "
    "content_rowid='rowid', tokenize=\"unicode61 remove_diacritics 0 tokenchars '_'\", detail=none)",
    "CREATE TRIGGER IF NOT EXISTS memory_terms_fts_after_insert AFTER INSERT ON memory BEGIN "
    "INSERT INTO memory_terms_fts(rowid, search_terms) VALUES (new.rowid, new.search_terms); END",
    # An external-content 'delete' must be given the old values exactly.
    "CREATE TRIGGER IF NOT EXISTS memory_terms_fts_after_delete AFTER DELETE ON memory BEGIN "
    "INSERT INTO memory_terms_fts(memory_terms_fts, rowid, search_terms) "
    "VALUES ('delete', old.rowid, old.search_terms); END",
    "CREATE TRIGGER IF NOT EXISTS memory_terms_fts_after_update AFTER UPDATE OF search_terms ON memory BEGIN "
    "INSERT INTO memory_terms_fts(memory_terms_fts, rowid, search_terms) "
    "VALUES ('delete', old.rowid, old.search_terms); "
    "INSERT INTO memory_terms_fts(rowid, search_terms) VALUES (new.rowid, new.search_terms); END",
)
_REBUILD = "INSERT INTO memory_terms_fts(memory_terms_fts) VALUES ('rebuild')"
_OPTIMIZE = "INSERT INTO memory_terms_fts(memory_terms_fts) VALUES ('optimize')"

_sqlite_master = sa.table("sqlite_master", sa.column("type", sa.String), sa.column("name", sa.String))
_fts = sa.table(TERMS_FTS_TABLE_NAME, sa.column("rowid", sa.Integer), sa.column("rank", sa.Float))


class SqliteOwnerScopedSearch(OwnerScopedSearch):
    """The `SearchEngine` port over FTS5 on the tagged tokens, with exact per-owner BM25.

    At most `candidate_limit` matching rows are scored: past it, the newest are kept, while
    document frequencies are still counted over all the owner's rows.
    """

    def _candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        # One statement: the candidates, newest first (which decides who survives the bound),
        # each carrying the owner's totals (computed once).
        return connection.execute(_candidates(user_id, tokens, limit)).all()

    def _matching_read(self, user_id: str, token: str) -> PlannedRead:
        return PlannedRead(_MATCHING, {**owner_values(user_id), "tokens": _expression([token])})

    def _like_candidates(
        self, connection: sa.Connection, user_id: str, tokens: Sequence[str], limit: int
    ) -> Sequence[CandidateRow]:
        return _LIKE_CANDIDATES.all(
            connection, {**owner_values(user_id), "tokens": _expression(tokens), "limit": limit}
        )


def _expression(tokens: Sequence[str]) -> str:
    # Tokens are `[0-9a-z_]`, so quoting each is safe; OR finds rows holding any of them.
    return " OR ".join(f'"{token}"' for token in tokens)


def _match(tokens: Sequence[str] | None) -> sa.ColumnElement[bool]:
    """The FTS5 match of any of `tokens`; None: of the `:tokens` bound when run (`_expression`)."""
    value = _expression(tokens) if tokens is not None else None
    return sa.literal_column(TERMS_FTS_TABLE_NAME).op("MATCH")(sa.bindparam("tokens", value, type_=sa.Text))


def _matched_rows(tokens: Sequence[str] | None) -> sa.ColumnElement[bool]:
    # `rowid IN (full-text match)` makes SQLite run the match once and probe memory by rowid.
    # A plain join lets the planner walk the owner's rows and run one FTS5 lookup per row,
    # 20x slower for an owner with a thousand matching memories.
    return sa.literal_column("memory.rowid").in_(sa.select(_fts.c.rowid).where(_match(tokens)))


def _candidates(user_id: str, tokens: Sequence[str], limit: int) -> sa.Select[str, str | None, int, int, int]:
    return (
        select_candidates(owned_memories(user_id))
        .where(_matched_rows(tokens))
        # Only decides which candidates survive the bound: the newest.
        .order_by(memory.c.created_at.desc(), memory.c.id.desc())
        .limit(limit)
    )


def _like_candidates_statement() -> sa.Select[str, str | None, int, int, int, int]:
    # FTS5 keeps the best `limit` by its own BM25 (`rank`) as it reads the matches; the owner's guard is applied to
    # those. The tokens carry the owner's tag, so the rows it ranks are the owner's (a tag collision's rows are
    # dropped by the guard: fewer candidates, never another owner's).
    best = (
        sa.select(_fts.c.rowid, _fts.c.rank)
        .where(_match(None))
        .order_by(_fts.c.rank)
        .limit(sa.bindparam("limit", type_=sa.Integer))
        .subquery("best")
    )
    matching = sa.select(sa.func.count()).select_from(_fts).where(_match(None)).scalar_subquery()
    return (
        select_candidates(owned_memories(owner_parameter(), owner_scope_parameter()))
        .add_columns(matching.label("matching"))
        .join_from(memory, best, sa.literal_column("memory.rowid") == best.c.rowid)
        .order_by(best.c.rank, memory.c.id.desc())
    )


#: A `search_like`'s candidates: the owner's best by FTS5's relevance, with how many rows matched in all.
_LIKE_CANDIDATES = CompiledRead(_like_candidates_statement())


#: How many of the owner's rows hold the tokens bound as `:tokens` (one, for a document frequency).
_MATCHING = CompiledRead(
    sa.select(sa.func.count().label("matching")).where(
        _matched_rows(None), owned_memories(owner_parameter(), owner_scope_parameter())
    )
)


def terms_fts5_ready(connection: sa.Connection) -> bool:
    """True when the tagged-token FTS5 table and all its triggers exist."""
    wanted = {TERMS_FTS_TABLE_NAME, *TERMS_FTS_TRIGGER_NAMES}
    names = set(
        connection.execute(
            sa.select(_sqlite_master.c.name).where(
                _sqlite_master.c.name.in_(sorted(wanted)), _sqlite_master.c.type.in_(["table", "trigger"])
            )
        ).scalars()
    )
    return names == wanted


def ensure_terms_fts5(connection: sa.Connection) -> bool:
    """Create the tagged-token FTS5 table and triggers if missing (indexing existing rows); True if made."""
    if terms_fts5_ready(connection):
        return False
    for statement in _CREATE_STATEMENTS:
        connection.execute(sa.text(statement))
    # Rows written while the table or a trigger was missing are not indexed: rebuild from `memory`.
    connection.execute(sa.text(_REBUILD))
    return True


def purge_rewritten_text(engine: sa.Engine) -> None:
    """Leave no replaced or deleted text in the file after rows were rewritten or purged.

    Called after `memorybank encrypt`, `keys rotate` and an offboarding purge.

    FTS5 keeps a rewritten row's old tokens in index segments until they are merged: `optimize`
    merges them; freed pages are zeroed (`secure_delete`, see engines), and a WAL checkpoint moves
    everything into the database file and truncates the log.
    """
    with for_writing(engine).begin() as connection:
        connection.execute(sa.text(_OPTIMIZE))
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
