"""The glue to alembic: where the migration scripts are, and which revision a database is at."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from adapters_mysql.mysql_search import OWNER_FULLTEXT_INDEX_NAME
from adapters_mysql.schema import metadata

#: Our own version table, so a host that runs alembic for its own tables in the same database
#: does not collide with ours.
VERSION_TABLE = "memorybank_alembic_version"


#: The migration scripts' package: the checkout's top-level `migrations/`, which the build maps into
#: this package's namespace (pyproject.toml's package-dir), so a wheel and an editable install both have it.
SCRIPTS_PACKAGE = "adapters_mysql.migrations"


@functools.cache
def script_location() -> str:
    """The directory of the migration scripts, wherever this copy of memorybank is installed.

    Found through the import system rather than beside this file: in an editable install the
    scripts are not inside `adapters_mysql/`, the build's mapping points at them.
    """
    spec = importlib.util.find_spec(SCRIPTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"memorybank's migration scripts ({SCRIPTS_PACKAGE}) are not installed")
    return str(Path(next(iter(spec.submodule_search_locations))))


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """An alembic Config for our scripts; `migrations/env.py` runs on `connection` when given."""
    config = Config()
    config.set_main_option("script_location", script_location())
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision this version of memorybank knows."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("memorybank's migration scripts define no revision")
    return head


def known_revisions() -> frozenset[str]:
    """Every revision this version of memorybank knows."""
    return frozenset(script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions())


def revisions_after(revision: str | None) -> tuple[str, ...]:
    """The revisions newer than `revision` (None: every revision), oldest first: what an upgrade runs."""
    newest_first = [script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()]
    if revision is None:
        return tuple(reversed(newest_first))
    if revision not in newest_first:
        return ()  # a revision this version does not know: the upgrade itself reports it
    return tuple(reversed(newest_first[: newest_first.index(revision)]))


def current_revision(connection: sa.Connection) -> str | None:
    """The revision the database is stamped with, or None if it has no memorybank schema."""
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def upgrade_to_head(connection: sa.Connection) -> None:
    """Run every pending migration on `connection`."""
    command.upgrade(alembic_config(connection), "head")


def stamp_head(connection: sa.Connection) -> None:
    """Record that the database is at head without running migrations (the fresh-install path)."""
    command.stamp(alembic_config(connection), "head")


def include_name(name: str | None, type_: str, _parent_names: object) -> bool:
    """Alembic's filter: compare only our tables, and not the FULLTEXT index autogenerate cannot see.

    Other tables in the database (a host's, FTS5's shadow tables, the version table) are not ours.
    """
    if type_ == "table":
        return name in metadata.tables
    if type_ == "index":
        return name != OWNER_FULLTEXT_INDEX_NAME
    return True
