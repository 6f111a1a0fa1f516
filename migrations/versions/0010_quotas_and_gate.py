"""Storage quotas and the memory gate: each memory's charged characters, the usage ledger, the controls.

Revision ID: 0010
Revises: 0007
Create Date: 2026-12-03

`memory.characters` is what a memory counts against its owner's quota (plaintext characters of
content, tags and snippets). Existing rows get NULL: sealed text cannot be measured in SQL, so
`memorybank migrate` counts them afterwards through the key ring (adapters_mysql.usage). The
`memory_usage` ledger starts empty: each user's row is built from their memories on their next
save. `memory_control` holds the operators' gate switches and quotas. Sizes are literals on
purpose, as in 0001.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0010"
down_revision = "0007"
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def upgrade() -> None:
    """Add the charged-characters column, the usage ledger and the controls table."""
    op.add_column("memory", sa.Column("characters", sa.Integer(), nullable=True))
    op.create_table(
        "memory_usage",
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("memories", sa.BigInteger(), nullable=False),
        sa.Column("characters", sa.BigInteger(), nullable=False),
        **_TABLE_OPTIONS,
    )
    op.create_table(
        "memory_control",
        sa.Column("kind", sa.Enum("user", "org", "all", name="memory_control_kind"), primary_key=True),
        sa.Column("subject_id", sa.String(64), primary_key=True),
        sa.Column("enabled", sa.Boolean(create_constraint=False), nullable=True),
        sa.Column("max_memories", sa.BigInteger(), nullable=True),
        sa.Column("max_characters", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql"), nullable=False),
        **_TABLE_OPTIONS,
    )


def downgrade() -> None:
    """Drop what revision 0010 added (quotas and switches are forgotten; memories stay)."""
    op.drop_table("memory_control")
    op.drop_table("memory_usage")
    op.drop_column("memory", "characters")
