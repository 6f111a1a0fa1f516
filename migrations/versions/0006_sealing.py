"""Encryption at rest: each memory's seal state, and the key-check table.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

`memory.seal_state` is NULL for a plaintext row (every existing row) and names the sealing and
index keys of a sealed one; its index lets `memorybank encrypt` and `memorybank keys rotate` find
the rows still to do. `seal_key` holds one key-check value per key that may have sealed rows.
Sizes are literals on purpose, as in 0001.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def upgrade() -> None:
    """Add the seal state column and its index, and the key-check table."""
    op.add_column("memory", sa.Column("seal_state", sa.String(32), nullable=True))
    op.create_index("memory_seal_state", "memory", ["seal_state", "id"])
    op.create_table(
        "seal_key",
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("check_value", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql"), nullable=False),
        **_TABLE_OPTIONS,
    )


def downgrade() -> None:
    """Drop what revision 0006 added; refused while any key may have sealed rows (older code cannot open them)."""
    if op.get_bind().execute(sa.text("SELECT 1 FROM seal_key LIMIT 1")).first() is not None:
        raise RuntimeError("this database holds sealed memories, which revision 0005 cannot read: not downgraded")
    op.drop_table("seal_key")
    op.drop_index("memory_seal_state", table_name="memory")
    op.drop_column("memory", "seal_state")
