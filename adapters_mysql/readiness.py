"""The search index every install path makes sure of, and the readiness check before serving.

Alembic autogenerate cannot see a FULLTEXT index (nor an FTS5 table), and a fresh install
creates today's tables and stamps head without running migrations. So the fresh path
(`SqlStorage.initialize`) creates the owner-scoped full-text structure here; the migrate path
gets it from the revisions, and `SqlStorage.migrate` runs this too, to repair a dropped one.
Running it again is a no-op. The revisions never call it: they hold the DDL of their day.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa

from adapters_mysql.errors import SchemaNotReadyError
from adapters_mysql.mysql_search import (
    OWNER_FULLTEXT_INDEX_NAME,
    ensure_owner_fulltext_index,
    owner_fulltext_index_exists,
)
from adapters_mysql.revisions import current_revision, head_revision, known_revisions
from adapters_mysql.sqlite_search import TERMS_FTS_TABLE_NAME, ensure_terms_fts5, terms_fts5_ready

_log = logging.getLogger("memorybank.storage")


def ensure_search_index(connection: sa.Connection) -> bool:
    """Create the dialect's owner-scoped full-text structure if missing; True if anything was created."""
    if connection.dialect.name == "mysql":
        created = ensure_owner_fulltext_index(connection)
    elif connection.dialect.name == "sqlite":
        created = ensure_terms_fts5(connection)
    else:
        raise ValueError(f"memorybank storage does not support the {connection.dialect.name} dialect")
    if created:
        _log.info("created the %s search index", connection.dialect.name)
    return created


def missing_search_index(connection: sa.Connection) -> str | None:
    """The dialect's search structure, described for an error message, when it does not exist."""
    if connection.dialect.name == "mysql":
        exists, description = owner_fulltext_index_exists, f"the FULLTEXT index {OWNER_FULLTEXT_INDEX_NAME}"
    else:
        exists, description = terms_fts5_ready, f"the FTS5 table {TERMS_FTS_TABLE_NAME} or its triggers"
    return None if exists(connection) else description


def check_ready(connection: sa.Connection, *, fix_command: str) -> None:
    """Refuse to serve a database whose schema is not exactly what this version needs.

    Raises:
        SchemaNotReadyError: the revision is missing, behind or unknown, or the search
            index is missing; the message names `fix_command`.
    """
    current = current_revision(connection)
    head = head_revision()
    if current is None:
        raise SchemaNotReadyError(f"the database has no memorybank schema yet: run `{fix_command}` to create it")
    if current not in known_revisions():
        raise SchemaNotReadyError(
            f"the database schema is at revision {current}, newer than this memorybank knows (head {head}): "
            "upgrade memorybank"
        )
    if current != head:
        raise SchemaNotReadyError(
            f"the database schema is at revision {current}, behind this memorybank's {head}: run `{fix_command}`"
        )
    missing = missing_search_index(connection)
    if missing is not None:
        raise SchemaNotReadyError(f"{missing} is missing: run `{fix_command}`")
