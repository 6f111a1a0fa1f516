"""A purged person's team memories say so; an organization's purge counts its bank apart.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06

`purge --user` keeps the team memories a person wrote (they are the organization's) and marks them
`author_former_member` (true; NULL for every other row, so no row is rewritten by this revision), in the rows
themselves: a read shows it with the row, without a look-up of its own. `memory_author_id` finds one person's
team memories across the banks, for the purge's count and its marking. `purge_run.team_memories` counts, of a
run's removed memories, those of the organization's team bank (0 for the runs before it). Each is an instant
ADD COLUMN or an online index build on MariaDB and MySQL 8. The DDL is written out: this revision imports
nothing of memorybank.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add `memory.author_former_member`, the index `memory_author_id` and `purge_run.team_memories`."""
    # Plain ADD COLUMN, never a batch copy: SQLite's FTS5 table indexes `memory` by rowid.
    op.add_column("memory", sa.Column("author_former_member", sa.Boolean(create_constraint=False), nullable=True))
    op.create_index("memory_author_id", "memory", ["author_id"])
    op.add_column("purge_run", sa.Column("team_memories", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    """Drop them: the memories stay, and so do the runs (their total counts of memories include the bank's)."""
    op.drop_column("purge_run", "team_memories")
    op.drop_index("memory_author_id", table_name="memory")
    op.drop_column("memory", "author_former_member")
