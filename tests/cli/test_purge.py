"""`memorybank purge`: the receipt, the refusals, the dry run, and a real process killed mid-purge, then rerun.

SQLite and MariaDB run the same tests.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from adapters_mysql import SqlStorage
from adapters_mysql.schema import purge_run
from memorybank import bootstrap
from memorybank.bootstrap import Runtime
from memorybank.settings import Settings
from memorybank_core import SaveRequest
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, new_id
from tests.cli.conftest import Run, panel_session_from_token
from tests.conftest import User
from tests.mysql_server import ThrowawayDatabase
from tests.sql.conftest import DIALECTS
from tests.sql.memories import make_memory

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture(params=DIALECTS)
def database(request: pytest.FixtureRequest, tmp_path: Path, run: Run) -> Iterator[str]:
    """The URL of a migrated, empty database of the parametrized dialect."""
    made: ThrowawayDatabase | None = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    else:
        made = ThrowawayDatabase()
        url = made.url
    try:
        migrated = run("migrate", "--db", url)
        assert migrated.status == 0, migrated.err
        yield url
    finally:
        if made is not None:
            made.drop()


def _runtime(url: str, *, serving: bool = False) -> Runtime:
    return bootstrap.build(Settings.for_database(url), serving=serving)


def _storage(url: str) -> SqlStorage:
    return _runtime(url).storage  # closed by the caller, as the runtime opened nothing else


def _fill(url: str, user: User, count: int, *, contexts: int = 1) -> None:
    """`count` memories of `user`, inserted in bulk, each with `contexts` contexts."""
    storage = _storage(url)
    try:
        for start in range(0, count, 1000):
            batch = [
                make_memory(user.user_id, f"note {n}", snippets=("s",) * contexts)
                for n in range(start, min(count, start + 1000))
            ]
            storage.store.add_many(batch)
    finally:
        storage.close()


def _remaining(url: str, user_id: str) -> tuple[int, int]:
    storage = _storage(url)
    try:
        with storage.engine.connect() as connection:
            owner = {"u": user_id}
            memories = connection.execute(sa.text("SELECT COUNT(*) FROM memory WHERE user_id = :u"), owner).scalar()
            contexts = connection.execute(
                sa.text("SELECT COUNT(*) FROM memory_context WHERE user_id = :u"), owner
            ).scalar()
        return int(memories or 0), int(contexts or 0)
    finally:
        storage.close()


def test_a_persons_purge_receipt_counts_the_team_memories_they_wrote_apart_and_keeps_them(
    database: str, run: Run, tmp_path: Path
) -> None:
    alice, bob = User(), User()
    _fill(database, alice, 3)
    team = [
        {"scope": "org", "org_id": alice.organization_id, "author": author, "content": f"team note {n}"}
        for n, author in enumerate([alice.user_id, alice.user_id, bob.user_id])
    ]
    lines = tmp_path / "team.jsonl"
    lines.write_text("".join(json.dumps(line) + "\n" for line in team))
    assert run("import", str(lines), "--db", database).status == 0

    dry = run("purge", "--db", database, "--user", alice.user_id, "--dry-run")
    done = run("purge", "--db", database, "--user", alice.user_id)
    exported = run("export", "--db", database, "--org", alice.organization_id)

    assert done.status == 0, done.err
    assert json.loads(dry.out)["kept"] == json.loads(done.out)["kept"] == {"team_memories": 2}
    assert json.loads(done.out)["removed"]["memories"] == 3
    # Kept, each still naming its author; hers now say she is a former member (the export carries it too).
    assert sorted(
        (line["author"], line["author_former_member"]) for line in map(json.loads, exported.out.splitlines())
    ) == sorted([(alice.user_id, True), (alice.user_id, True), (bob.user_id, False)])
    organization = run("purge", "--db", database, "--org", alice.organization_id)
    assert json.loads(organization.out)["kept"] == {"team_memories": 0}
    # The team bank's three, counted apart from the members' own (none left: alice's went with her purge).
    assert json.loads(organization.out)["removed"]["memories"] == 3
    assert json.loads(organization.out)["removed"]["team_memories"] == 3
    assert run("export", "--db", database, "--org", alice.organization_id).out == ""


def test_purge_prints_the_receipt_and_writes_it_once(database: str, run: Run, tmp_path: Path) -> None:
    alice, bob = User(), User()
    _fill(database, alice, 30)
    _fill(database, bob, 5)
    receipt_file = tmp_path / "receipt.json"

    done = run("purge", "--db", database, "--user", alice.user_id, "--receipt", str(receipt_file))

    assert done.status == 0, done.err
    printed = json.loads(done.out)
    assert printed == json.loads(receipt_file.read_text())
    assert stat.S_IMODE(receipt_file.stat().st_mode) == 0o600  # like every file memorybank writes (issue 27)
    assert printed["subject"] == {"kind": "user", "id": alice.user_id}
    assert printed["removed"] == {"memories": 30, "team_memories": 0, "contexts": 30, "tokens": 0, "panel_sessions": 0}
    assert printed["dry_run"] is False
    assert len(printed["digest"]["value"]) == 64
    assert _remaining(database, alice.user_id) == (0, 0)
    assert _remaining(database, bob.user_id) == (5, 5)
    again = run("purge", "--db", database, "--user", alice.user_id, "--receipt", str(receipt_file))
    assert again.status == 2
    assert "never overwritten" in again.err
    assert json.loads(receipt_file.read_text()) == printed


def test_a_dry_run_prints_counts_and_removes_nothing(database: str, run: Run) -> None:
    alice = User()
    _fill(database, alice, 12, contexts=2)

    done = run("purge", "--db", database, "--user", alice.user_id, "--dry-run")

    assert done.status == 0, done.err
    receipt = json.loads(done.out)
    assert receipt["dry_run"] is True
    assert receipt["run_id"] is None
    assert receipt["removed"]["memories"] == 12
    assert receipt["removed"]["contexts"] == 24
    assert _remaining(database, alice.user_id) == (12, 24)


@pytest.mark.parametrize(
    "argv",
    [
        ["--user", ""],
        ["--user", "%"],
        ["--user", "*"],
        ["--user", "_"],
        ["--user", "usr_%"],
        ["--org", "org_*"],
        ["--org", "usr_01h455vb4pex5vsknk084sn02q"],
        ["--user", "org_01h455vb4pex5vsknk084sn02q"],
        ["--user", "usr_01h455vb4pex5vsknk084sn02q", "--batch-size", "0"],
        ["--user", "usr_01h455vb4pex5vsknk084sn02q", "--batch-size", "100000"],
        ["--user", "usr_01h455vb4pex5vsknk084sn02q", "--pause-ms", "-1"],
        ["--user", "usr_01h455vb4pex5vsknk084sn02q", "--pause-ms", "10001"],
    ],
)
def test_a_bad_id_is_refused_before_the_database_is_even_opened(run: Run, tmp_path: Path, argv: list[str]) -> None:
    never_made = tmp_path / "never" / "bank.sqlite3"

    refused = run("purge", "--db", f"sqlite:///{never_made}", *argv)

    assert refused.status == 2
    assert refused.out == ""
    assert refused.err.startswith("memorybank: error: --")
    assert "Traceback" not in refused.err
    assert not never_made.parent.exists()


def test_purge_needs_exactly_one_subject(run: Run, db_url: str) -> None:
    both = run("purge", "--db", db_url, "--user", "usr_01h455vb4pex5vsknk084sn02q", "--org", "org_x")
    neither = run("purge", "--db", db_url)
    assert (both.status, neither.status) == (2, 2)


def test_an_organization_purge_from_the_command_line(database: str, run: Run) -> None:
    organization = new_id(ORGANIZATION_PREFIX)
    with _runtime(database) as runtime:
        services = runtime.services
        member, outsider = User(organization_id=organization), User()
        for user in (member, outsider):
            services.bank.save(user, SaveRequest.parse({"content": "the harbor", "contexts": [{"snippet": "s"}]}))
            services.tokens.issue(user_id=user.user_id, org_id=user.organization_id)

    done = run("purge", "--db", database, "--org", organization)

    assert done.status == 0, done.err
    receipt = json.loads(done.out)
    assert receipt["subject"] == {"kind": "organization", "id": organization}
    assert receipt["removed"] == {"memories": 1, "team_memories": 0, "contexts": 1, "tokens": 1, "panel_sessions": 0}
    assert _remaining(database, member.user_id) == (0, 0)
    assert _remaining(database, outsider.user_id) == (1, 1)


def test_the_purged_users_token_gets_401_over_http(database: str, run: Run) -> None:
    alice, bob = User(), User()
    runtime = _runtime(database, serving=True)
    services = runtime.services
    secrets = {}
    for user in (alice, bob):
        services.bank.save(user, JsonValue({"content": "the lighthouse keeper"}))
        secrets[user.user_id] = services.tokens.issue(user_id=user.user_id, org_id=user.organization_id).secret
    with TestClient(runtime.app) as client:  # its shutdown closes the runtime

        def status(user: User) -> int:
            headers = {"Authorization": f"Bearer {secrets[user.user_id]}"}
            return client.get("/v1/memory", headers=headers).status_code

        assert (status(alice), status(bob)) == (200, 200)  # both tokens are now in the server's cache

        purged = run("purge", "--db", database, "--user", alice.user_id)

        assert purged.status == 0, purged.err
        assert (status(alice), status(bob)) == (401, 200)

        def search(user: User) -> tuple[int, object]:
            headers = {"Authorization": f"Bearer {secrets[user.user_id]}"}
            found = client.get("/v1/memory/search", params={"q": "lighthouse"}, headers=headers)
            return found.status_code, found.json().get("results")

        assert search(alice) == (401, None)
        status_of_bob, results = search(bob)
        assert status_of_bob == 200
        assert isinstance(results, list)
        assert len(results) == 1


def test_purging_a_user_ends_their_panel_sessions_and_the_receipt_counts_them(database: str, run: Run) -> None:
    alice, bob = User(), User()
    runtime = _runtime(database, serving=True)
    services = runtime.services
    alice_token = services.tokens.issue(user_id=alice.user_id, org_id=alice.organization_id).secret
    bob_token = services.tokens.issue(user_id=bob.user_id, org_id=bob.organization_id).secret
    with TestClient(runtime.app, base_url="http://127.0.0.1:8000") as client:
        alice_panel = panel_session_from_token(client, alice_token)
        bob_panel = panel_session_from_token(client, bob_token)

        purged = run("purge", "--db", database, "--user", alice.user_id)

        assert purged.status == 0, purged.err
        assert json.loads(purged.out)["removed"]["panel_sessions"] == 1
        assert client.get("/v1/memory", headers=alice_panel).status_code == 401
        assert client.post("/v1/memory", json={"content": "x"}, headers=alice_panel).status_code == 401
        assert client.get("/v1/memory", headers=bob_panel).status_code == 200


def _run_row(url: str, user_id: str) -> sa.Row[tuple[int, object]] | None:
    storage = _storage(url)
    try:
        with storage.engine.connect() as connection:
            return connection.execute(
                sa.text("SELECT memories, finished_at FROM purge_run WHERE subject_id = :u"), {"u": user_id}
            ).first()
    finally:
        storage.close()


def test_a_purge_killed_mid_run_finishes_on_rerun_and_counts_the_total(database: str, run: Run, tmp_path: Path) -> None:
    alice, bob = User(), User()
    total = 5_000
    _fill(database, alice, total)
    _fill(database, bob, 10)
    command = [sys.executable, "-m", "memorybank", "purge", "--db", database, "--user", alice.user_id]
    # Small batches paced by the purge's own pause: 500 batches of at least 20 ms each, so the run
    # lasts 10 s or more and is caught between two batches however loaded the machine is. (An earlier
    # version raced the purge for SQLite's write lock; the busy handler's back-off let it finish unseen.)
    log = (tmp_path / "purge.log").open("wb")
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and code
        [*command, "--batch-size", "10", "--pause-ms", "20"],
        cwd=REPOSITORY,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    storage = _storage(database)
    progress = sa.select(purge_run.c.memories, purge_run.c.finished_at).where(purge_run.c.subject_id == alice.user_id)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            with storage.engine.connect() as connection:
                row = connection.execute(progress).first()
            if row is not None and row.memories >= 50:
                assert row.finished_at is None, "the purge finished before it could be killed"
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)
                break
            time.sleep(0.005)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        storage.close()
        log.close()
    assert process.returncode == -signal.SIGKILL

    killed = _run_row(database, alice.user_id)
    assert killed is not None
    assert killed.finished_at is None
    left, _contexts = _remaining(database, alice.user_id)
    assert 0 < left < total
    assert killed.memories == total - left  # the run's record counts exactly what is gone

    rerun = run("purge", "--db", database, "--user", alice.user_id, "--batch-size", "500")

    assert rerun.status == 0, rerun.err
    receipt = json.loads(rerun.out)
    assert receipt["resumed"] is True
    assert receipt["removed"]["memories"] == total
    assert receipt["removed"]["contexts"] == total
    assert _remaining(database, alice.user_id) == (0, 0)
    assert _remaining(database, bob.user_id) == (10, 10)


def test_a_purge_and_a_reindex_name_compact_where_searches_pay_for_what_they_left(database: str, run: Run) -> None:
    # MySQL/MariaDB keep the old full-text entries, and every search pays for them, until the table is rebuilt
    # (ADR 0047); SQLite's commands merge their index themselves, so there is nothing to say.
    alice = User()
    _fill(database, alice, 4)
    hint = "until `memorybank compact`"

    reindexed = run("reindex", "--all", "--db", database)
    purged = run("purge", "--db", database, "--user", alice.user_id)
    dry = run("purge", "--db", database, "--user", alice.user_id, "--dry-run")
    compacted = run("compact", "--db", database)

    assert (reindexed.status, purged.status, dry.status, compacted.status) == (0, 0, 0, 0)
    on_mysql = database.startswith("mysql")
    assert (hint in reindexed.err, hint in purged.err) == (on_mysql, on_mysql)
    assert "old entries of 4 memories" in reindexed.err if on_mysql else reindexed.err == ""
    assert json.loads(purged.out)["removed"]["memories"] == 4  # stdout stays the receipt alone
    assert hint not in dry.err  # nothing deleted, nothing to compact
    assert compacted.out.startswith("memorybank: compacted the search index of 0 memories in ")
