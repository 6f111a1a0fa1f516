"""The rewrite fence: searches that overlap a batch rewriting search tokens notice it and run again.

InnoDB's FULLTEXT index is not MVCC-aware: when a row's indexed column is rewritten, its old
document is filtered out as soon as the change is made, while a reader whose snapshot predates
the commit cannot see the new version. A search overlapping a batch of `memorybank encrypt` or
`keys rotate` could therefore miss that batch's rows (measured: about a quarter of overlapping
searches did) although the rows are there before and after.

So every walk batch first bumps `reindex_generation` (one row, locked until the batch commits),
and a search made while a walk may run (`OwnerIndexer.rewrite_pending`) reads the generation
before its statements and again, with a locking read, after them: a batch in flight makes the
locking read wait for its commit, and any batch committed meanwhile changes the number. Then
the search ends its snapshot and runs again. When no walk can run, searches skip all of this.
"""

from __future__ import annotations

import sqlalchemy as sa

from adapters_mysql.schema import reindex_generation

_ROW = 1


def bump(connection: sa.Connection) -> None:
    """Count one more rewriting batch; called first in the batch's transaction, so the row lock covers it."""
    updated = connection.execute(
        reindex_generation.update()
        .where(reindex_generation.c.id == _ROW)
        .values(generation=reindex_generation.c.generation + 1)
    ).rowcount
    if updated == 0:
        # The first batch ever here. Two walks starting at once on such a database: the second's
        # insert fails its batch (a conflict), and that walk can simply be run again.
        connection.execute(reindex_generation.insert().values(id=_ROW, generation=1))


def generation(connection: sa.Connection, *, wait_for_writers: bool = False) -> int:
    """The current generation; with `wait_for_writers`, a locking read that waits for a batch in flight."""
    query = sa.select(reindex_generation.c.generation).where(reindex_generation.c.id == _ROW)
    if wait_for_writers:
        query = query.with_for_update(read=True)
    return int(connection.execute(query).scalar() or 0)
