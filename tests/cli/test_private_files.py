"""Files that hold secrets are their owner's alone: the embedded database, exports, key rings (docs/security.md)."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

import pytest

from adapters_crypto import loose_permissions
from tests.cli.conftest import Run
from tests.cli.test_search_commands import ORG, USER, write_lines


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _data_directory(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".local/share/memorybank"


def test_the_embedded_database_and_its_directory_are_private(run: Run, env: dict[str, str]) -> None:
    assert run("token", "create").status == 0

    directory = _data_directory(env)
    assert _mode(directory) == 0o700
    files = sorted(directory.glob("memorybank.sqlite3*"))
    assert directory / "memorybank.sqlite3" in files
    assert {path.name: _mode(path) for path in files} == {path.name: 0o600 for path in files}


def test_an_embedded_database_an_earlier_version_left_readable_is_made_private(run: Run, env: dict[str, str]) -> None:
    assert run("token", "create").status == 0
    directory = _data_directory(env)
    directory.chmod(0o755)
    (directory / "memorybank.sqlite3").chmod(0o644)

    assert run("token", "list").status == 0

    assert (_mode(directory), _mode(directory / "memorybank.sqlite3")) == (0o700, 0o600)


def test_a_sqlite_file_named_with_db_is_created_private(run: Run, db_url: str, tmp_path: Path) -> None:
    assert run("token", "create", "--db", db_url).status == 0

    assert _mode(tmp_path / "bank.sqlite3") == 0o600
    # SQLite gives its -wal and -shm files the database file's mode; written while a connection is open.
    with sqlite3.connect(tmp_path / "bank.sqlite3") as connection:
        connection.execute("CREATE TABLE probe (x)")
        assert _mode(tmp_path / "bank.sqlite3-wal") == 0o600
        assert _mode(tmp_path / "bank.sqlite3-shm") == 0o600


def _import_one(run: Run, db_url: str, tmp_path: Path) -> None:
    source = write_lines(tmp_path / "in.jsonl", {"user_id": USER, "org_id": ORG, "content": "private words"})
    assert run("import", str(source), "--db", db_url).status == 0


def test_export_out_writes_a_private_file(run: Run, db_url: str, tmp_path: Path) -> None:
    _import_one(run, db_url, tmp_path)
    out = tmp_path / "export.jsonl"

    assert run("export", "--user", USER, "--db", db_url, "--out", str(out)).status == 0

    assert _mode(out) == 0o600
    assert json.loads(out.read_text())["content"] == "private words"


def test_export_out_never_overwrites_a_file_without_force(run: Run, db_url: str, tmp_path: Path) -> None:
    _import_one(run, db_url, tmp_path)
    out = tmp_path / "export.jsonl"
    out.write_text("someone's notes\n")

    refused = run("export", "--user", USER, "--db", db_url, "--out", str(out))

    assert refused.status == 2
    assert f"{out} exists already" in refused.err
    assert "--force" in refused.err
    assert out.read_text() == "someone's notes\n"


def test_export_out_force_replaces_the_file_with_a_private_one(run: Run, db_url: str, tmp_path: Path) -> None:
    _import_one(run, db_url, tmp_path)
    out = tmp_path / "export.jsonl"
    out.write_text("an older export\n")
    out.chmod(0o644)

    assert run("export", "--user", USER, "--db", db_url, "--out", str(out), "--force").status == 0

    assert _mode(out) == 0o600
    assert json.loads(out.read_text())["content"] == "private words"
    assert sorted(path.name for path in tmp_path.glob("*export*")) == ["export.jsonl"]


@pytest.mark.parametrize("mode", [0o644, 0o604, 0o660, 0o620])
def test_a_key_file_others_may_read_or_change_is_refused_at_start(
    run: Run, db_url: str, tmp_path: Path, mode: int
) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    keys.chmod(mode)

    refused = run("token", "create", "--db", db_url, "--key-file", str(keys))

    assert refused.status == 2
    assert f"may be read or changed by other users (mode {mode:04o})" in refused.err
    assert f"chmod 600 {keys}" in refused.err
    assert not (tmp_path / "bank.sqlite3").exists()


def test_a_private_key_file_is_accepted(run: Run, db_url: str, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    keys.chmod(0o400)

    assert run("token", "create", "--db", db_url, "--key-file", str(keys)).status == 0


@pytest.mark.parametrize(
    ("mode", "owner", "loose"),
    [
        (0o600, 1000, False),
        (0o400, 1000, False),
        (0o640, 1000, True),
        (0o640, 0, False),  # a secret mounted for a group, owned by root (as PostgreSQL allows)
        (0o440, 0, False),
        (0o660, 0, True),
        (0o644, 0, True),
        (0o601, 1000, True),
    ],
)
def test_which_key_file_modes_are_too_loose(mode: int, owner: int, loose: bool) -> None:
    assert loose_permissions(mode, owner) is loose


def test_keys_create_by_default_writes_to_the_config_directory_apart_from_the_database(
    run: Run, env: dict[str, str]
) -> None:
    created = run("keys", "create")

    assert created.status == 0
    config = Path(env["HOME"]) / ".config/memorybank"
    assert _mode(config / "keys.json") == 0o600
    assert _mode(config) == 0o700
    assert not _data_directory(env).exists()
    assert f"wrote key ring {config / 'keys.json'}" in created.out
    assert f"apart from the embedded database's {_data_directory(env)}" in created.out


def test_keys_create_follows_xdg_config_home(run: Run, env: dict[str, str], tmp_path: Path) -> None:
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")

    assert run("keys", "create").status == 0

    assert (tmp_path / "config/memorybank/keys.json").is_file()
