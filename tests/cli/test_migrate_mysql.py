"""`memorybank migrate` on a MySQL server that lacks the database: create it, or say exactly how."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from adapters_mysql import create_database_statement
from tests.cli.conftest import Run
from tests.mysql_server import DATABASE_PREFIX, server_url

pytestmark = pytest.mark.mysql


@pytest.fixture
def admin() -> Iterator[sa.Engine]:
    engine = sa.create_engine(server_url(), poolclass=sa.pool.NullPool)
    yield engine
    engine.dispose()


@pytest.fixture
def missing_name(admin: sa.Engine) -> Iterator[str]:
    """A database name the server does not have; dropped afterwards if a test created it."""
    name = DATABASE_PREFIX + secrets.token_hex(6)
    yield name
    with admin.begin() as connection:
        # An identifier cannot be a bind parameter; the name is ours (prefix + hex), not input.
        connection.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")


def _url(name: str, *, username: str | None = None, password: str | None = None) -> str:
    url = server_url().set(database=name, username=username, password=password)
    return url.render_as_string(hide_password=False)


def test_migrate_creates_a_missing_database_in_utf8mb4_and_says_so(
    run: Run, admin: sa.Engine, missing_name: str
) -> None:
    url = _url(missing_name)

    outcome = run("migrate", "--db", url)
    again = run("migrate", "--db", url)

    assert outcome.status == 0, outcome.err
    assert "created the database (utf8mb4)" in outcome.out
    assert "applied revisions 0001, 0002" in outcome.out
    assert "1049" not in outcome.out + outcome.err
    with admin.connect() as connection:
        charset, collation = connection.execute(
            sa.text(
                "SELECT default_character_set_name, default_collation_name FROM information_schema.schemata "
                "WHERE schema_name = :name"
            ),
            {"name": missing_name},
        ).one()
    assert (charset, collation) == ("utf8mb4", "utf8mb4_unicode_ci")
    assert again.status == 0, again.err
    assert "already up to date" in again.out


def test_migrate_without_the_privilege_prints_the_exact_create_statement(
    run: Run, admin: sa.Engine, missing_name: str
) -> None:
    user, password = f"mb_{missing_name[-12:]}", "pw-" + secrets.token_hex(4)
    with admin.begin() as connection:
        connection.execute(
            sa.text("CREATE USER :user@'%' IDENTIFIED BY :password"), {"user": user, "password": password}
        )
    try:
        url = _url(missing_name, username=user, password=password)

        outcome = run("migrate", "--db", url)
    finally:
        with admin.begin() as connection:
            connection.execute(sa.text("DROP USER IF EXISTS :user@'%'"), {"user": user})

    assert outcome.status == 1
    assert outcome.out == ""
    assert outcome.err.count("\n") == 1, outcome.err
    assert create_database_statement(url) in outcome.err
    assert (
        f"CREATE DATABASE IF NOT EXISTS `{missing_name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        in outcome.err
    )
    assert password not in outcome.err
    with admin.connect() as connection:
        assert connection.exec_driver_sql(f"SHOW DATABASES LIKE '{missing_name}'").all() == []


def test_serve_on_a_missing_database_names_migrate_not_just_the_driver_error(run: Run, missing_name: str) -> None:
    outcome = run("token", "list", "--db", _url(missing_name))

    assert outcome.status == 1
    assert f"the database {missing_name} does not exist" in outcome.err
    assert "memorybank migrate" in outcome.err


def test_a_database_name_that_cannot_be_quoted_safely_is_refused_before_creating_anything(run: Run) -> None:
    outcome = run("migrate", "--db", _url("bad`name"))

    assert outcome.status in (1, 2)
    assert outcome.err.count("\n") == 1, outcome.err
    assert "Traceback" not in outcome.err
