"""A rate limit and the state of its window: the values the `RateLimiter` port counts with.

Apart from the policy (`memorybank_core.rate_limits`) so that the port can name them without the
policy, which itself uses the port, importing back.
"""

from __future__ import annotations

import math
import re

import attrs

from memorybank_core.errors import InvalidInputError

UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
"""The window units a limit is written in, with their seconds."""
_LIMIT = re.compile(r"^\s*(\d{1,9})\s*/\s*(\d{1,6}\s*)?(second|minute|hour|day)s?\s*$")


@attrs.frozen
class RateLimit:
    """At most `amount` requests in any `seconds`-long window (a moving window)."""

    amount: int = attrs.field(validator=attrs.validators.ge(1))
    seconds: int = attrs.field(validator=attrs.validators.ge(1))

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """`120/minute`, `10/second`, `1000/hour`, `5000/day` or with a count of units: `30/5 minutes`.

        Raises:
            InvalidInputError: ("rate_limit") anything else, or a zero amount or window.
        """
        match = _LIMIT.match(text)
        if match is None or int(match.group(1)) < 1 or (match.group(2) and int(match.group(2)) < 1):
            raise InvalidInputError(
                "rate_limit", f"must look like 120/minute (per second, minute, hour or day), not {text!r}"
            )
        multiple = int(match.group(2)) if match.group(2) else 1
        return cls(amount=int(match.group(1)), seconds=multiple * UNITS[match.group(3)])

    def describe(self) -> str:
        """The limit in words, e.g. `120 per 60 seconds`."""
        return f"{self.amount} per {self.seconds} seconds"


@attrs.frozen(kw_only=True)
class WindowState:
    """A limit's window after one request was counted (or refused)."""

    allowed: bool
    limit: int
    window_seconds: int
    remaining: int
    reset_seconds: float
    """Seconds until a slot frees up (the oldest counted request leaves the window)."""

    def retry_after(self) -> int:
        """Whole seconds to wait before a refused request can succeed: at least 1."""
        return max(1, math.ceil(self.reset_seconds))
