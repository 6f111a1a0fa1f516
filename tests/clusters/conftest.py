"""The cluster tier (`-m cluster`): private Galera and Spider clusters started by the tests themselves.

Without root, `mariadbd`, `galera-4` or `mariadb-plugin-spider`, these tests skip with a loud
reason, except under CI=true, where they fail: CI never silently skips a cluster test.
"""

from __future__ import annotations

import pytest

from harness.clusters import require_cluster_tools
from tests.sql.conftest import statements  # noqa: F401 - the statement capture, for the Spider head too


@pytest.fixture(autouse=True)
def _cluster_tools() -> None:
    require_cluster_tools()
