"""The secret screen on the command line: `import` reports (and skips or refuses) lines holding credentials,
`secrets scan` finds stored ones (sealed too) by kind, memory and owner, and `serve` says whether it screens."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client

from benchmarks.adversarial import filling
from harness.secret_cases import harmless, secrets
from harness.served import run_memorybank, served
from memorybank import bootstrap, secret_settings
from memorybank.commands.base import CommandError
from memorybank.commands.secrets import scan
from memorybank.composition import Ports
from memorybank.settings import Settings
from memorybank_core import EditRequest, InMemoryStore, SaveRequest
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.cli.conftest import Outcome, Run
from tests.cli.test_search_commands import ORG, USER, write_lines
from tests.conftest import User
from tests.rail_users import create_database, new_user

OTHER_USER, OTHER_ORG = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)


def _source(tmp_path: Path) -> Path:
    """Every harmless memory, then every credential (the other user's), then a line that is not JSON."""
    lines: list[object] = [{"user_id": USER, "org_id": ORG, "content": case.text} for case in harmless()]
    lines += [{"user_id": OTHER_USER, "org_id": OTHER_ORG, "content": case.text} for case in secrets()]
    return write_lines(tmp_path / "in.jsonl", *lines, "{broken")


def _no_secret_in(outcome: Outcome) -> None:
    for case in secrets():
        assert case.secret not in outcome.out
        assert case.secret not in outcome.err


def _exported(run: Run, db_url: str, user: str, *extra: str) -> list[str]:
    outcome = run("export", "--user", user, "--db", db_url, *extra)
    assert outcome.status == 0, outcome.err
    return outcome.out.splitlines()


def test_import_skips_lines_with_credentials_reports_them_and_imports_the_rest(
    run: Run, db_url: str, tmp_path: Path
) -> None:
    outcome = run("import", str(_source(tmp_path)), "--db", db_url)

    assert outcome.status == 1
    first_secret_line = len(harmless()) + 1
    for offset, case in enumerate(secrets()):
        reported = [line for line in outcome.err.splitlines() if f"line {first_secret_line + offset} (" in line]
        assert len(reported) == 1, case.name
        assert f"owner {OTHER_USER}" in reported[0]
        assert case.kind is not None
        assert case.kind in reported[0]
    assert f"{len(secrets())} lines hold what looks like credentials (" in outcome.out
    assert "private_key 4" in outcome.out
    # Every line left out is counted once: the summary and the exit line say the same number.
    left_out = 1 + len(secrets())
    assert (
        f"imported {len(harmless())} memories, skipped {left_out} lines (1 unreadable, {len(secrets())} holding "
        "credentials)" in outcome.out
    )
    assert outcome.err.endswith(f"memorybank: error: skipped {left_out} lines (listed above)\n")
    _no_secret_in(outcome)
    assert len(_exported(run, db_url, USER)) == len(harmless())
    assert _exported(run, db_url, OTHER_USER) == []


def test_import_with_on_secret_refuse_imports_nothing_and_prints_the_report(
    run: Run, db_url: str, tmp_path: Path
) -> None:
    outcome = run("import", str(_source(tmp_path)), "--db", db_url, "--on-secret", "refuse")

    assert outcome.status == 1
    assert "refused the whole import: nothing was imported" in outcome.out
    assert f"{len(secrets())} lines hold credentials (listed above): nothing was imported" in outcome.err
    _no_secret_in(outcome)
    assert _exported(run, db_url, USER) == []


def test_import_of_clean_lines_with_on_secret_refuse_imports_them(run: Run, db_url: str, tmp_path: Path) -> None:
    source = write_lines(
        tmp_path / "clean.jsonl", *({"user_id": USER, "org_id": ORG, "content": c.text} for c in harmless())
    )

    outcome = run("import", str(source), "--db", db_url, "--on-secret", "refuse")

    assert (outcome.status, outcome.out.strip()) == (
        0,
        f"memorybank: imported {len(harmless())} memories, skipped 0 lines",
    )


@pytest.mark.parametrize("how", ["option", "environment"])
def test_an_operator_can_import_credentials_with_the_screen_off(
    run: Run, db_url: str, tmp_path: Path, env: dict[str, str], how: str
) -> None:
    extra = ["--secret-screen", "off"] if how == "option" else []
    if how == "environment":
        env["MEMORYBANK_SECRET_SCREEN"] = "off"

    outcome = run("import", str(_source(tmp_path)), "--db", db_url, *extra)

    assert f"imported {len(harmless()) + len(secrets())} memories, skipped 1 line" in outcome.out
    assert len(_exported(run, db_url, OTHER_USER)) == len(secrets())


def test_a_bad_screen_setting_is_refused_in_one_line(
    run: Run, db_url: str, tmp_path: Path, env: dict[str, str]
) -> None:
    env["MEMORYBANK_SECRET_SCREEN"] = "warn"

    outcome = run("import", str(_source(tmp_path)), "--db", db_url)

    assert outcome.status == 2
    assert outcome.err == "memorybank: error: $MEMORYBANK_SECRET_SCREEN must be refuse or off, not 'warn'\n"


def test_secrets_scan_lists_kind_memory_and_owner_and_never_the_secret(run: Run, db_url: str, tmp_path: Path) -> None:
    assert run("import", str(_source(tmp_path)), "--db", db_url, "--secret-screen", "off").status == 1
    stored = {line.split('"id":"')[1].split('"')[0] for line in _exported(run, db_url, OTHER_USER)}

    outcome = run("secrets", "scan", "--db", db_url)

    assert outcome.status == 1
    rows = [line.split("\t") for line in outcome.out.splitlines()]
    assert {row[1] for row in rows} == stored
    assert {row[2] for row in rows} == {OTHER_USER}
    assert {row[0] for row in rows} >= {case.kind for case in secrets()}
    assert all(row[3].split(":")[0] == "content" for row in rows)
    assert f"{len(secrets())} memories of 2 owners hold what looks like credentials" in outcome.err
    _no_secret_in(outcome)


def test_secrets_scan_of_a_clean_database_finds_nothing(run: Run, db_url: str, tmp_path: Path) -> None:
    source = write_lines(
        tmp_path / "clean.jsonl", *({"user_id": USER, "org_id": ORG, "content": c.text} for c in harmless())
    )
    assert run("import", str(source), "--db", db_url).status == 0

    outcome = run("secrets", "scan", "--db", db_url)

    assert (outcome.status, outcome.out) == (0, "")
    assert "no credentials found in the memories of 1 owner (their earlier versions included)\n" in outcome.err


def test_secrets_scan_opens_a_sealed_database_through_its_key_ring(run: Run, db_url: str, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    aws = secrets()[0]
    source = write_lines(tmp_path / "one.jsonl", {"user_id": USER, "org_id": ORG, "content": aws.text})
    assert run("import", str(source), "--db", db_url, "--key-file", str(keys), "--secret-screen", "off").status == 0
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("bank.sqlite3*"))
    assert aws.secret.encode() not in stored  # sealed: the scan must open it to find it

    without_key = run("secrets", "scan", "--db", db_url)
    found = run("secrets", "scan", "--db", db_url, "--key-file", str(keys))

    assert without_key.status == 1
    assert "key" in without_key.err
    assert found.status == 1
    (row,) = [line.split("\t") for line in found.out.splitlines()]
    assert (row[0], row[2]) == ("aws_access_key", USER)
    assert aws.secret not in found.out + found.err


def test_secrets_scan_finds_a_credential_an_edit_left_in_a_sealed_history_and_drops_that_version(
    run: Run, db_url: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.json"
    assert run("keys", "create", "--out", str(keys)).status == 0
    aws = secrets()[0]
    memory_id = new_id("mem")
    history = {
        "format": 2,
        "id": memory_id,
        "user_id": USER,
        "org_id": ORG,
        "content": "the deploy key is in the vault",
        "revision": 3,
        "revisions": [
            {"revision": 2, "content": "the deploy key is in the vault now"},
            {"revision": 1, "content": aws.text},
        ],
    }
    source = write_lines(tmp_path / "history.jsonl", history)
    sealed = ("--db", db_url, "--key-file", str(keys))
    assert run("import", str(source), *sealed, "--secret-screen", "off").status == 0
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("bank.sqlite3*"))
    assert aws.secret.encode() not in stored  # the kept version is sealed too: the scan must open it

    found = run("secrets", "scan", *sealed)
    dropped = run("secrets", "scan", *sealed, "--drop-revisions")
    again = run("secrets", "scan", *sealed)

    assert found.status == 1
    (row,) = [line.split("\t") for line in found.out.splitlines()]
    assert (row[0], row[1], row[2], row[4]) == ("aws_access_key", memory_id, USER, "revision 1")
    assert row[3].startswith("content:")
    assert (
        "1 earlier version of 1 memory holds what looks like credentials (aws_access_key 1); --drop-revisions "
        "deletes those earlier versions\n"
    ) in found.err
    assert (dropped.status, dropped.out) == (0, found.out)
    assert "deleted 1 earlier version of 1 memory that held what looks like credentials" in dropped.err
    assert (again.status, again.out) == (0, "")
    (line,) = [json.loads(text) for text in _exported(run, db_url, USER, "--key-file", str(keys))]
    assert (line["content"], line["revision"]) == ("the deploy key is in the vault", 3)
    assert [version["revision"] for version in line["revisions"]] == [2]
    for outcome in (found, dropped, again):
        assert aws.secret not in outcome.out + outcome.err


def test_secrets_scan_leaves_memories_as_they_are_now_to_their_owners(run: Run, db_url: str, tmp_path: Path) -> None:
    aws = secrets()[0]
    source = write_lines(tmp_path / "one.jsonl", {"user_id": USER, "org_id": ORG, "content": aws.text})
    assert run("import", str(source), "--db", db_url, "--secret-screen", "off").status == 0

    outcome = run("secrets", "scan", "--db", db_url, "--drop-revisions")

    assert outcome.status == 1
    (row,) = [line.split("\t") for line in outcome.out.splitlines()]
    assert row[4] == "current"
    assert "1 memory of 1 owner holds what looks like credentials (aws_access_key 1)" in outcome.err
    assert len(_exported(run, db_url, USER)) == 1


def test_the_scan_and_its_drop_run_over_a_hosts_own_ports(capsys: pytest.CaptureFixture[str]) -> None:
    store = InMemoryStore()
    unscreened = Settings.for_database("sqlite://", secret_screen=secret_settings.OFF)
    bank = bootstrap.build(unscreened, ports=Ports.in_memory(store)).services.bank
    alice, aws = User(), secrets()[0]
    edited = bank.save(alice, SaveRequest.parse({"content": aws.text})).id
    bank.edit(alice, memory_id=edited, request=EditRequest.parse({"content": "the key is in the vault"}))
    screen = secret_settings.build_secret_screen(secret_settings.REFUSE)
    assert screen is not None
    out = io.StringIO()

    with pytest.raises(CommandError):
        scan(store, store, screen, out)
    scan(store, store, screen, io.StringIO(), eraser=store)

    (row,) = [line.split("\t") for line in out.getvalue().splitlines()]
    assert (row[1], row[2], row[4]) == (edited, alice.user_id, "revision 1")
    assert [m.revision for m in bank.revisions(alice, memory_id=edited).revisions] == [2]
    scan(store, store, screen, io.StringIO())  # nothing left: no error
    assert aws.secret not in out.getvalue() + capsys.readouterr().err


def test_serve_screens_saves_and_says_so(tmp_path: Path) -> None:
    db_url = create_database(tmp_path)
    user = new_user(db_url)
    log = tmp_path / "serve.log"
    case = secrets()[0]

    with served(db_url, log=log) as url:
        refused = httpx2.post(
            f"{url}/v1/memory", json={"content": case.text}, headers={"Authorization": f"Bearer {user.secret}"}
        )

    assert refused.status_code == 422
    assert refused.json()["error"] == "secret_detected"
    text = log.read_text()
    assert "secret screen on: saves holding credentials are refused" in text
    assert "memory.secret_refused" in text
    assert case.secret not in text


@pytest.mark.parametrize("how", ["option", "environment"])
def test_serve_with_the_screen_off_saves_credentials_and_says_so_at_start(tmp_path: Path, how: str) -> None:
    db_url = create_database(tmp_path)
    user = new_user(db_url)
    log = tmp_path / "serve.log"
    args = ["--secret-screen", "off"] if how == "option" else []
    env = {"MEMORYBANK_SECRET_SCREEN": "off"} if how == "environment" else {}

    with served(db_url, log=log, args=args, env=env) as url:
        saved = httpx2.post(
            f"{url}/v1/memory", json={"content": secrets()[0].text}, headers={"Authorization": f"Bearer {user.secret}"}
        )

    assert saved.status_code == 201
    assert "secret screen off: saves are not checked for credentials" in log.read_text()


def test_serve_refuses_an_unknown_screen_setting_before_serving(tmp_path: Path) -> None:
    result = run_memorybank(
        ["serve", "--port", "0", "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"],
        env={"MEMORYBANK_SECRET_SCREEN": "maybe"},
    )

    assert result.returncode == 2
    assert result.stderr == "memorybank: error: $MEMORYBANK_SECRET_SCREEN must be refuse or off, not 'maybe'\n"
    assert "serving" not in result.stdout


def test_the_local_rail_refuses_a_credential_with_advice_for_the_agent(db_url: str) -> None:
    me = User()
    case = secrets()[3]
    with bootstrap.build(Settings.resolve({"db": db_url}, {})) as runtime:  # as `memorybank mcp` builds it
        services = runtime.services
        server = runtime.local_rail(user_id=me.user_id, org_id=me.organization_id)

        async def session() -> types.CallToolResult:
            async with Client(server) as client:
                return await client.call_tool(
                    "execute_capability", {"name": "postMemory", "body": {"content": case.text}}
                )

        refused = anyio.run(session)
        stored = services.bank.list(me, limit=10, cursor=None).memories

    assert refused.is_error
    (block,) = refused.content
    assert isinstance(block, types.TextContent)
    # The route's body as it came (compact JSON), then the advice for the agent on its own line.
    assert json.loads(block.text.split("\n")[0])["error"] == "secret_detected"
    assert "save a pointer" in block.text or "1Password under 'prod-aws'" in block.text
    assert case.secret not in block.text
    assert stored == ()


def test_mcp_refuses_an_unknown_screen_setting_before_touching_the_database(run: Run, env: dict[str, str]) -> None:
    env["MEMORYBANK_SECRET_SCREEN"] = "sometimes"

    outcome = run("mcp", "--db", "mysql+pymysql://u:pw@127.0.0.1:1/x", "--user", USER, "--org", ORG)

    assert outcome.status == 2
    assert outcome.err == "memorybank: error: $MEMORYBANK_SECRET_SCREEN must be refuse or off, not 'sometimes'\n"


def test_import_leaves_out_issue_27s_costly_line_as_unscreened_and_imports_the_rest(
    run: Run, db_url: str, tmp_path: Path
) -> None:
    costly = filling("pwd=`", "pwd=`").body()
    source = write_lines(
        tmp_path / "costly.jsonl",
        {"user_id": USER, "org_id": ORG, "content": "an ordinary memory"},
        {"user_id": USER, "org_id": ORG, **costly},
    )

    outcome = run("import", str(source), "--db", db_url)

    assert outcome.status == 1
    (reported,) = [line for line in outcome.err.splitlines() if "line 2 (" in line]
    assert "screen_budget_exceeded" in reported
    assert "imported 1 memory, skipped 1 line" in outcome.out
    assert len(_exported(run, db_url, USER)) == 1


def test_secrets_scan_reports_a_stored_memory_too_costly_to_screen(run: Run, db_url: str, tmp_path: Path) -> None:
    source = write_lines(
        tmp_path / "costly.jsonl", {"user_id": USER, "org_id": ORG, **filling("pwd=`", "pwd=`").body()}
    )
    assert run("import", str(source), "--db", db_url, "--secret-screen", "off").status == 0

    outcome = run("secrets", "scan", "--db", db_url)

    assert outcome.status == 1
    (row,) = [line.split("\t") for line in outcome.out.splitlines()]
    assert (row[0], row[2]) == ("screen_budget_exceeded", USER)


def test_import_skips_a_line_that_names_a_key_twice(run: Run, db_url: str, tmp_path: Path) -> None:
    # A proxy or a reader that takes the first `content` must not see another memory than the one stored.
    source = tmp_path / "twice.jsonl"
    source.write_text(
        f'{{"user_id": "{USER}", "org_id": "{ORG}", "content": "first", "content": "second"}}\n'
        f'{{"user_id": "{USER}", "org_id": "{ORG}", "content": "once"}}\n'
    )

    outcome = run("import", str(source), "--db", db_url)

    assert "imported 1 memory, skipped 1 line" in outcome.out
    assert "same key twice" in outcome.err
    assert ['"once"' in line for line in _exported(run, db_url, USER)] == [True]
