"""Add panel_credential: the management panel's one-time sign-in links and sessions (hashes only).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

Sizes are literals on purpose, as in 0001.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _timestamp() -> sa.types.TypeEngine[datetime]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    """Create the panel_credential table."""
    op.create_table(
        "panel_credential",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.Enum("link", "session", name="panel_credential_kind"), nullable=False),
        sa.Column("secret_hash", sa.CHAR(64), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("org_id", sa.String(64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.Column("expires_at", _timestamp(), nullable=False),
        sa.Column("ended_at", _timestamp(), nullable=True),
        sa.UniqueConstraint("secret_hash", name="panel_credential_secret_hash"),
        sa.Index("panel_credential_user_id", "user_id"),
        mysql_engine="InnoDB",
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )


def downgrade() -> None:
    """Drop the panel_credential table."""
    op.drop_table("panel_credential")
