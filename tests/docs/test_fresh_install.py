"""The README's set-up commands, run as written in a fresh virtualenv: they really are all the set-up.

Slow (pip installs every dependency), so it is its own tier: `python -m pytest -m install`, run by `.ci/run`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.served import REPO_ROOT, run_shell
from tests.docs.test_readme_quickstart import bash_blocks

pytestmark = pytest.mark.install

INSTALL_TIMEOUT_SECONDS = 900


def _bash(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_shell(command, cwd=REPO_ROOT, env=env, timeout=INSTALL_TIMEOUT_SECONDS)


def test_the_quickstart_then_the_develop_set_up_work_in_a_fresh_virtualenv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # A shell without this test run's virtualenv: only the system Python, as on a fresh machine.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if ".venv" not in p)
    env = {"PATH": path, "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    quickstart = bash_blocks("Quickstart")[0].splitlines()[0].replace(".venv", str(venv))
    develop = bash_blocks("Develop")[0].splitlines()[0].replace(".venv", str(venv))

    installed = _bash(quickstart, env)
    assert installed.returncode == 0, installed.stderr[-3000:]
    works = _bash(
        f". {venv}/bin/activate && memorybank --help >/dev/null && memorybank prompt >/dev/null"
        f" && memorybank token create --db sqlite:///{tmp_path}/bank.sqlite3 | tail -n 1"
        " && python -c 'import adapters_mcp.http_transport, uvicorn'"
        # The quickstart's server searches hybrid: its install brings the model, checked and loadable.
        " && python -c 'from adapters_embedding import default_embedder; default_embedder()'",
        env,
    )
    assert works.returncode == 0, works.stderr[-3000:]
    assert works.stdout.startswith("mbk_")

    developed = _bash(develop, env)
    assert developed.returncode == 0, developed.stderr[-3000:]
    collected = _bash(f". {venv}/bin/activate && python -m pytest --collect-only -q -p no:cacheprovider", env)
    assert collected.returncode == 0, (collected.stdout[-3000:], collected.stderr[-3000:])
