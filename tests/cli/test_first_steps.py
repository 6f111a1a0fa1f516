"""What a new user met trying the README and the docs as written (issue 28, findings 2-4 and 7), end to end."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from adapters_mysql.revisions import alembic_config, head_revision
from tests.cli.conftest import Run
from tests.cli.test_search_commands import USER


def _database_at(url: str, revision: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            command.upgrade(alembic_config(connection), revision)
    finally:
        engine.dispose()


def test_an_embedded_database_of_an_old_revision_is_told_to_migrate(run: Run, db_url: str) -> None:
    _database_at(db_url, "0003")

    for command_line in (["token", "create"], ["export", "--user", USER], ["token", "list"]):
        refused = run(*command_line, "--db", db_url)

        assert refused.status == 1
        assert refused.err == (
            f"memorybank: error: the database schema is at revision 0003, behind this memorybank's "
            f"{head_revision()}: run `memorybank migrate --db {db_url}`\n"
        )
    assert run("migrate", "--db", db_url).status == 0
    assert run("token", "list", "--db", db_url).status == 0


def test_a_key_ring_used_once_on_a_plaintext_database_seals_nothing_and_is_not_needed_after(
    run: Run, db_url: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    assert run("token", "list", "--db", db_url, "--key-file", str(keys)).status == 0  # registers the key

    later = run("token", "list", "--db", db_url)

    assert later.status == 0, later.err
    assert "sealed" not in later.err


def test_an_export_into_a_missing_directory_names_the_file_and_touches_no_database(run: Run, db_url: str) -> None:
    refused = run("export", "--user", USER, "--out", "/missing/dir/x.jsonl", "--db", db_url)

    assert refused.status == 2
    assert refused.err == "memorybank: error: cannot write /missing/dir/x.jsonl: /missing/dir is not a directory\n"
    assert not Path(db_url.removeprefix("sqlite:///")).exists()


def test_a_database_file_that_cannot_be_opened_is_said_without_a_driver_error_none(run: Run) -> None:
    refused = run("token", "list", "--db", "sqlite:////nonexistent/dir/x.sqlite3")

    assert refused.status == 1
    assert "driver error None" not in refused.err
    assert "cannot connect to the database: unable to open database file" in refused.err


def test_every_command_answers_version_as_the_program_does(run: Run) -> None:
    program = run("--version")

    for command_line in (["serve"], ["token", "create"], ["migrate"]):
        answered = run(*command_line, "--version")

        assert (answered.status, answered.out) == (0, program.out), command_line
    assert program.out.startswith("memorybank ")


def test_migrate_says_its_revisions_run_in_their_chains_order_not_by_number(run: Run, db_url: str) -> None:
    migrated = run("migrate", "--db", db_url)

    assert migrated.status == 0
    # 0010 runs before 0008: the listing says why it is not sorted.
    assert "0007, 0010, 0008, 0011" in migrated.out
    assert "(in the order they run: see docs/storage.md, Revisions)" in migrated.out
