"""The glue to alembic: where the migration scripts are, and which revision a database is at.

Alembic is imported only by what migrates. Checking a database's revision (every command and server
start, and a readiness probe that finds a problem) reads the version table with one SELECT and the
scripts' `revision` / `down_revision` lines (`script_revisions`), which costs no alembic import: the
command-line tools answer in well under a second (docs/benchmarks.md, Start-up).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import sqlalchemy as sa

from adapters_mysql.mysql_search import OWNER_FULLTEXT_INDEX_NAME
from adapters_mysql.schema import metadata

if TYPE_CHECKING:
    from alembic.config import Config

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
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", script_location())
    config.attributes["connection"] = connection
    return config


@attrs.frozen
class ScriptRevisions:
    """The revisions the migration scripts define, and the newest one."""

    head: str
    known: frozenset[str]


_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.*)$", re.MULTILINE)
_QUOTED = re.compile(r"[\"']([^\"']+)[\"']")


@functools.cache
def script_revisions() -> ScriptRevisions:
    """Every revision of the scripts and the head, read from their `revision` and `down_revision` lines.

    The same graph alembic walks (tests/sql/test_migrations.py compares them), at a fraction of the cost.

    Raises:
        RuntimeError: the scripts do not form one line of revisions.
    """
    parents: dict[str, set[str]] = {}
    for script in _version_scripts():
        text = script.read_text(encoding="utf-8")
        revision, down = _REVISION.search(text), _DOWN_REVISION.search(text)
        if revision is None or down is None:
            continue  # not a revision script
        parents[revision.group(1)] = set(_QUOTED.findall(down.group(1)))
    heads = set(parents) - set().union(*parents.values())
    if len(heads) != 1:
        raise RuntimeError(f"memorybank's migration scripts must have one head, not {sorted(heads)}")
    return ScriptRevisions(head=heads.pop(), known=frozenset(parents))


def _version_scripts() -> list[Path]:
    versions = Path(script_location()) / "versions"
    return [entry for entry in versions.iterdir() if entry.name.endswith(".py") and entry.name != "__init__.py"]


def head_revision() -> str:
    """The newest revision this version of memorybank knows."""
    return script_revisions().head


def known_revisions() -> frozenset[str]:
    """Every revision this version of memorybank knows."""
    return script_revisions().known


def revisions_after(revision: str | None) -> tuple[str, ...]:
    """The revisions newer than `revision` (None: every revision), oldest first: what an upgrade runs."""
    from alembic.script import ScriptDirectory

    newest_first = [script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()]
    if revision is None:
        return tuple(reversed(newest_first))
    if revision not in newest_first:
        return ()  # a revision this version does not know: the upgrade itself reports it
    return tuple(reversed(newest_first[: newest_first.index(revision)]))


def current_revision(connection: sa.Connection) -> str | None:
    """The revision the database is stamped with, or None if it has no memorybank schema.

    Raises:
        sqlalchemy.exc.DBAPIError: the database cannot be read.
    """
    if not sa.inspect(connection).has_table(VERSION_TABLE):
        return None
    return stamped_revision(connection)


def stamped_revision(connection: sa.Connection) -> str | None:
    """The version table's one row (one SELECT); None when it is empty.

    Raises:
        sqlalchemy.exc.DBAPIError: the table is gone or the database cannot be read.
    """
    versions = sa.table(VERSION_TABLE, sa.column("version_num", sa.String))
    rows = connection.execute(sa.select(versions.c.version_num)).scalars().all()
    if len(rows) > 1:
        raise RuntimeError(f"{VERSION_TABLE} holds several revisions ({sorted(rows)}): a branched schema")
    return rows[0] if rows else None


def upgrade_to_head(connection: sa.Connection) -> None:
    """Run every pending migration on `connection`."""
    from alembic import command

    command.upgrade(alembic_config(connection), "head")


def stamp_head(connection: sa.Connection) -> None:
    """Record that the database is at head without running migrations (the fresh-install path).

    What `alembic stamp head` writes on a fresh database (its version table, with alembic's own column
    and constraint), without importing alembic: the first command on a new database stays quick.
    """
    versions = sa.Table(
        VERSION_TABLE,
        sa.MetaData(),
        sa.Column("version_num", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
    )
    versions.create(connection, checkfirst=True)
    connection.execute(versions.delete())
    connection.execute(versions.insert().values(version_num=head_revision()))


def include_name(name: str | None, type_: str, _parent_names: object) -> bool:
    """Alembic's filter: compare only our tables, and not the FULLTEXT index autogenerate cannot see.

    Other tables in the database (a host's, FTS5's shadow tables, the version table) are not ours.
    """
    if type_ == "table":
        return name in metadata.tables
    if type_ == "index":
        return name != OWNER_FULLTEXT_INDEX_NAME
    return True
