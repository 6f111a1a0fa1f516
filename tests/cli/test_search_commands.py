"""`memorybank import`, `export` and `reindex`; the search options."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_mysql.schema import memory
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.cli.conftest import Run
from tests.conftest import User

USER, ORG = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)


def write_lines(path: Path, *lines: object) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_import_then_export_round_trips_through_the_command(run: Run, db_url: str, tmp_path: Path) -> None:
    source = write_lines(
        tmp_path / "in.jsonl",
        {"user_id": USER, "org_id": ORG, "content": "deploys nightly", "tags": ["infra"]},
        {"user_id": USER, "org_id": ORG, "content": "東京 ramen", "contexts": [{"snippet": "lunch"}]},
    )
    imported = run("import", str(source), "--db", db_url)
    assert (imported.status, imported.out.strip()) == (0, "memorybank: imported 2 memories, skipped 0 lines")
    first = run("export", "--user", USER, "--db", db_url)
    assert first.status == 0
    assert len(first.out.splitlines()) == 2
    assert "exported 2 memories" in first.err
    # Export -> import into another database -> export again: the same lines.
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    exported = tmp_path / "out.jsonl"
    assert run("export", "--user", USER, "--db", db_url, "--out", str(exported)).status == 0
    assert exported.read_text() == first.out
    assert run("import", str(exported), "--db", other).status == 0
    assert run("export", "--user", USER, "--db", other).out == first.out


def test_a_team_banks_export_imports_back_with_its_authors_and_apart_from_its_members_own(
    run: Run, db_url: str, tmp_path: Path
) -> None:
    source = write_lines(
        tmp_path / "in.jsonl",
        {"scope": "org", "org_id": ORG, "author": USER, "content": "the staging database lives in eu-west-1"},
        {"user_id": USER, "org_id": ORG, "content": "my own note"},
    )
    assert run("import", str(source), "--db", db_url).status == 0
    team = run("export", "--org", ORG, "--db", db_url)
    own = run("export", "--user", USER, "--db", db_url)
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    exported = tmp_path / "team.jsonl"
    assert run("export", "--org", ORG, "--db", db_url, "--out", str(exported)).status == 0
    assert run("import", str(exported), "--db", other).status == 0

    assert team.status == 0
    assert f"exported 1 memory of the team bank of {ORG}" in team.err
    (line,) = [json.loads(text) for text in team.out.splitlines()]
    assert (line["scope"], line["author"], line["content"]) == ("org", USER, "the staging database lives in eu-west-1")
    assert [json.loads(text)["content"] for text in own.out.splitlines()] == ["my own note"]
    assert run("export", "--org", ORG, "--db", other).out == team.out
    assert run("export", "--user", USER, "--db", other).out == ""


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--org", USER], "--org must be a TypeID of the form org_"),
        (["--org", ORG, "--user", USER], "argument --user: not allowed with argument --org"),
        ([], "one of the arguments --user --org is required"),
    ],
)
def test_export_refuses_a_malformed_or_ambiguous_owner_before_touching_the_database(
    run: Run, argv: list[str], reason: str
) -> None:
    outcome = run("export", *argv, "--db", "mysql://nobody@127.0.0.1:1/none")
    assert outcome.status == 2
    assert reason in outcome.err


def test_import_reports_bad_lines_by_number_and_fails(run: Run, db_url: str, tmp_path: Path) -> None:
    source = write_lines(
        tmp_path / "in.jsonl",
        {"user_id": USER, "org_id": ORG, "content": "fine"},
        "{broken",
        {"user_id": "nobody", "org_id": ORG, "content": "secret text never echoed"},
    )
    outcome = run("import", str(source), "--db", db_url)
    assert outcome.status == 1
    assert "imported 1 memory, skipped 2 lines" in outcome.out
    assert "skipped line 2: line must be one JSON object" in outcome.err
    assert "skipped line 3: user_id must be a TypeID" in outcome.err
    assert "secret text" not in outcome.err


def test_import_of_a_missing_file_is_bad_input(run: Run, db_url: str, tmp_path: Path) -> None:
    outcome = run("import", str(tmp_path / "nope.jsonl"), "--db", db_url)
    assert outcome.status == 2
    assert "is not a readable file" in outcome.err


def test_export_refuses_a_malformed_user_before_touching_the_database(run: Run) -> None:
    outcome = run("export", "--user", "alice", "--db", "mysql://nobody@127.0.0.1:1/none")
    assert outcome.status == 2
    assert "--user must be a TypeID" in outcome.err


def test_reindex_rewrites_stale_memories(run: Run, db_url: str, tmp_path: Path) -> None:
    source = write_lines(tmp_path / "in.jsonl", {"user_id": USER, "org_id": ORG, "content": "kettle"})
    assert run("import", str(source), "--db", db_url).status == 0
    engine = sa.create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(memory.update().values(search_version=0))
    engine.dispose()
    assert run("reindex", "--db", db_url).out.strip() == "memorybank: re-indexed 1 memory"
    assert run("reindex", "--db", db_url).out.strip() == "memorybank: re-indexed 0 memories"
    assert run("reindex", "--all", "--db", db_url).out.strip() == "memorybank: re-indexed 1 memory"


def test_compact_says_how_many_memories_the_index_holds_and_refuses_an_unreachable_database(
    run: Run, db_url: str, tmp_path: Path
) -> None:
    lines = [{"user_id": USER, "org_id": ORG, "content": f"kettle {n}"} for n in range(3)]
    source = write_lines(tmp_path / "in.jsonl", *lines)
    assert run("import", str(source), "--db", db_url).status == 0

    compacted = run("compact", "--db", db_url)
    unreachable = run("compact", "--db", "mysql://nobody@127.0.0.1:1/none")

    assert compacted.status == 0, compacted.err
    assert re.fullmatch(r"memorybank: compacted the search index of 3 memories in \d+\.\d s\n", compacted.out)
    assert unreachable.status == 1
    assert unreachable.err.startswith("memorybank: error: ")
    assert "Traceback" not in unreachable.err


def test_the_search_option_and_environment_variable_are_gone(run: Run, db_url: str, env: dict[str, str]) -> None:
    # The seed-literal engines left production: there is nothing left to choose.
    outcome = run("reindex", "--db", db_url, "--search", "fulltext")
    assert outcome.status == 2
    assert "unrecognized arguments: --search" in outcome.err
    # MEMORYBANK_SEARCH came back for hybrid search: every command resolves it, and refuses nonsense in one line.
    env["MEMORYBANK_SEARCH"] = "nonsense"
    refused = run("reindex", "--db", db_url)
    assert refused.status == 2
    assert refused.err == "memorybank: error: $MEMORYBANK_SEARCH must be lexical or hybrid, not 'nonsense'\n"
    env["MEMORYBANK_SEARCH"] = "lexical"
    assert run("reindex", "--db", db_url).status == 0


# The last case: the option beats its variable, and it is the option's value that is refused.
@pytest.mark.parametrize(
    ("option", "variable", "given"), [("1.5", None, "1.5"), (None, "high", "high"), ("2", "0.3", "2")]
)
def test_a_similarity_floor_outside_0_to_1_stops_serve_and_mcp_in_one_line(
    run: Run, db_url: str, env: dict[str, str], option: str | None, variable: str | None, given: str
) -> None:
    if variable is not None:
        env["MEMORYBANK_HYBRID_MIN_SIMILARITY"] = variable
    flag = ["--hybrid-min-similarity", option] if option is not None else []
    commands = [
        ["serve", "--db", db_url, "--search", "hybrid", *flag],
        ["mcp", "--db", db_url, "--user", User().user_id, "--org", User().organization_id, *flag],
    ]
    for command in commands:
        outcome = run(*command)

        assert (outcome.status, outcome.out) == (2, "")
        # The error names where the refused value came from.
        where = "--hybrid-min-similarity" if option is not None else "$MEMORYBANK_HYBRID_MIN_SIMILARITY"
        assert outcome.err == f"memorybank: error: {where} must be a number from 0 to 1, such as 0.15, not '{given}'\n"
    assert not Path(db_url.removeprefix("sqlite:///")).exists()


def test_serve_and_mcp_offer_the_similarity_floor(run: Run) -> None:
    for command in ("serve", "mcp"):
        assert "--hybrid-min-similarity COSINE" in run(command, "--help").out
