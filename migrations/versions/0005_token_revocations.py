"""Count revocations, so a server can cache verified tokens and still see a revocation on the next request.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

One row (id 1) holds how many revocations were ever made; `memorybank token revoke` bumps it in
the same transaction that marks the token revoked. The row starts at 0 (a database made by
`create_all` gets it on its first revocation). The DDL is written out: this revision imports
nothing of memorybank.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_MYSQL_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def upgrade() -> None:
    table = op.create_table(
        "api_token_revocations",
        sa.Column("id", sa.SmallInteger(), primary_key=True, autoincrement=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        **_MYSQL_TABLE_OPTIONS,
    )
    op.bulk_insert(table, [{"id": 1, "generation": 0}])


def downgrade() -> None:
    op.drop_table("api_token_revocations")
