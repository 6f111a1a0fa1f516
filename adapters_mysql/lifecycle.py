"""The schema's life on one database: created on a fresh install, migrated, checked before serving, probed.

`initialize` is the embedded database's first start, `migrate` is `memorybank migrate`, `check_ready`
runs before a server serves and `probe_ready` on every `/readyz`. Each ends by adopting the key
ring (`seal_keys.adopt_sealing`); `migrate` also re-indexes and counts quota use (`Maintenance`).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import sqlalchemy as sa

from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.maintenance import Maintenance
from adapters_mysql.readiness import check_ready, ensure_search_index
from adapters_mysql.revisions import (
    current_revision,
    head_revision,
    revisions_after,
    stamp_head,
    stamped_revision,
    upgrade_to_head,
)
from adapters_mysql.schema import memory, metadata
from adapters_mysql.spider import refuse_a_spider_head

#: Reads no row, but fails once the table is gone (the readiness probe).
_MEMORY_TABLE_PROBE = sa.select(memory.c.id).limit(0)


@attrs.frozen(kw_only=True)
class MigrationReport:
    """What `SqlStorage.migrate` did; all empty or zero when the schema was already up to date."""

    revision: str
    """The revision the database is at now (head)."""
    applied: tuple[str, ...]
    """The revisions run, oldest first."""
    created_search_structures: bool
    """True when the FULLTEXT indexes or FTS5 tables were missing and have been created."""
    reindexed: int
    """Memories whose search document was rewritten."""
    measured: int = 0
    """Memories from before revision 0010 whose quota characters were counted."""

    @property
    def changed(self) -> bool:
        """True when anything was done."""
        return bool(self.applied) or self.created_search_structures or self.reindexed > 0 or self.measured > 0


class SchemaLifecycle:
    """Creates, migrates and checks the schema of one database; remembers the revision last found ready."""

    def __init__(
        self,
        *,
        engine: sa.Engine,
        fix_command: str,
        adopt_sealing: Callable[[], None],
        maintenance: Maintenance,
    ) -> None:
        self._engine = engine
        self.fix_command = fix_command
        """The command that brings this database's schema up to date (no password in it)."""
        self._adopt_sealing = adopt_sealing
        self._maintenance = maintenance
        self._ready_at: str | None = None
        """The revision the last full `check_ready` passed at; None until one passes, and after a probe fails."""

    def initialize(self) -> None:
        """The fresh-install path: create missing tables and stamp head, then the search index. Idempotent.

        A database that already carries a revision is not migrated here (that is `migrate`):
        `check_ready` reports it if it is behind.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("initialize"), for_writing(self._engine).begin() as connection:
            revision = current_revision(connection)
            if revision is None:
                metadata.create_all(connection)
                stamp_head(connection)
                revision = head_revision()
            ensure_search_index(connection)
        # An older schema lacks what the key check reads: leave it to `check_ready`, which names `migrate`.
        if revision == head_revision():
            self._adopt_sealing()

    def migrate(self, *, progress: Callable[[int], None] | None = None) -> MigrationReport:
        """The migrate path (`memorybank migrate`): run pending migrations, repair the search index, re-index.

        Re-indexing covers rows whose search document an older scheme wrote (all rows, after
        upgrading from revision 0001) and, with a key ring, rows not yet sealed under its keys;
        `progress` gets each batch's count.

        Raises:
            KeyRingError: the database holds sealed memories the configured key ring cannot open.
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("migrate"), for_writing(self._engine).begin() as connection:
            refuse_a_spider_head(connection, self.fix_command)
            applied = revisions_after(current_revision(connection))
            upgrade_to_head(connection)
            created = ensure_search_index(connection)
        self._adopt_sealing()
        reindexed = self._maintenance.reindex(progress=progress).rewritten
        measured = self._maintenance.measure_usage()
        return MigrationReport(
            revision=head_revision(),
            applied=applied,
            created_search_structures=created,
            reindexed=reindexed,
            measured=measured,
        )

    def check_ready(self) -> None:
        """Refuse to serve a database that is not at head or lacks its search index.

        Also checks the key ring against the database (and logs which mode it is in).

        Raises:
            SchemaNotReadyError: with a message naming `fix_command`.
            KeyRingError: the database holds sealed memories the configured key ring (or none) cannot open.
            UnavailableError: the database cannot be reached.
        """
        self._ready_at = None
        with unavailable_on_driver_error("readiness check"), self._engine.connect() as connection:
            check_ready(connection, fix_command=self.fix_command)
        self._adopt_sealing()
        self._ready_at = head_revision()

    def probe_ready(self) -> None:
        """The readiness probe's check (`/readyz`): cheap and silent while nothing changed, the full check otherwise.

        Once `check_ready` passed, a probe is one connection and two reads: the version stamp, still
        the revision checked, and the `memory` table, still there. When either fails the full
        `check_ready` runs again and raises what it finds (and passes again once the database is back).

        Raises:
            SchemaNotReadyError, KeyRingError, UnavailableError: as `check_ready`.
        """
        checked = self._ready_at
        if checked is not None:
            try:
                with self._engine.connect() as connection:
                    if stamped_revision(connection) == checked:
                        connection.execute(_MEMORY_TABLE_PROBE)
                        return
            except sa.exc.DBAPIError:
                pass  # the full check below says what is wrong
        self.check_ready()
