"""The save path's secret screen as an operator sets it (ADR 0024), in one place.

`--secret-screen refuse|off` (on `serve` and `import`), else `MEMORYBANK_SECRET_SCREEN`, else
`refuse`. `refuse` screens every save (REST, the MCP rail, the panel, `memorybank mcp`,
`memorybank import`) with `adapters_secrets.DetectSecretsScreen`; `off` screens nothing.
Pure functions of their arguments: nothing is read at import time.
"""

from __future__ import annotations

from collections.abc import Mapping

from memorybank_core import InvalidInputError, SecretScreen

SECRET_SCREEN_ENV = "MEMORYBANK_SECRET_SCREEN"  # noqa: S105 - the variable's name, not a secret
"""The environment variable choosing the screen when `--secret-screen` is not given."""

REFUSE = "refuse"
"""Refuse a save holding what looks like a credential (the default)."""
OFF = "off"
"""Screen nothing: an operator's deliberate choice, said at start-up."""
CHOICES = (REFUSE, OFF)

#: What `memorybank import --on-secret` does with a line holding a credential: leave it out and import the rest,
#: or import nothing at all.
SKIP_LINE = "skip"
REFUSE_FILE = "refuse"
ON_SECRET_CHOICES = (SKIP_LINE, REFUSE_FILE)


def choose_secret_screen(cli_value: str | None, env: Mapping[str, str]) -> str:
    """`--secret-screen`, else `MEMORYBANK_SECRET_SCREEN`, else `refuse`.

    Raises:
        InvalidInputError: ("secret-screen") neither `refuse` nor `off`.
    """
    raw = cli_value if cli_value is not None else env.get(SECRET_SCREEN_ENV, "").strip() or REFUSE
    mode = raw.strip().lower()
    if mode not in CHOICES:
        raise InvalidInputError("secret-screen", f"must be {REFUSE} or {OFF}, not {raw!r}")
    return mode


def build_secret_screen(mode: str) -> SecretScreen | None:
    """The screen for `mode` (a value `choose_secret_screen` returned); None when it is off."""
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
