"""The idempotent bootstrap both install paths run, and the readiness check before serving.

Alembic autogenerate cannot see a FULLTEXT index (nor an FTS5 table), and a fresh
install stamps head without running migrations. So the search structures are created
here, by a step that the fresh path (`SqlStorage.initialize`) and the migrate path
(`SqlStorage.migrate`, and revision 1 itself) both run. Running it again is a no-op.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa

from adapters_mysql.errors import SchemaNotReadyError
from adapters_mysql.mysql_fulltext import FULLTEXT_INDEX_NAME, ensure_fulltext_index, fulltext_index_exists
from adapters_mysql.owner_fulltext import (
    OWNER_FULLTEXT_INDEX_NAME,
    ensure_owner_fulltext_index,
    owner_fulltext_index_exists,
)
from adapters_mysql.revisions import current_revision, head_revision, known_revisions
from adapters_mysql.schema import memory
from adapters_mysql.spider import check_shards, is_spider_head
from adapters_mysql.sqlite_fts5 import FTS_TABLE_NAME, ensure_fts5, fts5_ready
from adapters_mysql.sqlite_owner_fts5 import TERMS_FTS_TABLE_NAME, ensure_terms_fts5, terms_fts5_ready

_log = logging.getLogger("memorybank.storage")


def bootstrap(connection: sa.Connection) -> bool:
    """Create the dialect's search structures if missing; True if anything was created.

    Both structures: the seed-literal one over `content`, and the owner-scoped one over
    `search_terms`, the latter only once that column exists (revision 0001 runs this too).
    """
    owner_scoped = _has_search_terms(connection)
    if connection.dialect.name == "mysql":
        created = ensure_fulltext_index(connection)
        if owner_scoped:
            created = ensure_owner_fulltext_index(connection) or created
    elif connection.dialect.name == "sqlite":
        created = ensure_fts5(connection)
        if owner_scoped:
            created = ensure_terms_fts5(connection) or created
    else:
        raise ValueError(f"memorybank storage does not support the {connection.dialect.name} dialect")
    if created:
        _log.info("bootstrap created the %s search structures", connection.dialect.name)
    return created


def _has_search_terms(connection: sa.Connection) -> bool:
    columns = sa.inspect(connection).get_columns(memory.name)
    return any(column["name"] == memory.c.search_terms.name for column in columns)


def missing_search_structures(connection: sa.Connection) -> list[str]:
    """The dialect's search structures that do not exist, described for an error message."""
    if connection.dialect.name == "mysql":
        checks = [
            (fulltext_index_exists, f"the FULLTEXT index {FULLTEXT_INDEX_NAME}"),
            (owner_fulltext_index_exists, f"the FULLTEXT index {OWNER_FULLTEXT_INDEX_NAME}"),
        ]
    else:
        checks = [
            (fts5_ready, f"the FTS5 table {FTS_TABLE_NAME} or its triggers"),
            (terms_fts5_ready, f"the FTS5 table {TERMS_FTS_TABLE_NAME} or its triggers"),
        ]
    return [description for exists, description in checks if not exists(connection)]


def search_structures_ready(connection: sa.Connection) -> bool:
    """True when the dialect's search structures exist."""
    return not missing_search_structures(connection)


def check_ready(connection: sa.Connection, *, fix_command: str) -> None:
    """Refuse to serve a database whose schema is not exactly what this version needs.

    Raises:
        SchemaNotReadyError: the revision is missing, behind or unknown, or the search
            structures are missing; the message names `fix_command`.
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
    missing = missing_search_structures(connection)
    if missing:
        verb = "are" if len(missing) > 1 else "is"
        raise SchemaNotReadyError(f"{' and '.join(missing)} {verb} missing: run `{fix_command}`")
    if connection.dialect.name == "mysql" and is_spider_head(connection):
        check_shards(connection, head_revision=head, fix_command=fix_command)
