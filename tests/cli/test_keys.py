"""`memorybank keys create|add|remove|rotate` and `memorybank encrypt`, end to end on an embedded database."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from adapters_crypto import load_key_ring
from tests.cli.conftest import Run
from tests.cli.test_search_commands import ORG, USER, write_lines

CANARY = "zqxclicanary"


def _import(run: Run, db_url: str, tmp_path: Path, *extra: str, count: int = 3) -> None:
    lines = [{"user_id": USER, "org_id": ORG, "content": f"{CANARY} memory {n}"} for n in range(count)]
    source = write_lines(tmp_path / f"in{len(extra)}.jsonl", *lines)
    assert run("import", str(source), "--db", db_url, *extra).status == 0


def _file_bytes(tmp_path: Path) -> bytes:
    return b"".join(path.read_bytes() for path in tmp_path.glob("bank.sqlite3*"))


def test_keys_create_writes_a_private_ring_and_says_how_to_keep_it(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "keys.json"

    created = run("keys", "create", "--out", str(path))

    assert created.status == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ring = load_key_ring(path)
    assert ring.primary in created.out
    assert "lose" not in created.out or "cannot be read" in created.out
    assert "Keep a copy" in created.out
    assert f"--key-file {path}" in created.out
    assert json.loads(path.read_text())["keys"][ring.primary] not in created.out


def test_keys_create_never_overwrites(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(path)).status == 0
    before = path.read_text()

    again = run("keys", "create", "--out", str(path))

    assert again.status == 1
    assert "never overwritten" in again.err
    assert path.read_text() == before


def test_encrypt_needs_a_key_ring(run: Run, db_url: str) -> None:
    refused = run("encrypt", "--db", db_url)

    assert refused.status == 2
    assert "keys create" in refused.err


def test_encrypt_seals_an_existing_database_and_then_it_needs_its_key(run: Run, db_url: str, tmp_path: Path) -> None:
    _import(run, db_url, tmp_path)
    assert CANARY.encode() in _file_bytes(tmp_path)
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0

    sealed = run("encrypt", "--db", db_url, "--key-file", str(keys))

    assert sealed.status == 0, sealed.err
    assert "sealed 3 memories" in sealed.out
    assert "all 3 memories sealed" in sealed.out
    assert CANARY.encode() not in _file_bytes(tmp_path)
    key_id = load_key_ring(keys).primary
    without = run("export", "--user", USER, "--db", db_url)
    assert without.status == 1
    assert f"holds sealed memories (key ids seen: {key_id})" in without.err
    other = tmp_path / "other.json"
    assert run("keys", "create", "--out", str(other)).status == 0
    wrong = run("export", "--user", USER, "--db", db_url, "--key-file", str(other))
    assert wrong.status == 1
    assert f"the configured key ring does not open this database (key ids seen: {key_id}" in wrong.err
    exported = run("export", "--user", USER, "--db", db_url, "--key-file", str(keys))
    assert exported.status == 0
    assert exported.out.count(CANARY) == 3  # export writes plaintext: it is the person's own data


def test_the_key_ring_can_come_from_the_environment(run: Run, db_url: str, tmp_path: Path, env: dict[str, str]) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    env["MEMORYBANK_KEYS"] = keys.read_text()
    _import(run, db_url, tmp_path)
    assert CANARY.encode() not in _file_bytes(tmp_path)

    del env["MEMORYBANK_KEYS"]
    env["MEMORYBANK_KEY_FILE"] = str(keys)
    assert run("export", "--user", USER, "--db", db_url).out.count(CANARY) == 3


def test_a_malformed_key_ring_is_a_clear_error(run: Run, db_url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a ring"}')
    bad.chmod(0o600)

    refused = run("migrate", "--db", db_url, "--key-file", str(bad))

    assert refused.status == 2
    assert "not a memorybank key ring" in refused.err


def test_migrate_says_which_mode_the_database_is_in(run: Run, db_url: str, tmp_path: Path) -> None:
    plain = run("migrate", "--db", db_url)
    assert "plaintext" in plain.out
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0

    sealed = run("migrate", "--db", db_url, "--key-file", str(keys))

    assert f"sealed at rest with key {load_key_ring(keys).primary}" in sealed.out


def test_add_rotate_and_remove_a_key(run: Run, db_url: str, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    old = load_key_ring(keys).primary
    _import(run, db_url, tmp_path, "--key-file", str(keys))

    added = run("keys", "add", "--new-index", "--key-file", str(keys))
    assert added.status == 0
    new = load_key_ring(keys).primary
    assert new != old
    assert "keys rotate" in added.out
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    early = run("keys", "remove", new, "--key-file", str(keys))
    assert early.status == 2  # the primary key cannot be removed

    rotated = run("keys", "rotate", "--db", db_url, "--key-file", str(keys))

    assert rotated.status == 0, rotated.err
    assert "re-sealed 3 memories" in rotated.out
    assert f"key {old} is no longer used by this database" in rotated.out
    assert run("keys", "remove", old, "--key-file", str(keys)).status == 0
    assert set(load_key_ring(keys).keys) == {new}
    assert run("export", "--user", USER, "--db", db_url, "--key-file", str(keys)).out.count(CANARY) == 3


def test_migrate_of_a_sharded_deployment_with_a_key_ring_is_refused_before_touching_anything(
    run: Run, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    # Nothing listens on port 9: a refusal that connected first would say so instead.
    nodes = "mysql://u@127.0.0.1:9/a,mysql://u@127.0.0.1:9/b"

    refused = run("migrate", "--db", "mysql://u@127.0.0.1:9/head", "--shards", nodes, "--key-file", str(keys))

    assert refused.status == 2
    assert "not supported on a sharded (Spider) deployment" in refused.err
    assert "docs/security.md" in refused.err


def test_removing_the_index_key_says_to_move_it_with_new_index(run: Run, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    run("keys", "create", "--out", str(keys))
    old = load_key_ring(keys).primary
    run("keys", "add", "--key-file", str(keys))  # a plain add keeps the old key as the index key

    refused = run("keys", "remove", old, "--key-file", str(keys))

    assert refused.status == 2
    assert "still the index key" in refused.err
    assert "memorybank keys add --new-index" in refused.err
    assert old in load_key_ring(keys).keys
