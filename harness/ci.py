"""Whether this run is CI's, where a test that needs a server must fail rather than skip."""

from __future__ import annotations

import os


def in_ci() -> bool:
    """True when running under CI (CI=true), where MySQL tests must not skip."""
    return os.environ.get("CI", "").strip().lower() == "true"
