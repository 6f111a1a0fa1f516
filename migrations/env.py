"""Alembic environment for memorybank's tables.

`memorybank migrate` (`SqlStorage.migrate`) hands in its own connection. From the
alembic command line, name the database with `-x db=URL`, e.g.
`alembic -x db=sqlite:///memorybank.sqlite3 upgrade head` (configured in pyproject.toml).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import context

from adapters_mysql.connect import open_engine
from adapters_mysql.revisions import VERSION_TABLE, include_name
from adapters_mysql.schema import metadata


def _run(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        include_name=include_name,
        compare_type=True,
        compare_server_default=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    if context.is_offline_mode():
        # Revision 0003 reads the live schema (does the old index still exist?).
        raise SystemExit("memorybank migrations run online only: drop --sql")
    given: Any = context.config.attributes.get("connection")
    if isinstance(given, sa.Connection):
        _run(given)
        return
    url = context.get_x_argument(as_dictionary=True).get("db") or context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("name the database: alembic -x db=URL <command>")
    engine = open_engine(url)
    try:
        with engine.begin() as connection:
            _run(connection)
    finally:
        engine.dispose()


_main()
