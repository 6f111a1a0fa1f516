"""The schema takes every size from `memorybank_core.limits` and renders the agreed types."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.schema import CreateTable

from adapters_mysql.schema import TOKEN_HASH_LENGTH, UtcDateTime, api_token, memory, memory_context, text_type
from memorybank_core import limits
from memorybank_core.limits import TextBound
from memorybank_core.tokens import hash_secret


def test_every_identifier_column_is_as_wide_as_the_id_bound() -> None:
    id_columns = [
        memory.c.id,
        memory.c.user_id,
        memory.c.org_id,
        memory_context.c.id,
        memory_context.c.memory_id,
        memory_context.c.user_id,
        api_token.c.id,
        api_token.c.user_id,
        api_token.c.org_id,
    ]
    assert {column.type.length for column in id_columns} == {limits.ID_MAX_LENGTH}  # type: ignore[attr-defined]


def test_the_token_hash_column_fits_a_hex_sha256_exactly() -> None:
    assert api_token.c.token_hash.type.length == TOKEN_HASH_LENGTH == len(hash_secret("x"))  # type: ignore[attr-defined]


def test_text_columns_hold_their_bound_in_four_byte_characters() -> None:
    assert text_type(limits.CONTENT).compile(dialect=mysql.dialect()) == "TEXT"
    assert text_type(limits.SNIPPET).compile(dialect=mysql.dialect()) == "TEXT"
    # A bound past TEXT's 65,535 bytes would switch MySQL to MEDIUMTEXT by itself.
    larger = TextBound(1, 20_000)
    assert text_type(larger).compile(dialect=mysql.dialect()) == "MEDIUMTEXT"
    assert text_type(larger).compile(dialect=sqlite.dialect()) == "TEXT"


def test_mysql_ddl_has_the_reference_types_and_options() -> None:
    ddl = str(CreateTable(memory).compile(dialect=mysql.dialect()))
    for fragment in (
        "scope ENUM('user','org') NOT NULL DEFAULT 'user'",
        "content TEXT NOT NULL",
        "tags JSON",
        "created_at DATETIME(6) NOT NULL",
        "ENGINE=InnoDB",
        "CHARSET=utf8mb4",
        "COLLATE utf8mb4_unicode_ci",
    ):
        assert fragment in ddl, fragment
    context_ddl = str(CreateTable(memory_context).compile(dialect=mysql.dialect()))
    assert "origin ENUM('active_conversation','searched_conversation')" in context_ddl
    assert "FOREIGN KEY" not in ddl + context_ddl


def test_utc_datetimes_are_stored_naive_in_utc_and_come_back_aware() -> None:
    column = UtcDateTime()
    dialect = sqlite.dialect()
    paris = timezone(timedelta(hours=2))
    stored = column.process_bind_param(datetime(2026, 7, 2, 14, 0, 0, 5, tzinfo=paris), dialect)
    assert stored == datetime(2026, 7, 2, 12, 0, 0, 5)
    assert column.process_result_value(stored, dialect) == datetime(2026, 7, 2, 12, 0, 0, 5, tzinfo=UTC)
    assert column.process_bind_param(None, dialect) is None


def test_a_naive_datetime_is_refused_rather_than_guessed() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        UtcDateTime().process_bind_param(datetime(2026, 7, 2, 12, 0), sqlite.dialect())


def test_the_schema_is_the_same_metadata_for_both_dialects() -> None:
    for dialect in (mysql.dialect(), sqlite.dialect()):
        for table in (memory, memory_context, api_token):
            assert str(CreateTable(table).compile(dialect=dialect))
    assert isinstance(memory.c.tags.type, sa.JSON)
