"""Migration scripts, one per revision; alembic loads them by file."""
