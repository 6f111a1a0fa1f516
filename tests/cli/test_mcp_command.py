"""`memorybank mcp` and `memorybank prompt`; the rail itself is driven end to end in tests/evals."""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
import pytest
from mcp import Client

from adapters_mcp import MEMORY_BANK_PROMPT
from memorybank import bootstrap
from memorybank.cli import build_parser
from memorybank.settings import Settings
from memorybank_core import SaveRequest
from memorybank_core.distribution import install_command
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.cli.conftest import Run
from tests.conftest import User


def test_prompt_prints_the_memory_bank_section_exactly(run: Run) -> None:
    outcome = run("prompt")

    assert outcome.status == 0
    assert outcome.out == MEMORY_BANK_PROMPT
    assert outcome.err == ""


def test_mcp_needs_a_user_and_an_organization(run: Run) -> None:
    outcome = run("mcp", "--org", new_id(ORGANIZATION_PREFIX))

    assert outcome.status == 2
    assert "--user" in outcome.err
    assert outcome.out == ""


# Fixed ids, not new_id(): parameter ids must be the same in every collection (pytest-xdist workers).
@pytest.mark.parametrize(
    ("user", "org", "named"),
    [
        ("alice", "org_01m8x6adcre6rrj9b4p4ykymky", "--user"),
        ("usr_01m8x6adcre6rrj9b4paysnzyy", "usr_01m8x6adcre6rrj9b4pe3xzk4a", "--org"),
    ],
)
def test_mcp_refuses_malformed_ids_in_one_line_before_touching_the_database(
    run: Run, db_url: str, user: str, org: str, named: str
) -> None:
    outcome = run("mcp", "--db", "mysql://nobody@127.0.0.1:1/none", "--user", user, "--org", org)

    assert outcome.status == 2
    assert outcome.err.startswith(f"memorybank: error: {named} ")
    assert outcome.err.count("\n") == 1
    assert outcome.out == ""


def test_mcp_reports_an_unreachable_database_in_one_line_on_stderr(run: Run) -> None:
    outcome = run(
        "mcp",
        "--db",
        "mysql+pymysql://u:pw@127.0.0.1:1/x",
        "--user",
        new_id(USER_PREFIX),
        "--org",
        new_id(ORGANIZATION_PREFIX),
    )

    assert outcome.status == 1
    assert outcome.out == ""
    assert "pw" not in outcome.err


def test_serve_and_mcp_are_in_the_help(run: Run) -> None:
    outcome = run("--help")

    assert "mcp" in outcome.out
    assert "prompt" in outcome.out


def test_the_local_rail_writes_and_reads_as_its_one_user_only(db_url: str) -> None:
    me, someone_else = User(), User()
    with bootstrap.build(Settings.for_database(db_url)) as runtime:
        services = runtime.services
        services.bank.save(someone_else, SaveRequest.parse({"content": "not mine"}))
        server = runtime.local_rail(user_id=me.user_id, org_id=me.organization_id)

        async def session() -> tuple[types.CallToolResult, types.CallToolResult]:
            async with Client(server) as client:
                saved = await client.call_tool(
                    "execute_capability", {"name": "postMemory", "body": {"content": "mine"}}
                )
                listed = await client.call_tool("execute_capability", {"name": "getMemory"})
                return saved, listed

        saved, listed = anyio.run(session)
        stored = services.bank.list(me, limit=10, cursor=None).memories

    assert (saved.structured_content or {})["status"] == 201
    assert [m["content"] for m in (listed.structured_content or {})["body"]["memories"]] == ["mine"]
    assert [(m.content, m.org_id) for m in stored] == [("mine", me.organization_id)]


def test_the_local_rail_keeps_the_quota_its_command_line_sets(db_url: str) -> None:
    # `memorybank mcp --quota-memories 1`: the bank group's flags reach the rail's bank, as they reach `serve`'s.
    me = User()
    argv = ["mcp", "--db", db_url, "--user", me.user_id, "--org", me.organization_id, "--quota-memories", "1"]
    settings = Settings.resolve(build_parser({}).parse_args(argv), {})
    with bootstrap.build(settings) as runtime:
        server = runtime.local_rail(user_id=me.user_id, org_id=me.organization_id)

        async def two_saves() -> list[dict[str, object]]:
            async with Client(server) as client:
                saves = [
                    await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": text}})
                    for text in ("the first", "one too many")
                ]
            return [saved.structured_content or {} for saved in saves]

        first, second = anyio.run(two_saves)

    assert settings.bank.quota_memories == 1
    assert first["status"] == 201
    assert (second["status"], second["body"]["error"]) == (403, "quota_exceeded")  # type: ignore[index]


@pytest.fixture
def without_the_mcp_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """As after `pip install 'memorybank[sql,http]'`: importing the MCP facade fails on `mcp`."""
    for name in [n for n in sys.modules if n == "adapters_mcp" or n.startswith("adapters_mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.usefixtures("without_the_mcp_sdk")
def test_serve_without_the_mcp_extra_serves_rest_alone_and_says_so(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with bootstrap.build(Settings.for_database(db_url)) as runtime:
        app = runtime.web_app()

    paths = {getattr(route, "path", None) for route in app.routes}
    assert "/v1/memory" in paths
    assert "/mcp" not in paths
    assert install_command("mcp") in caplog.text


@pytest.mark.usefixtures("without_the_mcp_sdk")
def test_the_rail_command_without_the_mcp_extra_names_the_install_in_one_line(run: Run) -> None:
    outcome = run("mcp", "--user", "usr_x", "--org", "org_x")

    assert outcome.status == 1
    assert outcome.err == f"memorybank: error: this command needs the MCP SDK: {install_command('mcp')}\n"
    assert outcome.out == ""


@pytest.mark.usefixtures("without_the_mcp_sdk")
def test_prompt_needs_no_mcp_sdk(run: Run) -> None:
    outcome = run("prompt")

    assert outcome.status == 0
    assert outcome.out == MEMORY_BANK_PROMPT
