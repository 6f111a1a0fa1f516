"""docs/security.md's list of what the database reveals names every table and column of the schema."""

from __future__ import annotations

import re
from pathlib import Path

from adapters_mysql.schema import metadata

SECURITY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "security.md"
SECTION = "## What someone with only the database learns"
_NAME = re.compile(r"`([a-z_]+)\*?`")


def _listed() -> dict[str, set[str]]:
    """The columns each table's rows name (`all` for a row that covers the whole table)."""
    text = SECURITY_PAGE.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :].split("\n## ", 1)[0]
    listed: dict[str, set[str]] = {}
    table = ""
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("table", "---"):
            continue
        if cells[0]:
            table = _NAME.findall(cells[0])[0]
        columns = set(_NAME.findall(cells[1])) | ({"all"} if cells[1] == "all" else set())
        listed.setdefault(table, set()).update(columns)
    return listed


def test_every_table_and_column_of_the_schema_is_in_the_list_of_what_the_database_reveals() -> None:
    listed = _listed()

    missing = {}
    for table in metadata.sorted_tables:
        named = listed.get(table.name, set())
        unnamed = [column.name for column in table.columns if column.name not in named and "all" not in named]
        if not named or unnamed:
            missing[table.name] = unnamed
    assert missing == {}
    assert "alembic_version" in listed
