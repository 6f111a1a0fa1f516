"""docs/storage.md lists every migration, in the order it runs, with its script's own summary (issue 28, finding 6)."""

from __future__ import annotations

import re

from alembic.script import ScriptDirectory

from adapters_mysql.revisions import alembic_config, revisions_after
from harness.served import REPO_ROOT

_TABLE = re.compile(
    r"<!-- revisions-table: generated from migrations/versions -->\n(.*?)<!-- revisions-table: end -->", re.S
)


def _expected_table() -> str:
    scripts = reversed(list(ScriptDirectory.from_config(alembic_config()).walk_revisions()))
    rows = "".join(f"| {script.revision} | {(script.doc or '').strip().splitlines()[0]} |\n" for script in scripts)
    return "| Revision | What it does |\n|---|---|\n" + rows


def test_the_storage_page_lists_every_revision_in_the_order_it_runs() -> None:
    page = (REPO_ROOT / "docs" / "storage.md").read_text(encoding="utf-8")
    shown = _TABLE.search(page)

    assert shown is not None, "docs/storage.md lost its revisions-table markers"
    assert shown.group(1) == _expected_table()
    listed = [line.split("|")[1].strip() for line in shown.group(1).splitlines()[2:]]
    assert tuple(listed) == revisions_after(None)
