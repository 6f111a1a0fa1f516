"""A panel session remembers the credential it was made from, so revoking an API token ends its sessions.

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-03

`panel_credential.made_from` is the API token (`tok_…`) or sign-in link (`pnl_…`) a session came from;
NULL for sessions made before this revision and for sign-ins at an identity provider. Those older sessions
still end as before (sign-out, 12-hour expiry, `panel-link --revoke`, purge). The DDL is written out: this
revision imports nothing of memorybank.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the session's source column and its index."""
    id_type = sa.String(64).with_variant(mysql.VARCHAR(64, charset="utf8mb4", collation="utf8mb4_bin"), "mysql")
    op.add_column("panel_credential", sa.Column("made_from", id_type, nullable=True))
    op.create_index("panel_credential_made_from", "panel_credential", ["made_from"])


def downgrade() -> None:
    """Drop the column (sessions then no longer end with their token)."""
    op.drop_index("panel_credential_made_from", table_name="panel_credential")
    op.drop_column("panel_credential", "made_from")
