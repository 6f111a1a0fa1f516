"""The cluster tier (`-m cluster`): private Galera and Spider clusters started by the tests themselves.

These tests need root (the nodes run as the `mysql` user), `mariadbd`, `galera-4` and
`mariadb-plugin-spider`. Without them the tests skip with a loud reason, except under CI=true,
where they fail: CI never silently skips a cluster test.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.clusters.nodes import GALERA_PROVIDER, SPIDER_PLUGIN
from tests.mysql_server import in_ci


def _missing() -> list[str]:
    missing = [tool for tool in ("mariadbd", "mariadb-install-db", "rsync") if shutil.which(tool) is None]
    if not Path(GALERA_PROVIDER).is_file():
        missing.append(f"galera-4 ({GALERA_PROVIDER})")
    if not Path(SPIDER_PLUGIN).is_file():
        missing.append(f"mariadb-plugin-spider ({SPIDER_PLUGIN})")
    if os.geteuid() != 0:
        missing.append("root (the nodes run as the mysql user)")
    return missing


@pytest.fixture(autouse=True)
def _cluster_tools() -> None:
    missing = _missing()
    if not missing:
        return
    message = f"the cluster tier needs {', '.join(missing)}"
    if in_ci():
        pytest.fail(f"{message}, and under CI=true cluster tests must run, not skip", pytrace=False)
    pytest.skip(f"CLUSTER TESTS SKIPPED: {message}")
