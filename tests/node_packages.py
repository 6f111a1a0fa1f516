"""Node and pinned npm packages for the tiers that run them; fails under CI=true, else skips, when absent."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest


def require_node(*, tier: str, installed: Sequence[Path], where: Path, install: str) -> str:
    """The node executable, once every file in `installed` exists (the packages `install` puts in `where`)."""
    executable = shutil.which("node")
    problem = None
    if executable is None:
        problem = "node is not on PATH"
    elif not all(path.exists() for path in installed):
        problem = f"the pinned packages are not installed in {where}"
    if problem is not None:
        reason = f"{tier} TESTS NOT RUN: {problem}; run {install} (needs Node 20+ and npm)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    assert executable is not None
    return executable
