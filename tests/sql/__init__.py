"""Tests of the SQL storage adapters (SQLite and MySQL/MariaDB)."""
