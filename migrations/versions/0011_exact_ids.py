"""Identifiers compare byte for byte on MySQL/MariaDB: `utf8mb4_bin` on every id column.

Revision ID: 0011
Revises: 0008
Create Date: 2026-12-03

The tables' collation, `utf8mb4_unicode_ci`, is right for text (`cafe` finds `café`) and wrong for
ids: a host's users `Alice` and `alice` (or `josé` and `jose`) were one owner to every statement,
so each saw, listed and deleted the other's memories, and shared a gate and a quota. SQLite and
the in-memory store already compared ids exactly. Trailing spaces, which `utf8mb4_bin` still pads,
are refused in ids by the core. The DDL is written out: this revision imports nothing of memorybank.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0008"
branch_labels = None
depends_on = None
#: SQLite compares text byte for byte already: this revision changes nothing there.
dialects = ("mysql",)

#: Every id column as of this revision, by table; all are NOT NULL.
_ID_COLUMNS: dict[str, tuple[str, ...]] = {
    "memory": ("id", "user_id", "org_id"),
    "memory_context": ("id", "memory_id", "user_id"),
    "api_token": ("id", "user_id", "org_id"),
    "panel_credential": ("id", "user_id", "org_id"),
    "memory_usage": ("user_id",),
    "memory_control": ("subject_id",),
    "purge_run": ("id", "subject_id"),
}


def _modify(collation: str) -> None:
    if op.get_bind().dialect.name not in dialects:
        return
    for table, columns in _ID_COLUMNS.items():
        changes = ", ".join(
            f"MODIFY `{column}` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE {collation} NOT NULL" for column in columns
        )
        op.execute(f"ALTER TABLE `{table}` {changes}")


def upgrade() -> None:
    """Give every id column the binary collation."""
    _modify("utf8mb4_bin")


def downgrade() -> None:
    """Back to the tables' collation (ids that differ only in case would then collide again)."""
    _modify("utf8mb4_unicode_ci")
