"""The organization's shared bank: who wrote each org memory.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05

`memory.scope` had both values from revision 0001 ('user', 'org'); only 'user' was ever written. An org
memory is owned by its organization's bank (`user_id` holds the bank's own `bank_` id, so every per-owner
structure keeps the bank apart from every person's) and records the person who saved it in `author_id`,
the one besides an `org:admin` who may change or delete it. Personal rows keep NULL: the column is added
nullable, without a default to write, so no personal row is rewritten (an instant ADD COLUMN on MariaDB).
Ids are binary on MySQL as revision 0011 made every id column. The DDL is written out: this revision
imports nothing of memorybank.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _id() -> sa.types.TypeEngine[str]:
    return sa.String(64).with_variant(mysql.VARCHAR(64, charset="utf8mb4", collation="utf8mb4_bin"), "mysql")


def upgrade() -> None:
    """Add `memory.author_id` (NULL for every personal memory)."""
    # Plain ADD COLUMN, never a batch copy: SQLite's FTS5 table indexes `memory` by rowid.
    op.add_column("memory", sa.Column("author_id", _id(), nullable=True))


def downgrade() -> None:
    """Drop `memory.author_id` and every org memory with it (an org memory without its author is no one's)."""
    org_rows = "SELECT id FROM memory WHERE scope = 'org'"
    for child in ("memory_context", "memory_vector", "memory_revision"):
        op.execute(sa.text(f"DELETE FROM {child} WHERE memory_id IN ({org_rows})"))  # noqa: S608 - constant text
    op.execute(sa.text("DELETE FROM memory_usage WHERE user_id IN (SELECT user_id FROM memory WHERE scope = 'org')"))
    op.execute(sa.text("DELETE FROM memory WHERE scope = 'org'"))
    op.drop_column("memory", "author_id")
