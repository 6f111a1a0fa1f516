"""SQL storage for the memory bank: MySQL/MariaDB (FULLTEXT) and embedded SQLite (FTS5)."""
