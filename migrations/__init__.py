"""Alembic migrations of the memory bank's schema."""
