"""The save path's secret screen as an operator sets it (ADR 0024), in one place.

`--secret-screen refuse|off` (on `serve` and `import`), else `MEMORYBANK_SECRET_SCREEN`, else
`refuse` (resolved by `memorybank.settings`). `refuse` screens every save (REST, the MCP rail, the
panel, `memorybank mcp`, `memorybank import`) with `adapters_secrets.DetectSecretsScreen`; `off` screens nothing.
"""

from __future__ import annotations

# `import --on-secret`'s choices are the import's own (memorybank.portability); the options read them here.
from memorybank.portability import ON_SECRET_CHOICES, REFUSE_FILE, SKIP_LINE
from memorybank.settings import OFF, REFUSE, SECRET_SCREEN_CHOICES, SECRET_SCREEN_ENV
from memorybank_core import SecretScreen

CHOICES = SECRET_SCREEN_CHOICES
__all__ = [
    "CHOICES",
    "OFF",
    "ON_SECRET_CHOICES",
    "REFUSE",
    "REFUSE_FILE",
    "SECRET_SCREEN_ENV",
    "SKIP_LINE",
    "build_secret_screen",
    "describe",
]


def build_secret_screen(mode: str) -> SecretScreen | None:
    """The screen for `mode` (`Settings.secret_screen`); None when it is off."""
    if mode == OFF:
        return None
    from adapters_secrets import DetectSecretsScreen  # detect-secrets compiles its patterns at import

    return DetectSecretsScreen()


def describe(mode: str) -> str:
    """One start-up line saying what the screen does."""
    if mode == OFF:
        return (
            f"secret screen off: saves are not checked for credentials ({SECRET_SCREEN_ENV}=off or --secret-screen off)"
        )
    return "secret screen on: saves holding credentials are refused (422 secret_detected)"
