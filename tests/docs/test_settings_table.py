"""docs/operations.md's settings table is the declaration's (`memorybank.settings.settings_table`), word for word."""

from __future__ import annotations

import re

from harness.served import REPO_ROOT
from memorybank.settings import DECLARED, settings_table

_TABLE = re.compile(
    r"<!-- settings-table: generated from memorybank.settings.DECLARED -->\n(.*?)<!-- settings-table: end -->", re.S
)


def test_the_operations_page_shows_the_declared_settings() -> None:
    page = (REPO_ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    shown = _TABLE.search(page)

    assert shown is not None, "docs/operations.md lost its settings-table markers"
    assert shown.group(1) == settings_table(), "regenerate the table: print(memorybank.settings.settings_table())"


def test_the_table_has_a_row_per_declared_setting() -> None:
    rows = [line for line in settings_table().splitlines() if line.startswith("| `MEMORYBANK_")]

    assert [row.split("`")[1] for row in rows] == [setting.variable for setting in DECLARED]
